import { type BenchTask, chunks } from "./workload.js";

/** Producers enqueue in batches of this many tasks in every system (BullMQ: addBulk of 100). */
export const ENQUEUE_BATCH = 100;
/** The bulk loader for the backlog measurements: batches of 1000, this many calls in flight. */
export const LOAD_BATCH = 1000;
export const LOAD_IN_FLIGHT = 8;

/** One system under test, set up for one throughput round (connections already open). */
export interface Contender {
  /** Enqueues every task from one producer, `ENQUEUE_BATCH` per call. */
  enqueue(tasks: BenchTask[]): Promise<void>;
  /** Claim → no-op handler (JSON payload parsed) → ack until drained; resolves to the tasks acked. */
  drain(): Promise<number>;
  close(): Promise<void>;
}

/** One system holding a backlog, for memory and claim latency. */
export interface Backlog {
  /** Adds tasks as fast as the system allows (batches of `LOAD_BATCH`, pipelined). */
  load(tasks: BenchTask[]): Promise<void>;
  /** Times one claim of `count` tasks (ms), then puts them back, untimed, so the backlog stays put. */
  claimSample(count: number): Promise<number>;
  /** The few keys that hold the system's tasks, by role, for a per-structure memory figure. */
  memoryKeys?(): Record<string, string>;
  close(): Promise<void>;
}

/** Runs `work` over `items` with at most `limit` calls in flight (pipelined on one connection). */
export async function inFlight<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]);
  });
  await Promise.all(lanes);
}

/** Milliseconds `work` took, by the monotonic clock. */
export async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** A producer's enqueue in every system: `add` on each batch of `ENQUEUE_BATCH` tasks, one call after the other. */
export async function enqueueBatches(tasks: BenchTask[], add: (batch: BenchTask[]) => Promise<unknown>): Promise<void> {
  for (const batch of chunks(tasks, ENQUEUE_BATCH)) await add(batch);
}

/** The bulk loader of a backlog: `add` on each batch of `LOAD_BATCH` tasks, `LOAD_IN_FLIGHT` calls in flight. */
export async function loadBatches(tasks: BenchTask[], add: (batch: BenchTask[]) => Promise<unknown>): Promise<void> {
  await inFlight(chunks(tasks, LOAD_BATCH), LOAD_IN_FLIGHT, async (batch) => {
    await add(batch);
  });
}
