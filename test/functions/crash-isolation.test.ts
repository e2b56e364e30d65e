// A crash charges only what it cut short, and nothing fails by association: a lease the worker's
// heartbeat confirmed (its handler had run a while) keeps its attempt, one it never confirmed gives
// it back, a task the worker never started was never claimed, and a task that stalled twice runs
// alone, so a task that kills its process uses up its own stalls while the others finish.
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

// Each test starts up to 8 worker processes one after another, each waiting out a lease: under a
// loaded machine (CI runs four test files at once on two cores) that took past the default 30 s once.
describe.each(upstash)("a worker process that dies mid-batch, over $name", { timeout: 90_000 }, (adapter) => {
  const { redis, open } = storeFixture(adapter);

  /**
   * One invocation in a child process; SIGKILLed by the test `killAfterMs` after `killWhen` starts.
   * Resolves to the tasks it started.
   */
  async function invocation(
    name: string,
    options: { killWhen?: string; killAfterMs?: number; concurrency?: number } = {},
  ): Promise<string[]> {
    const started: string[] = [];
    const child = fork(new URL("./fixtures/batch-worker.ts", import.meta.url), {
      env: {
        ...envWithoutConnection(),
        ...functionEnv(adapter, name, { LEASEQ_CLAIM_BATCH: "10", LEASEQ_FLUSH_AFTER_MS: "0" }),
        CONCURRENCY: String(options.concurrency ?? 10),
      },
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    child.on("message", (message: { started?: string }) => {
      if (!message.started) return;
      started.push(message.started);
      if (message.started === options.killWhen) setTimeout(() => child.kill("SIGKILL"), options.killAfterMs ?? 0);
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

  async function queueWith(name: string, tasks: Array<{ id: string; killsItsProcess?: boolean; workMs?: number }>) {
    const store = await open();
    const queue = new Queue(store, { name });
    await queue.enqueue(
      tasks.map(({ id, killsItsProcess, workMs }) => ({
        id,
        type: "job",
        payload: { workMs: workMs ?? 150, killsItsProcess },
      })),
      { now: Date.now() },
    );
    return queue;
  }

  it("killed while its tasks run: each confirmed one keeps its attempt and runs again at once, the ones it never claimed keep theirs", async () => {
    const name = uniqueQueueName("crash-run");
    const ids = Array.from({ length: 8 }, (_, i) => `t${i + 1}`);
    const queue = await queueWith(
      name,
      ids.map((id) => ({ id, workMs: 3_000 })),
    );
    // Four at a time: t1-t4 start together; killed after their first heartbeat confirmed them.
    expect((await invocation(name, { killWhen: "t4", killAfterMs: 700, concurrency: 4 })).sort()).toEqual(
      ids.slice(0, 4),
    );
    await reclaim(name);
    for (const id of ids.slice(0, 4)) {
      expect(await queue.admin.inspect(id), id).toMatchObject({ state: "ready", attempts: 1, stalls: 1 });
    }
    for (const id of ids.slice(4))
      expect(await queue.admin.inspect(id), id).toMatchObject({ state: "ready", attempts: 0, stalls: 0 });
    // A first stall is no reason to run alone: the next invocation runs them beside the others.
    const next = await invocation(name, { concurrency: 8 });
    expect(next.sort()).toEqual(ids);
    const tasks = await assertConsistent(redis, queue);
    for (const id of ids.slice(0, 4)) expect(tasks.get(id), id).toMatchObject({ state: "D", attempts: 2 });
    for (const id of ids.slice(4)) expect(tasks.get(id), id).toMatchObject({ state: "D", attempts: 1 });
  });

  it("a task that kills its process every time ends FAILED alone after its stalls; the tasks it took down end DONE", async () => {
    const name = uniqueQueueName("crash-self");
    const ids = Array.from({ length: 6 }, (_, i) => `s${i + 1}`);
    const queue = await queueWith(
      name,
      ids.map((id) => ({ id, killsItsProcess: id === "s3" })),
    );
    const rounds: string[][] = [];
    for (let round = 0; round < 8 && (await queue.stats({ now: Date.now() })).done < 5; round++) {
      // (An invocation that found nothing READY, its leases not yet reclaimed on a loaded machine,
      // is no round of what this tests.)
      const started = (await invocation(name)).sort();
      if (started.length > 0) rounds.push(started);
      await reclaim(name);
    }
    // Twice all six are claimed together, and s3 takes the process down as it starts, before s4-s6
    // start (and before any heartbeat: no attempt is charged). Having stalled twice, each runs alone:
    // one invocation runs s1 and s2 one by one, s3 kills it a third time (FAILED: maxStalls 3), and
    // the next runs the rest.
    expect(rounds).toEqual([
      ["s1", "s2", "s3"],
      ["s1", "s2", "s3"],
      ["s1", "s2", "s3"],
      ["s4", "s5", "s6"],
    ]);
    const tasks = await assertConsistent(redis, queue);
    for (const id of ids.filter((id) => id !== "s3"))
      expect(tasks.get(id), id).toMatchObject({ state: "D", attempts: 1 });
    expect(tasks.get("s3")).toMatchObject({ state: "F", attempts: 0 });
    expect(await queue.admin.inspect("s3")).toMatchObject({
      stalls: 3,
      lastError: "stalled 3 times (the lease ran out while held: its worker stopped), at most 3",
    });
  });
});
