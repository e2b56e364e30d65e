import { randomUUID } from "node:crypto";
import { type Job, Queue, Worker } from "bullmq";
import { type Backlog, type Contender, enqueueBatches, loadBatches, timed } from "./contender.js";
import type { BenchTask } from "./workload.js";

export interface BullmqSetup {
  host: string;
  port: number;
  queueName: string;
  /** Worker concurrency (BullMQ has no batch claim outside its paid edition). */
  concurrency: number;
}

/**
 * BullMQ with its defaults (completed jobs kept, events stream on), given the same ids, so its
 * enqueue is idempotent by id like leaseq's, and the same priorities (shifted: 1 is its most urgent).
 */
function toJob(task: BenchTask) {
  return { name: task.type, data: task.payload, opts: { jobId: task.id, priority: task.priority + 1 } };
}

function connection(setup: Pick<BullmqSetup, "host" | "port">) {
  return { host: setup.host, port: setup.port, maxRetriesPerRequest: null };
}

export async function bullmqContender(setup: BullmqSetup): Promise<Contender> {
  const queue = new Queue(setup.queueName, { connection: connection(setup) });
  await queue.waitUntilReady();
  let completed = 0;
  let expected = Number.POSITIVE_INFINITY;
  let finish: (() => void) | undefined;
  let fail: ((error: Error) => void) | undefined;
  // JSON parsing of the payload is done by BullMQ itself when it builds the Job.
  const worker = new Worker(setup.queueName, async () => undefined, {
    connection: connection(setup),
    concurrency: setup.concurrency,
    autorun: false,
  });
  worker.on("completed", () => {
    completed++;
    if (completed >= expected) finish?.();
  });
  worker.on("failed", (job: Job | undefined, error: Error) =>
    fail?.(new Error(`bullmq: job ${job?.id} failed`, { cause: error })),
  );
  worker.on("error", (error) => fail?.(error));
  await worker.waitUntilReady();
  let enqueued = 0;
  return {
    async enqueue(tasks) {
      await enqueueBatches(tasks, (batch) => queue.addBulk(batch.map(toJob)));
      enqueued += tasks.length;
    },
    async drain() {
      const done = new Promise<void>((resolve, reject) => {
        finish = resolve;
        fail = reject;
      });
      expected = enqueued;
      if (completed >= expected) finish?.();
      void worker.run().catch((error: Error) => fail?.(error));
      await done;
      return completed;
    },
    async close() {
      await worker.close();
      await queue.close();
    },
  };
}

/**
 * BullMQ holding a backlog. A sample times `count` consecutive job fetches (its claim is one job
 * per moveToActive); the jobs then go back to waiting, untimed, so the backlog stays put.
 */
export async function bullmqBacklog(setup: Omit<BullmqSetup, "concurrency">): Promise<Backlog> {
  const queue = new Queue(setup.queueName, { connection: connection(setup) });
  const worker = new Worker(setup.queueName, null, { connection: connection(setup), autorun: false });
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
  const token = randomUUID();
  return {
    async load(tasks) {
      await loadBatches(tasks, (batch) => queue.addBulk(batch.map(toJob)));
    },
    async claimSample(count) {
      const jobs: Job[] = [];
      const ms = await timed(async () => {
        for (let i = 0; i < count; i++) {
          const job = await worker.getNextJob(token, { block: false });
          if (job) jobs.push(job);
        }
      });
      if (jobs.length !== count) throw new Error(`bullmq: fetched ${jobs.length} of ${count}`);
      await Promise.all(jobs.map((job) => job.moveToWait(token)));
      return ms;
    },
    async close() {
      await worker.close(true);
      await queue.close();
    },
  };
}
