// bee-queue (a Redis job queue: LPUSH/BRPOPLPUSH lists, one job per fetch) as a contender of the
// instructions count (bench/instructions.ts), set up as bench/bullmq.ts sets up BullMQ: its defaults
// (finished jobs kept, an event published per job), the same ids, one producer and one worker at a
// concurrency. It has no priorities: the tasks' priorities are dropped.
import BeeQueue from "bee-queue";
import { type Contender, enqueueBatches } from "./contender.js";

export interface BeeQueueSetup {
  host: string;
  port: number;
  queueName: string;
  concurrency: number;
}

export async function beeQueueContender(setup: BeeQueueSetup): Promise<Contender> {
  const redis = { host: setup.host, port: setup.port };
  // The producer neither works nor listens to events (BullMQ's Queue does neither).
  const producer = new BeeQueue(setup.queueName, { redis, isWorker: false, getEvents: false, storeJobs: false });
  // The worker publishes its events (the default) but does not subscribe to them.
  const worker = new BeeQueue(setup.queueName, { redis, getEvents: false, storeJobs: false });
  let failure: Error | undefined;
  let fail: ((error: Error) => void) | undefined;
  const onError = (error: Error) => {
    failure ??= error;
    fail?.(error);
  };
  producer.on("error", onError);
  worker.on("error", onError);
  try {
    await Promise.all([producer.ready(), worker.ready()]);
  } catch (error) {
    await Promise.allSettled([producer.close(), worker.close()]);
    throw error;
  }
  let enqueued = 0;
  return {
    async enqueue(tasks) {
      await enqueueBatches(tasks, async (batch) => {
        const jobs = batch.map((task) => producer.createJob(task.payload).setId(task.id));
        const errors = await producer.saveAll(jobs);
        if (errors.size > 0) throw new Error(`bee-queue: ${errors.size} jobs not saved`, { cause: [...errors][0][1] });
        if (jobs.some((job) => job.id === null)) throw new Error("bee-queue: a job id was already taken");
      });
      enqueued += tasks.length;
    },
    async drain() {
      let succeeded = 0;
      await new Promise<void>((resolve, reject) => {
        if (failure) return reject(failure);
        fail = reject;
        worker.on("succeeded", () => {
          if (++succeeded >= enqueued) resolve();
        });
        worker.on("failed", (job, error) => reject(new Error(`bee-queue: job ${job.id} failed`, { cause: error })));
        // The payload arrives parsed: bee-queue parses the job's JSON when it fetches it.
        worker.process(setup.concurrency, async () => undefined);
      });
      return succeeded;
    },
    async close() {
      await Promise.allSettled([worker.close(), producer.close()]);
    },
  };
}
