// groupmq (a per-group FIFO queue on Redis: one job of a group at a time) as a contender of the
// instructions count (bench/instructions.ts): its defaults (completed jobs not kept, 3 attempts, its
// scheduler and stalled checks on), the same ids and payloads, task i in group i mod `groups`, one
// producer enqueueing batches of ENQUEUE_BATCH (its autoBatch: one enqueue-batch script per batch) and
// one Worker at a concurrency. It has no priorities: the tasks' priorities are dropped.
import { Queue, Worker } from "groupmq";
import { Redis } from "ioredis";
import { type Contender, ENQUEUE_BATCH, enqueueBatches } from "./contender.js";

export interface GroupmqSetup {
  url: string;
  queueName: string;
  groups: number;
  concurrency: number;
}

export async function groupmqContender(setup: GroupmqSetup): Promise<Contender> {
  const redis = new Redis(setup.url, { maxRetriesPerRequest: null });
  // A batch is sent when it holds ENQUEUE_BATCH jobs; the timer only flushes a last, short one.
  const queue = new Queue({ redis, namespace: setup.queueName, autoBatch: { size: ENQUEUE_BATCH, maxWaitMs: 5 } });
  try {
    await redis.ping();
  } catch (error) {
    await queue.close().catch(() => undefined);
    throw error;
  }
  let worker: Worker | undefined;
  let enqueued = 0;
  return {
    async enqueue(tasks) {
      let index = 0;
      await enqueueBatches(tasks, async (batch) => {
        await Promise.all(
          batch.map((task) => queue.add({ groupId: `g${index++ % setup.groups}`, data: task.payload, jobId: task.id })),
        );
      });
      enqueued += tasks.length;
    },
    async drain() {
      let completed = 0;
      await new Promise<void>((resolve, reject) => {
        // A Worker starts fetching when it is made (its blocking connection is opened here, counted).
        worker = new Worker({ queue, concurrency: setup.concurrency, handler: async () => undefined });
        worker.on("completed", () => {
          if (++completed >= enqueued) resolve();
        });
        worker.on("failed", (job) => reject(new Error(`groupmq: job ${job.id} failed: ${job.failedReason}`)));
        worker.on("error", reject);
      });
      return completed;
    },
    async close() {
      // No job is in progress once drained: close at once, without the graceful wait.
      await worker?.close(0);
      await queue.close();
    },
  };
}
