// createWorker's and createReclaimer's handler.close(): what a cold start opened is closed, so a test
// or script that runs the real worker or reclaimer in its own process exits instead of hanging on it.
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { describe, expect, it } from "vitest";
import { createReclaimer } from "../../functions/reclaimer.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import { envWithoutConnection, functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { runUntilExit } from "../helpers/exits.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const silent = new Logger({ serviceName: "worker-close", logLevel: "SILENT" });

/**
 * The worker and the reclaimer, each run once in its own process by its fixture, then closed: what
 * the fixture prints (its metrics not printed, the reclaimer's EMF being a stdout line).
 */
const CLOSING = [
  {
    what: "a worker closed after one invocation",
    fixture: "./fixtures/closing-worker.ts",
    printed: { result: { batchItemFailures: [] }, ran: ["echo-1"] },
  },
  {
    what: "a reclaimer closed after one run",
    fixture: "./fixtures/closing-reclaimer.ts",
    printed: { ready: 0, reclaimed: 0 },
  },
];

describe.each(CLOSING)("$what, in its own process", ({ fixture, printed }) => {
  const tcp = adapters.filter((adapter) => adapter.name === "tcp");
  /** Runs the fixture; kills it if it has not exited `waitMs` after printing its result. */
  const runClosing = (env: Record<string, string | undefined>, waitMs: number) =>
    runUntilExit(new URL(fixture, import.meta.url).pathname, { ...env, POWERTOOLS_METRICS_DISABLED: "true" }, waitMs);

  it.each(adapters)("over $name: the process exits at once", async (adapter) => {
    const env = { ...envWithoutConnection(), ...functionEnv(adapter, uniqueQueueName("close")) };
    const run = await runClosing(env, 5_000);
    expect(run.firstLine, run.stderr).toEqual(printed);
    expect(run.exitAfterMs, run.stderr).toBeDefined();
    // Not held open (the run kills it 5 s after its result).
    expect(run.exitAfterMs).toBeLessThan(4_000);
  });

  it.each(tcp)("over $name, not closed: the open connection keeps the process alive", async (adapter) => {
    // What the test above would see without close(): it is close() that lets the process go.
    const env = {
      ...envWithoutConnection(),
      ...functionEnv(adapter, uniqueQueueName("close")),
      LEASEQ_TEST_CLOSE: "no",
    };
    const run = await runClosing(env, 2_000);
    expect(run.firstLine, run.stderr).toEqual(printed);
    expect(run.exitAfterMs).toBeUndefined();
  });
});

describe.each(adapters)("handler.close() over $name", (adapter) => {
  const { open } = storeFixture(adapter);

  it("is harmless before any invocation and when repeated; an invocation after it starts again", async () => {
    const name = uniqueQueueName("close");
    const ran: string[] = [];
    const handler = createWorker({
      env: functionEnv(adapter, name),
      logger: silent,
      tasks: { types: { echo: { leaseMs: 5_000, handler: (task) => void ran.push(task.id) } } },
    });
    await handler.close();
    const first = await handler(sqsEvent(sqsRecord({ tasks: [{ id: "a", type: "echo" }] })), lambdaContext());
    await handler.close();
    await handler.close();
    const second = await handler(sqsEvent(sqsRecord({ tasks: [{ id: "b", type: "echo" }] })), lambdaContext());
    await handler.close();
    expect([first, second]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(ran).toEqual(["a", "b"]);
    const queue = new Queue(await open(), { name });
    expect((await queue.admin.inspect("b"))?.state).toBe("done");
  });

  it("a reclaimer's: harmless before any run and when repeated; a run after it starts again", async () => {
    const name = uniqueQueueName("close");
    const queue = new Queue(await open(), { name });
    const handler = createReclaimer({
      env: functionEnv(adapter, name),
      logger: silent,
      metrics: new Metrics({ namespace: "leaseq-test", serviceName: "reclaimer-close" }),
    });
    await handler.close();
    await queue.enqueue([{ id: "a", type: "echo", delayMs: 10 }], { now: Date.now() - 1_000 });
    const first = await handler({}, lambdaContext());
    await handler.close();
    await handler.close();
    await queue.enqueue([{ id: "b", type: "echo", delayMs: 10 }], { now: Date.now() - 1_000 });
    const second = await handler({}, lambdaContext());
    await handler.close();
    // Each run promoted the task due in it: the second started again after the close.
    expect([first.promoted, second.promoted]).toEqual([1, 1]);
  });

  it("after a failed start, closes nothing and the next invocation starts again", async () => {
    const name = uniqueQueueName("close");
    const env: Record<string, string | undefined> = { ...functionEnv(adapter, name), LEASEQ_CLAIM_BATCH: "0" };
    const handler = createWorker({
      env,
      logger: silent,
      tasks: { types: { echo: { leaseMs: 5_000, handler: () => {} } } },
    });
    await expect(handler({ leaseq: "drain" }, lambdaContext())).rejects.toThrow(/LEASEQ_CLAIM_BATCH/);
    await handler.close();
    env.LEASEQ_CLAIM_BATCH = "5";
    await expect(handler({ leaseq: "drain" }, lambdaContext())).resolves.toEqual({ batchItemFailures: [] });
    await handler.close();
  });
});
