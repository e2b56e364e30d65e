// Free slots listen (docs/wake-ups.md): a worker invocation running long tasks with a slot free
// takes wake-ups from the wake queue itself, so a short task enqueued while the event source may
// start no other invocation (its maximum concurrency busy) starts at once in that free slot, not when
// a long task ends. A wake-up for types it has no room left for is given back for another worker.
// Real SQS stand-in (its event source mapping of concurrency 1, the SDK's long polls), the worker's
// own handler, both stores.
import { Logger } from "@aws-lambda-powertools/logger";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { functionSqsClient, sqsWakeSender } from "../../functions/wake.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import { captureStdout, functionEnv, lambdaContext } from "../helpers/events.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(adapters)("a running worker's free slot, over $name", (adapter) => {
  const { open } = storeFixture(adapter);
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });

  it("takes the wake-up of a short task enqueued while long tasks run and the event source is at its concurrency, and gives back one for a type it has no room for", async () => {
    const name = uniqueQueueName("listen");
    const starts = new Map<string, number>();
    let worker: ReturnType<typeof createWorker> | undefined;
    const sqs = new LocalSqs((event: SQSEvent) => worker?.(event, lambdaContext()) as Promise<SQSBatchResponse>, {
      queueName: `${name}-wake`,
      batchSize: 1,
      concurrency: 1,
      visibilityTimeoutMs: 1_800_000,
    });
    await sqs.listen();
    cleanups.push(() => sqs.close());
    worker = createWorker({
      env: functionEnv(adapter, name, {
        LEASEQ_WAKE_QUEUE_URL: sqs.queueUrl,
        LEASEQ_SQS_ENDPOINT: sqs.endpoint,
        LEASEQ_LINGER_MS: "200",
      }),
      logger: new Logger({ serviceName: "leaseq-worker", logLevel: "INFO" }),
      tasks: {
        concurrency: 3,
        types: {
          long: {
            concurrency: 2,
            handler: async (task) => {
              starts.set(task.id, Date.now());
              await sleep(3_000);
            },
          },
          short: {
            handler: async (task) => {
              starts.set(task.id, Date.now());
            },
          },
        },
      },
    });
    cleanups.push(() => worker?.close() ?? Promise.resolve());
    const queue = new Queue(await open(), { name });
    cleanups.push(() => queue.admin.drop({ confirm: name }));
    const waker = sqsWakeSender(sqs.queueUrl, functionSqsClient(sqs.endpoint));

    const { lines } = await captureStdout(async () => {
      await queue.enqueue(
        [
          { id: "long-1", type: "long" },
          { id: "long-2", type: "long" },
        ],
        { now: Date.now() },
      );
      sqs.start();
      cleanups.push(() => sqs.stop());
      sqs.send('{"leaseq":"wake"}');
      while (starts.size < 2) await sleep(20);
      // Past the linger: the worker has handed the queue back to wake-ups; its third slot listens.
      await sleep(600);

      // A wake-up for the type whose room it used up: not its to take.
      await waker.wake(Date.now(), Date.now(), ["long"]);
      await sleep(300);
      expect(sqs.stats().visible, "the wake-up for long tasks, given back").toBe(1);

      // A short task, enqueued as a producer does (its wake-up sent): the mapping's only poller is
      // busy with the running invocation, so only the free slot can start it now.
      const sentAt = Date.now();
      const { wakeAtMs } = await queue.enqueueAndWake([{ id: "short-1", type: "short" }], { now: sentAt });
      expect(wakeAtMs, "the enqueue arranges a wake-up").toBeDefined();
      await waker.wake(wakeAtMs ?? sentAt, Date.now());
      while (!starts.has("short-1") && Date.now() - sentAt < 5_000) await sleep(10);
      expect(starts.has("short-1"), "the short task started").toBe(true);
      // Both long tasks still run: it did not wait for a slot to free.
      expect(starts.get("short-1")).toBeLessThan((starts.get("long-1") ?? 0) + 3_000);
      await sqs.stop();
    });
    const invocations = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.message === "worker invocation");
    // The first invocation ran all three and took the short task's wake-up (the long one's it gave
    // back, above; it may take that one too once a long task ended and freed a slot for the type).
    expect(invocations[0]).toMatchObject({ claimed: 3, done: 3 });
    expect(invocations[0].wakeUpsTaken).toBeGreaterThanOrEqual(1);
    expect(await queue.admin.inspect("short-1")).toMatchObject({ state: "done", attempts: 1 });
  }, 30_000);
});
