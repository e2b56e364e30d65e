// Tasks sent through SQS, through the local stack as on AWS (the task queue read by the intake,
// the wake queue starting the workers): order per group from the producer's send with a FIFO task
// queue, and priority reaching a task sent while every worker drains a backlog.
import type { SQSClient } from "@aws-sdk/client-sqs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { orderedHooks, orderStack, outOfOrder, sendOrdered } from "../../bench/order.js";
import type { Stack } from "../../dev/stack.js";
import { createProducer } from "../../functions/producer.js";
import { defineTasks } from "../../functions/tasks.js";
import { functionSqsClient } from "../../functions/wake.js";
import { Queue } from "../../shared/queue.js";
import { uniqueQueueName } from "../helpers/stores.js";

vi.setConfig({ testTimeout: 120_000 });

let stack: Stack | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await stack?.stopWork();
  await stack?.close();
  stack = undefined;
});

async function start(tasks: ReturnType<typeof defineTasks>, fifo: boolean): Promise<Stack> {
  stack = await orderStack(uniqueQueueName("intake"), tasks, fifo);
  stack.run();
  return stack;
}

function sqsClient(running: Stack): SQSClient {
  return functionSqsClient(running.sqs.endpoint);
}

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("tasks sent through SQS", () => {
  it("with a FIFO task queue, 5 ordered groups × 100 tasks sent one per message by 4 concurrent producers run in their send order", async () => {
    const runs: Array<{ group: string; seq: number }> = [];
    const running = await start(orderedHooks(runs), true);
    const client = sqsClient(running);
    await sendOrdered(running.sqs.queueUrl, client);
    await until(() => runs.length >= 500, "500 runs");
    client.destroy();
    expect(runs).toHaveLength(500);
    expect(outOfOrder(runs)).toBe(0);
    expect(running.sqs.stats().deadLettered).toBe(0);
  });

  it("at priority −10 while 4 workers (or more) drain 2,000 waiting tasks, are claimed before every lower-priority task still READY when they were sent", async () => {
    const started: string[] = [];
    /**
     * Each task's claim in the store's own order: the generation its lease token carries
     * ("<rank>.<generation>"), one per claim, counted up by the store. Callers' clocks would not do:
     * two workers' claims are stamped before they reach Redis, in either order.
     */
    const claimedAt = new Map<string, number>();
    const claim = Queue.prototype.claimOrNextDue;
    vi.spyOn(Queue.prototype, "claimOrNextDue").mockImplementation(async function (this: Queue, options) {
      const outcome = await claim.call(this, options);
      for (const task of outcome.tasks) claimedAt.set(task.id, Number(task.token.split(".")[1]));
      return outcome;
    });
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const tasks = defineTasks({
      types: {
        thumbnail: {
          leaseMs: 30_000,
          handler: async (task) => {
            started.push(task.id);
            // Each worker holds its first task until the paid ones are sent: all four are busy.
            await gate;
          },
        },
      },
    });
    const running = await start(tasks, false);
    const backlog = Array.from({ length: 2_000 }, (_, i) => ({ id: `free-${i}`, type: "thumbnail" }));
    for (let i = 0; i < backlog.length; i += 500) {
      await running.queue.enqueue(backlog.slice(i, i + 500), { now: Date.now() });
    }
    for (let w = 0; w < 4; w++) running.wake.send('{"leaseq":"wake"}');
    // Every worker busy: the 4 woken here, and any drain invocation of the stack's first reclaimer
    // run; no more claims once the count of started tasks stands still.
    await until(() => started.length >= 4, "4 busy workers");
    for (let seen = -1; seen !== started.length; ) {
      seen = started.length;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }

    const client = sqsClient(running);
    const producer = createProducer({ queueUrl: running.sqs.queueUrl, client });
    const paid = Array.from({ length: 20 }, (_, i) => ({ id: `paid-${i}`, type: "thumbnail", priority: -10 }));
    const sentAt = Date.now();
    await producer.send(paid);
    // In Redis, though no worker was free to read SQS.
    await until(
      async () => (await running.queue.admin.inspect("paid-19"))?.state === "ready",
      "the paid tasks in Redis",
      1_000,
    );
    const inRedisMs = Date.now() - sentAt;
    const readyWhenSent = new Set<string>();
    for (let offset = 0; offset < 2_000; offset += 1_000) {
      for (const task of await running.queue.admin.list("ready", { offset, limit: 1_000 })) {
        if (task.id.startsWith("free-")) readyWhenSent.add(task.id);
      }
    }
    expect(readyWhenSent.size, "backlog tasks READY when the paid ones were sent").toBeGreaterThan(1_800);
    open();
    await until(() => paid.every((task) => started.includes(task.id)), "the paid tasks to start");
    client.destroy();
    // Claims take the highest priority first: the last paid claim comes before the first claim of a
    // lower-priority task that was READY at the send. (Starts may interleave: one worker runs its
    // claimed batch of paid tasks in order while another starts the batch it claimed after them.)
    const lastPaidClaim = Math.max(...paid.map((task) => claimedAt.get(task.id) ?? Number.POSITIVE_INFINITY));
    const claimedBefore = [...claimedAt].filter(([id, at]) => readyWhenSent.has(id) && at < lastPaidClaim);
    expect(
      claimedBefore.map(([id]) => id),
      `${claimedBefore.length} lower-priority tasks READY at the send were claimed before a paid one`,
    ).toEqual([]);
    const lastPaid = Math.max(...paid.map((task) => started.indexOf(task.id)));
    const startedBefore = started.slice(0, lastPaid).filter((id) => readyWhenSent.has(id));
    console.log(
      `[priority] ${inRedisMs} ms from the send to Redis; ${startedBefore.length} lower-priority tasks started (on other workers) before the last paid one`,
    );
    // In Redis at the intake's first receive, not at an SQS retry (30 s visibility) or a reclaimer run.
    expect(inRedisMs, "ms from the send to the last paid task in Redis").toBeLessThan(5_000);
  });
});
