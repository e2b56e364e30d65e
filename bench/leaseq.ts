import { Queue } from "../shared/queue.js";
import type { Store } from "../shared/store.js";
import { type Backlog, type Contender, enqueueBatches, loadBatches, timed } from "./contender.js";
import type { BenchTask } from "./workload.js";

export interface LeaseqSetup {
  /** Opens one store: one per consumer and one for the producer, as separate Lambdas would. */
  openStore: () => Promise<Store> | Store;
  queueName: string;
  batchSize: number;
  consumers: number;
  /** Spread the tasks over this many groups (task i in group i mod groups), concurrency 1 each. */
  groups?: number;
  /** With `groups`: the groups are ordered (docs/groups.md) instead of concurrency 1 alone. */
  ordered?: boolean;
  /** Every task carries a dedupe key of its own (`d:<id>`) for this many ms (docs/flow-control.md). */
  dedupeTtlMs?: number;
}

function toInput(task: BenchTask, group?: string, dedupeTtlMs?: number) {
  return {
    id: task.id,
    type: task.type,
    priority: task.priority,
    payload: task.payload,
    ...(group ? { group } : {}),
    ...(dedupeTtlMs ? { dedupe: { key: `d:${task.id}`, ttlMs: dedupeTtlMs } } : {}),
  };
}

async function openQueue(setup: Pick<LeaseqSetup, "openStore" | "queueName" | "groups" | "ordered">) {
  const store = await setup.openStore();
  const queue = new Queue(store, {
    name: setup.queueName,
    settings: setup.groups ? { groups: setup.ordered ? { ordered: true } : { concurrency: 1 } } : undefined,
  });
  // The group policy is in the queue's config before the first task, as a worker's cold start does.
  if (setup.groups) await queue.configure();
  // Connects and loads the scripts before any measurement starts.
  await queue.stats({ now: Date.now() });
  return { store, queue };
}

/** leaseq as its worker runs it: claim a batch, run each handler in order, ack the batch in one call. */
export async function leaseqContender(setup: LeaseqSetup): Promise<Contender> {
  const producer = await openQueue(setup);
  const consumers = await Promise.all(
    Array.from({ length: setup.consumers }, () => openQueue({ ...setup, groups: undefined })),
  );
  const groupOf = (index: number) => (setup.groups ? `g${index % setup.groups}` : undefined);
  return {
    async enqueue(tasks) {
      let index = 0;
      await enqueueBatches(tasks, async (batch) => {
        const inputs = batch.map((task) => toInput(task, groupOf(index++), setup.dedupeTtlMs));
        const results = await producer.queue.enqueue(inputs, { now: Date.now() });
        if (results.some((result) => result.status !== "ok")) throw new Error("leaseq: an enqueue was refused");
      });
    },
    async drain() {
      const counts = await Promise.all(consumers.map(({ queue }) => drainLoop(queue, setup.batchSize)));
      return counts.reduce((a, b) => a + b, 0);
    },
    async close() {
      await Promise.all([producer, ...consumers].map(({ store }) => store.close()));
    },
  };
}

async function drainLoop(queue: Queue, batchSize: number): Promise<number> {
  let acked = 0;
  for (;;) {
    const claimed = await queue.claim({ count: batchSize, now: Date.now() });
    if (claimed.length === 0) return acked;
    for (const task of claimed) JSON.parse(task.payload);
    const results = await queue.ack(claimed, { now: Date.now() });
    for (const result of results) {
      if (result.status !== "ok") throw new Error(`leaseq: ack of ${result.id} answered ${result.status}`);
    }
    acked += claimed.length;
  }
}

/** A leaseq queue holding a backlog; claims are given back with `release` (rank kept). */
export async function leaseqBacklog(setup: Pick<LeaseqSetup, "openStore" | "queueName">): Promise<Backlog> {
  const { store, queue } = await openQueue(setup);
  return {
    async load(tasks) {
      await loadBatches(tasks, (batch) =>
        queue.enqueue(
          batch.map((task) => toInput(task)),
          { now: Date.now() },
        ),
      );
    },
    async claimSample(count) {
      let claimed: Awaited<ReturnType<Queue["claim"]>> = [];
      const ms = await timed(async () => {
        claimed = await queue.claim({ count, now: Date.now() });
      });
      if (claimed.length !== count) throw new Error(`leaseq: claimed ${claimed.length} of ${count}`);
      await queue.release(claimed, { now: Date.now() });
      return ms;
    },
    memoryKeys: () => ({ "task hash": queue.keys.task, "ready zset": queue.keys.ready }),
    close: () => store.close(),
  };
}
