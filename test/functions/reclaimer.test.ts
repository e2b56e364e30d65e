import { fork } from "node:child_process";
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { describe, expect, it } from "vitest";
import { QUEUE_METRICS } from "../../functions/metric-names.js";
import { createReclaimer } from "../../functions/reclaimer.js";
import type { TaskDefinitions } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import { captureStdout, envWithoutConnection, functionEnv, lambdaContext, scheduledEvent } from "../helpers/events.js";
import { assertConsistent } from "../helpers/invariants.js";
import { recordingLambdaApi } from "../helpers/lambda-api.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const registry: TaskDefinitions = {
  ordered: false,
  types: { job: { leaseMs: 1_000, maxAttempts: 3, backoff: { baseMs: 50, maxMs: 100 }, handler: () => {} } },
};
const silent = () => new Logger({ serviceName: "test", logLevel: "SILENT" });

describe.each(adapters)("reclaimer over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);
  async function queueNamed(name: string) {
    const store = await open();
    return new Queue(store, { name });
  }

  it("invokes the worker through the Lambda API with a drain event, and publishes the queue metrics as EMF", async () => {
    const name = uniqueQueueName("r");
    const queue = await queueNamed(name);
    const api = await recordingLambdaApi();
    try {
      await queue.enqueue(
        Array.from({ length: 5 }, (_, i) => ({ id: `k${i}`, type: "job" })),
        { now: Date.now() - 1_000 },
      );
      const handler = createReclaimer({
        env: functionEnv(adapter, name, {
          LEASEQ_WORKER_FUNCTION: "leaseq-worker-fn",
          LEASEQ_LAMBDA_ENDPOINT: api.url,
        }),
        logger: silent(),
        metrics: new Metrics({ namespace: "leaseq-test", serviceName: "reclaimer" }),
      });
      const { result, lines } = await captureStdout(() => handler(scheduledEvent(), lambdaContext()));
      expect(result).toMatchObject({ ready: 5, drainInvocations: 1 });
      expect(api.calls).toHaveLength(1);
      expect(api.calls[0].url).toBe("/2015-03-31/functions/leaseq-worker-fn/invocations");
      expect(api.calls[0].headers["x-amz-invocation-type"]).toBe("Event");
      expect(JSON.parse(api.calls[0].body)).toEqual({ leaseq: "drain" });

      const emf = lines.map((line) => JSON.parse(line)).find((entry) => entry._aws?.CloudWatchMetrics);
      expect(emf._aws.CloudWatchMetrics[0].Namespace).toBe("leaseq-test");
      const names = emf._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name);
      expect(names).toEqual(expect.arrayContaining(Object.keys(QUEUE_METRICS)));
      expect(emf).toMatchObject({ queue: name, ready: 5, leased: 0, reclaimed: 0 });
      expect(emf.oldestReadyAgeMs).toBeGreaterThanOrEqual(1_000);
    } finally {
      await api.close();
    }
  });

  it.each([429, 500])(
    "logs a drain invocation the Lambda API refuses (%i) and still publishes its metrics; the run succeeds",
    async (status) => {
      const name = uniqueQueueName("r");
      const queue = await queueNamed(name);
      const api = await recordingLambdaApi(status);
      try {
        await queue.enqueue([{ id: "k", type: "job" }], { now: Date.now() - 1_000 });
        const handler = createReclaimer({
          env: functionEnv(adapter, name, {
            LEASEQ_WORKER_FUNCTION: "leaseq-worker-fn",
            LEASEQ_LAMBDA_ENDPOINT: api.url,
          }),
          logger: new Logger({ serviceName: "reclaimer-test" }),
          metrics: new Metrics({ namespace: "leaseq-test", serviceName: "reclaimer" }),
        });
        const { result, lines } = await captureStdout(() => handler(scheduledEvent(), lambdaContext()), {
          stderr: true,
        });
        expect(result).toMatchObject({ ready: 1, drainInvocations: 0, failedDrainInvocations: 1 });
        expect(api.calls.length).toBeGreaterThanOrEqual(1); // the SDK's own retries may resend it
        // stderr may also carry Node's own warnings (the AWS SDK's Node version notice): JSON lines only.
        const entries = lines.filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
        expect(entries.find((entry) => entry._aws?.CloudWatchMetrics)).toMatchObject({ queue: name, ready: 1 });
        expect(entries.find((entry) => entry.message === "drain invocation failed")).toMatchObject({
          level: "WARN",
          function: "leaseq-worker-fn",
          error: { httpStatusCode: status },
        });
        expect(entries.find((entry) => entry.message === "reclaimer run")).toMatchObject({
          drainInvocations: 0,
          failedDrainInvocations: 1,
        });
      } finally {
        await api.close();
      }
    },
  );

  it("starts no drain invocation when nothing is ready", async () => {
    const name = uniqueQueueName("r");
    await queueNamed(name);
    const api = await recordingLambdaApi();
    try {
      const handler = createReclaimer({
        env: functionEnv(adapter, name, { LEASEQ_WORKER_FUNCTION: "w", LEASEQ_LAMBDA_ENDPOINT: api.url }),
        logger: silent(),
      });
      const { result } = await captureStdout(() => handler(scheduledEvent(), lambdaContext()));
      expect(result.drainInvocations).toBe(0);
      expect(api.calls).toHaveLength(0);
    } finally {
      await api.close();
    }
  });

  it("returns the leases of a worker killed mid-batch, and a later invocation completes the tasks", async () => {
    const name = uniqueQueueName("crash");
    const queue = await queueNamed(name);
    const ids = ["c1", "c2", "c3"];
    await queue.enqueue(
      ids.map((id) => ({ id, type: "job" })),
      { now: Date.now() },
    );
    const child = fork(new URL("./fixtures/crashing-worker.ts", import.meta.url), {
      env: { ...envWithoutConnection(), ...functionEnv(adapter, name) },
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    await new Promise((resolve, reject) => {
      child.once("message", resolve);
      child.once("exit", (code) => reject(new Error(`crashing worker exited early with ${code}`)));
    });
    child.removeAllListeners("exit");
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    expect((await queue.stats({ now: Date.now() })).leased).toBe(3);

    await new Promise((resolve) => setTimeout(resolve, 3_100)); // the 3 s leases run out
    const reclaimer = createReclaimer({ env: functionEnv(adapter, name), logger: silent() });
    const { result } = await captureStdout(() => reclaimer(scheduledEvent(), lambdaContext()));
    expect(result).toMatchObject({ reclaimed: 3, ready: 3, leased: 0 });

    const worker = createWorker({ env: functionEnv(adapter, name), tasks: registry, logger: silent() });
    await captureStdout(() => worker({ leaseq: "drain" }, lambdaContext()));
    const tasks = await assertConsistent(redis, queue);
    // Killed before any heartbeat confirmed a lease: the crash charged none of them an attempt.
    for (const id of ids) expect(tasks.get(id)).toMatchObject({ state: "D", attempts: 1 });
    expect((await queue.admin.inspect("c1"))?.stalls).toBe(1);
  });
});
