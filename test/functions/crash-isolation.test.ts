// Nothing fails by association: finished tasks are settled while their batch goes on, and a task
// the reclaimer returned is claimed alone, so a crash costs only the task that was running.
import { fork } from "node:child_process";
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { describe, expect, it } from "vitest";
import { createReclaimer } from "../../functions/reclaimer.js";
import { Queue } from "../../shared/queue.js";
import { captureStdout, envWithoutConnection, functionEnv, lambdaContext, scheduledEvent } from "../helpers/events.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const upstash = adapters.filter((adapter) => adapter.name === "upstash"); // the Lambda path

describe.each(upstash)("a worker process that dies mid-batch, over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);

  /** One invocation in a child process; SIGKILLed by the test when `killWhen` starts. Resolves to the tasks it started. */
  async function invocation(name: string, killWhen?: string): Promise<string[]> {
    const started: string[] = [];
    const child = fork(new URL("./fixtures/batch-worker.ts", import.meta.url), {
      env: {
        ...envWithoutConnection(),
        ...functionEnv(adapter, name, { LEASEQ_CLAIM_BATCH: "10", LEASEQ_FLUSH_AFTER_MS: "0" }),
      },
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    child.on("message", (message: { started?: string }) => {
      if (!message.started) return;
      started.push(message.started);
      if (message.started === killWhen) child.kill("SIGKILL");
    });
    await new Promise((resolve) => child.once("exit", resolve));
    return started;
  }

  /** Waits out the 1 s leases, then one reclaimer run returns them. */
  async function reclaim(name: string) {
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const reclaimer = createReclaimer({
      env: functionEnv(adapter, name),
      logger: new Logger({ serviceName: "crash-isolation", logLevel: "SILENT" }),
      metrics: new Metrics({ namespace: "leaseq-test", serviceName: "reclaimer" }),
    });
    return (await captureStdout(() => reclaimer(scheduledEvent(), lambdaContext()))).result;
  }

  async function queueWith(name: string, tasks: Array<{ id: string; killsItsProcess?: boolean }>) {
    const store = await open();
    const queue = new Queue(store, { name });
    await queue.enqueue(
      tasks.map(({ id, killsItsProcess }) => ({ id, type: "job", payload: { workMs: 150, killsItsProcess } })),
      { now: Date.now() },
    );
    return queue;
  }

  it("killed while running the tenth of ten, three times: the nine that finished are DONE after one attempt", async () => {
    const name = uniqueQueueName("crash-tenth");
    const ids = Array.from({ length: 10 }, (_, i) => `t${i + 1}`);
    const queue = await queueWith(
      name,
      ids.map((id) => ({ id })),
    );
    const rounds: string[][] = [];
    for (let round = 0; round < 3; round++) {
      rounds.push(await invocation(name, "t10"));
      await reclaim(name);
    }
    expect(rounds).toEqual([ids, ["t10"], ["t10"]]);
    const tasks = await assertConsistent(redis, queue);
    for (const id of ids.slice(0, 9)) expect(tasks.get(id), id).toMatchObject({ state: "D", attempts: 1 });
    expect(tasks.get("t10")).toMatchObject({ state: "F", attempts: 3, error: "lease expired after attempt 3 of 3" });
  });

  it("a task that kills its process every time ends FAILED alone; its former batch-mates end DONE", async () => {
    const name = uniqueQueueName("crash-self");
    const ids = Array.from({ length: 10 }, (_, i) => `s${i + 1}`);
    const queue = await queueWith(
      name,
      ids.map((id) => ({ id, killsItsProcess: id === "s5" })),
    );
    const rounds: string[][] = [];
    for (let round = 0; round < 6 && (await queue.stats({ now: Date.now() })).done < 9; round++) {
      rounds.push(await invocation(name));
      await reclaim(name);
    }
    // s1-s4 finished before s5 killed the process; s6-s10 never started. After that, s5 runs alone
    // (three times, then FAILED), and the five it took down run one by one.
    expect(rounds).toEqual([["s1", "s2", "s3", "s4", "s5"], ["s5"], ["s5"], ["s6", "s7", "s8", "s9", "s10"]]);
    const tasks = await assertConsistent(redis, queue);
    for (const id of ["s1", "s2", "s3", "s4"]) expect(tasks.get(id), id).toMatchObject({ state: "D", attempts: 1 });
    // Their one lost attempt is the crash of the batch they shared with s5; none was failed for it.
    for (const id of ["s6", "s7", "s8", "s9", "s10"])
      expect(tasks.get(id), id).toMatchObject({ state: "D", attempts: 2 });
    expect(tasks.get("s5")).toMatchObject({ state: "F", attempts: 3, error: "lease expired after attempt 3 of 3" });
  });
});
