import { Logger } from "@aws-lambda-powertools/logger";
import { describe, expect, it } from "vitest";
import { PermanentError, type TaskDefinitions } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import { captureStdout, functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { assertConsistent, taskFields } from "../helpers/invariants.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const quick = { baseMs: 50, maxMs: 100 };

describe.each(adapters)("worker over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);

  async function setup(registry: TaskDefinitions, extraEnv: Record<string, string> = {}) {
    const name = uniqueQueueName("w");
    const store = await open();
    const queue = new Queue(store, { name });
    const handler = createWorker({
      env: functionEnv(adapter, name, extraEnv),
      tasks: registry,
      logger: new Logger({ serviceName: "test-worker" }),
    });
    return { queue, handler };
  }

  it("enqueues the tasks of an SQS batch and runs them to DONE; a redelivery creates no duplicate", async () => {
    const ran: string[] = [];
    const { queue, handler } = await setup({
      ordered: false,
      types: { echo: { leaseMs: 5_000, maxAttempts: 3, backoff: quick, handler: (t) => void ran.push(t.id) } },
    });
    const record = sqsRecord(
      {
        tasks: [
          { type: "echo", payload: { n: 1 } },
          { type: "echo", priority: -1 },
        ],
      },
      "msg-1",
    );
    const { result, lines } = await captureStdout(() => handler(sqsEvent(record, sqsRecord({})), lambdaContext()));
    expect(result).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual(["msg-1-1", "msg-1-0"]);
    expect((await queue.admin.inspect("msg-1-0"))?.state).toBe("done");
    const log = JSON.parse(lines.find((l) => l.includes("worker invocation")) ?? "{}");
    expect(log).toMatchObject({ records: 2, enqueued: 2, claimed: 2, done: 2, retried: 0, failed: 0, released: 0 });

    // SQS delivers the same message again: same derived ids, nothing new.
    const again = await captureStdout(() => handler(sqsEvent(record), lambdaContext()));
    expect(JSON.parse(again.lines.find((l) => l.includes("worker invocation")) ?? "{}")).toMatchObject({
      enqueued: 0,
      duplicates: 2,
      claimed: 0,
    });
    expect(ran).toHaveLength(2);
    expect(await taskFields(redis, queue)).toHaveLength(2);
  });

  it("publishes each run's queue wait and run time per type as EMF, one value per run", async () => {
    const { queue, handler } = await setup({
      types: {
        echo: { leaseMs: 5_000, handler: () => {} },
        slow: { leaseMs: 5_000, handler: () => new Promise((resolve) => setTimeout(resolve, 300)) },
      },
    });
    // Two echo tasks waited 4 s READY before this invocation; the slow one was enqueued now.
    await queue.enqueue(
      [
        { id: "e1", type: "echo" },
        { id: "e2", type: "echo" },
      ],
      { now: Date.now() - 4_000 },
    );
    await queue.enqueue([{ id: "s1", type: "slow" }], { now: Date.now() });
    const { lines } = await captureStdout(() => handler({ leaseq: "drain" } as never, lambdaContext()));
    const emf = lines.map((line) => JSON.parse(line)).filter((entry) => entry._aws?.CloudWatchMetrics);
    const byType = Object.fromEntries(emf.map((entry) => [entry.type, entry]));
    expect(Object.keys(byType).sort()).toEqual(["echo", "slow"]);
    expect(byType.echo._aws.CloudWatchMetrics[0]).toEqual({
      Namespace: "leaseq",
      Dimensions: [["service", "queue", "type"]],
      Metrics: [
        { Name: "queueWaitMs", Unit: "Milliseconds" },
        { Name: "runTimeMs", Unit: "Milliseconds" },
      ],
    });
    expect(byType.echo).toMatchObject({ service: "leaseq-worker", queue: queue.name });
    expect(byType.echo.queueWaitMs).toHaveLength(2);
    for (const waited of byType.echo.queueWaitMs) expect(waited).toBeGreaterThanOrEqual(4_000);
    expect(byType.slow.queueWaitMs[0]).toBeLessThan(4_000);
    expect(byType.slow.runTimeMs[0]).toBeGreaterThanOrEqual(290);
  });

  it("reports malformed records in batchItemFailures with the reason, and still runs the good ones", async () => {
    const { queue, handler } = await setup({
      ordered: false,
      types: { echo: { leaseMs: 5_000, maxAttempts: 3, backoff: quick, handler: () => {} } },
    });
    const records = [
      sqsRecord("not json {", "bad-json"),
      sqsRecord({ tasks: "nope" }, "bad-shape"),
      sqsRecord([1, 2], "bad-array"),
      sqsRecord({ tasks: [{ type: "echo", priority: "high" }] }, "bad-priority"),
      sqsRecord({ tasks: [{ type: "echo", priorty: 1 }] }, "bad-field"),
      sqsRecord({ tasks: [{ id: "good", type: "echo", payload: { secret: "s3cr3t-payload" } }] }, "good"),
    ];
    const { result, lines } = await captureStdout(() => handler(sqsEvent(...records), lambdaContext()));
    expect(result.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([
      "bad-json",
      "bad-shape",
      "bad-array",
      "bad-priority",
      "bad-field",
    ]);
    expect((await queue.admin.inspect("good"))?.state).toBe("done");
    const log = JSON.parse(lines.find((l) => l.includes("worker invocation")) ?? "{}");
    const reasons = Object.fromEntries(
      log.rejected.map((r: { messageId: string; reason: string }) => [r.messageId, r.reason]),
    );
    expect(reasons["bad-json"]).toMatch(/body is not JSON/);
    expect(reasons["bad-shape"]).toMatch(/"tasks" must be an array/);
    expect(reasons["bad-priority"]).toMatch(/priority must be an integer from -1000 to 1000, got "high"/);
    expect(reasons["bad-field"]).toMatch(/unknown field "priorty"/);
    expect(lines.join("\n")).not.toContain("s3cr3t-payload");
  });

  it("retries a throwing handler with backoff and ends FAILED after its max attempts, error recorded", async () => {
    const attempts: number[] = [];
    /** When each attempt threw (ms). */
    const thrown: number[] = [];
    // No lingering: each invocation stops at its first empty claim, leaving the retry SCHEDULED.
    const { queue, handler } = await setup(
      {
        ordered: false,
        types: {
          broken: {
            leaseMs: 5_000,
            maxAttempts: 3,
            backoff: { baseMs: 200, maxMs: 400 },
            handler: (t) => {
              attempts.push(t.attempt);
              thrown.push(Date.now());
              throw new Error(`boom on attempt ${t.attempt}`);
            },
          },
        },
      },
      { LEASEQ_LINGER_MS: "0" },
    );
    await captureStdout(() => handler(sqsEvent(sqsRecord({ tasks: [{ id: "b1", type: "broken" }] })), lambdaContext()));
    // Its retry waits its backoff after the attempt that threw: equal jitter, half to all of
    // 200 ms doubled per attempt, at most 400 (on a slow machine the invocation may have reached
    // the first retry already, and run it).
    const due = Number(await redis.zscore(queue.keys.scheduled, "b1"));
    const ceiling = Math.min(400, 200 * 2 ** (attempts.length - 1));
    expect(due - thrown[thrown.length - 1]).toBeGreaterThanOrEqual(ceiling / 2);
    expect(due - thrown[thrown.length - 1]).toBeLessThanOrEqual(ceiling + 250); // the settle comes a moment after the throw
    for (let i = 0; i < 40 && (await queue.admin.inspect("b1"))?.state !== "failed"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await captureStdout(() => handler({ leaseq: "drain" }, lambdaContext()));
    }
    expect(attempts).toEqual([1, 2, 3]);
    expect(await queue.admin.inspect("b1")).toMatchObject({
      state: "failed",
      attempts: 3,
      lastError: "Error: boom on attempt 3",
    });
  });

  it("fails a PermanentError at once, and a library-enqueued task of an undeclared type with the declared types", async () => {
    const { queue, handler } = await setup({
      ordered: false,
      types: {
        bad: {
          leaseMs: 5_000,
          maxAttempts: 5,
          backoff: quick,
          handler: () => {
            throw new PermanentError("invalid address");
          },
        },
      },
    });
    // Straight into Redis, so no ingest check stops it: the worker finds no handler when it claims it.
    await queue.enqueue([{ id: "u", type: "typo" }], { now: Date.now() });
    await captureStdout(() => handler(sqsEvent(sqsRecord({ tasks: [{ id: "p", type: "bad" }] })), lambdaContext()));
    expect(await queue.admin.inspect("p")).toMatchObject({
      state: "failed",
      attempts: 1,
      lastError: "PermanentError: invalid address",
    });
    expect(await queue.admin.inspect("u")).toMatchObject({
      state: "failed",
      lastError: 'no handler for task type "typo", and the queue declares no such type; this worker\'s types: bad',
    });
  });

  it("extends the lease of a handler that outlives it, so no reclaim takes the task", async () => {
    let reclaimedMeanwhile: string[] = [];
    const { queue, handler } = await setup({
      ordered: false,
      types: {
        slow: {
          leaseMs: 1_000,
          maxAttempts: 1,
          backoff: quick,
          handler: async () => {
            await new Promise((resolve) => setTimeout(resolve, 2_500));
            reclaimedMeanwhile = (await queue.reclaim({ now: Date.now() })).reclaimed;
          },
        },
      },
    });
    await captureStdout(() => handler(sqsEvent(sqsRecord({ tasks: [{ id: "s", type: "slow" }] })), lambdaContext()));
    expect(reclaimedMeanwhile).toEqual([]);
    expect(await queue.admin.inspect("s")).toMatchObject({ state: "done", attempts: 1 });
  });

  it("stops claiming when the invocation runs low on time: every task it claimed started, the rest stay READY", async () => {
    const ran: string[] = [];
    const { queue, handler } = await setup(
      {
        ordered: false,
        types: { echo: { leaseMs: 10_000, maxAttempts: 3, backoff: quick, handler: (t) => void ran.push(t.id) } },
      },
      { LEASEQ_CLAIM_BATCH: "5" },
    );
    await queue.enqueue(
      ["t1", "t2", "t3", "t4", "t5", "t6"].map((id) => ({ id, type: "echo" })),
      { now: Date.now() },
    );
    // 70 s left for the first claim, then only 5 s: not enough for a 10 s run.
    let calls = 0;
    const context = lambdaContext(() => (++calls <= 2 ? 70_000 : 5_000));
    const { lines } = await captureStdout(() => handler({ leaseq: "drain" }, context));
    // One claim of five, all started at once (concurrently), none waiting behind another.
    expect(ran.sort()).toEqual(["t1", "t2", "t3", "t4", "t5"]);
    expect(JSON.parse(lines.find((l) => l.includes("worker invocation")) ?? "{}")).toMatchObject({
      claimed: 5,
      started: 5,
      done: 5,
      released: 0,
      cutOff: true,
    });
    expect(await queue.admin.inspect("t6")).toMatchObject({ state: "ready", attempts: 0 });
    await assertConsistent(redis, queue);
  });

  it("keeps strict completion order on an ordered queue under 5 concurrent invocations, a retry included", async () => {
    const completed: string[] = [];
    const failedOnce = new Set<string>();
    const { queue, handler } = await setup(
      {
        ordered: true,
        types: {
          step: {
            leaseMs: 5_000,
            maxAttempts: 3,
            backoff: { baseMs: 20, maxMs: 40 },
            handler: async (t) => {
              await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
              if (t.id === "o-07" && !failedOnce.has(t.id)) {
                failedOnce.add(t.id);
                throw new Error("transient");
              }
              completed.push(t.id);
            },
          },
        },
      },
      { LEASEQ_CLAIM_BATCH: "3" },
    );
    const ids = Array.from({ length: 20 }, (_, i) => `o-${String(i).padStart(2, "0")}`);
    await queue.enqueue(
      ids.map((id) => ({ id, type: "step" })),
      { now: Date.now() },
    );
    for (let round = 0; round < 100 && completed.length < ids.length; round++) {
      await captureStdout(() =>
        Promise.all(Array.from({ length: 5 }, () => handler({ leaseq: "drain" }, lambdaContext()))),
      );
    }
    expect(completed).toEqual(ids);
  });

  it("fails the whole invocation when Redis cannot be reached, so SQS retries the batch", async () => {
    const handler = createWorker({
      env:
        adapter.name === "upstash"
          ? {
              LEASEQ_QUEUE: "x",
              UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9",
              UPSTASH_REDIS_REST_TOKEN: "t0ken-never-shown",
            }
          : { LEASEQ_QUEUE: "x", REDIS_URL: "redis://127.0.0.1:9" },
      tasks: { types: { echo: { handler: () => {} } } },
      logger: new Logger({ serviceName: "test-worker" }),
    });
    const error = await handler(sqsEvent(sqsRecord({ tasks: [{ type: "echo" }] })), lambdaContext()).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/^configure: .*unreachable/);
    expect((error as Error).message).not.toContain("t0ken-never-shown");
  });
});
