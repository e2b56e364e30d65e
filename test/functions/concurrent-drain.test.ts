// The worker's execution model (docs/lambda.md "Drain"): it claims only what starts now and runs it
// concurrently, within the declaration's concurrency and each type's own; an ordered group never has
// two tasks running; a run stops at its type's timeoutMs while its heartbeat keeps the lease alive;
// and no handler starts on a lease that may be lost. The worker's own drain over both stores.
import { describe, expect, it } from "vitest";
import { drain } from "../../functions/drain.js";
import { queueSettings } from "../../functions/runtime.js";
import { defineTasks, type TaskDeclaration, type TaskDefinitions } from "../../functions/tasks.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { expectClean } from "../helpers/check.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

/** A drain with time enough (5 minutes left), no safety margin, no linger: runs what is ready, then stops. */
function drainOptions(queue: Queue, tasks: TaskDeclaration) {
  return { queue, tasks, claimBatch: 20, remainingMs: () => 300_000, safetyMarginMs: 0, lingerMs: 0 };
}
const drainOnce = (queue: Queue, tasks: TaskDeclaration) => drain(drainOptions(queue, tasks));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Records, per task, when each run started and ended, and how many ran at once (in all and per key). */
function recorder() {
  const runs: Array<{ id: string; key: string; start: number; end?: number; attempt: number }> = [];
  let running = 0;
  let most = 0;
  return {
    runs,
    most: () => most,
    async run(id: string, key: string, attempt: number, ms: number, signal?: AbortSignal) {
      const run: { id: string; key: string; start: number; end?: number; attempt: number } = {
        id,
        key,
        start: Date.now(),
        attempt,
      };
      runs.push(run);
      running++;
      most = Math.max(most, running);
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, ms);
          signal?.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(signal.reason);
          });
        });
      } finally {
        running--;
        run.end = Date.now();
      }
    },
    /** Most runs of one key overlapping in time. */
    overlapOf(key: string) {
      const mine = runs.filter((run) => run.key === key);
      let worst = 0;
      for (const run of mine) {
        const at = run.start;
        worst = Math.max(worst, mine.filter((other) => other.start <= at && (other.end ?? Infinity) > at).length);
      }
      return worst;
    },
  };
}

describe.each(adapters)("the worker's drain over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);

  // No clock-skew margin: a lease not extended is reclaimable as soon as it ends.
  async function queueFor(definitions: TaskDefinitions, store?: Store) {
    const tasks = defineTasks(definitions);
    const queue = new Queue(store ?? (await open()), {
      name: uniqueQueueName("drain"),
      // The test's `now` is the clock (ahead of the store's by a few ms): taken as given.
      settings: { ...queueSettings({ clockSkewMs: 0 }, tasks), trustCallerClock: true },
    });
    await queue.configure();
    return { tasks, queue };
  }

  it("runs tasks at once up to its concurrency, a type at most its own, and claims no more than its free slots", async () => {
    const rec = recorder();
    const { tasks, queue } = await queueFor({
      concurrency: 4,
      types: {
        quick: { handler: (task) => rec.run(task.id, "quick", task.attempt, 300) },
        "import-file": { concurrency: 1, handler: (task) => rec.run(task.id, "import", task.attempt, 600) },
      },
    });
    const claims: number[] = [];
    const claimOrNextDue = queue.claimOrNextDue.bind(queue);
    queue.claimOrNextDue = async (options) => {
      const outcome = await claimOrNextDue(options);
      claims.push(outcome.tasks.length);
      // Every claimed task starts at once: never more leased by this drain than it has slots.
      expect(outcome.tasks.length).toBeLessThanOrEqual(options.count);
      return outcome;
    };
    await queue.enqueue(
      [
        ...Array.from({ length: 3 }, (_, i) => ({ id: `imp-${i}`, type: "import-file" })),
        ...Array.from({ length: 8 }, (_, i) => ({ id: `q-${i}`, type: "quick" })),
      ],
      { now: Date.now() },
    );
    const counts = await drainOnce(queue, tasks);
    expect(counts).toMatchObject({ claimed: 11, started: 11, done: 11, released: 0, lost: 0 });
    expect(rec.most()).toBe(4);
    expect(rec.overlapOf("import")).toBe(1);
    // Three imports one after another while the quick ones ran beside them (the overlaps above: by
    // what ran at once, not by the wall clock, which a loaded machine stretches).
    expect(Math.max(...claims)).toBeLessThanOrEqual(4);
    await assertConsistent(redis, queue);
    await expectClean(queue, Date.now());
  });

  it("fills a type's own limit while other types hold slots: the room is its limit less its running, within the free slots", async () => {
    const rec = recorder();
    const { tasks, queue } = await queueFor({
      concurrency: 4,
      types: {
        quick: { handler: (task) => rec.run(task.id, "quick", task.attempt, 200) },
        long: { handler: (task) => rec.run(task.id, "long", task.attempt, 1_500) },
        "import-file": { concurrency: 3, handler: (task) => rec.run(task.id, "import", task.attempt, 1_500) },
      },
    });
    // One long task and one import hold two slots; a quick one takes a third for a moment.
    await queue.enqueue(
      [
        { id: "long", type: "long", priority: -1 },
        { id: "imp-0", type: "import-file", priority: -1 },
        { id: "q", type: "quick" },
      ],
      { now: Date.now() },
    );
    const draining = drain({
      ...drainOptions(queue, tasks),
      lingerMs: 2_000,
      pollMs: 100,
    });
    // Two imports more, once the quick task is done: two slots free, and room for two imports
    // (three less the one running), so both start now, beside the long ones.
    await sleep(400);
    await queue.enqueue(
      [
        { id: "imp-1", type: "import-file" },
        { id: "imp-2", type: "import-file" },
      ],
      { now: Date.now() },
    );
    expect(await draining).toMatchObject({ claimed: 5, done: 5 });
    const started = (id: string) => rec.runs.find((run) => run.id === id)?.start ?? Number.POSITIVE_INFINITY;
    const longEnd = rec.runs.find((run) => run.id === "long")?.end ?? 0;
    expect(started("imp-1")).toBeLessThan(longEnd);
    expect(started("imp-2")).toBeLessThan(longEnd);
    expect(rec.overlapOf("import")).toBe(3);
    expect(rec.most()).toBe(4);
    await expectClean(queue, Date.now());
  });

  it("never runs two tasks of an ordered group at once, while many groups run side by side, in order", async () => {
    const rec = recorder();
    const { tasks, queue } = await queueFor({
      concurrency: 10,
      types: {
        step: {
          group: { ordered: true },
          handler: (task) => rec.run(task.id, task.group ?? "", task.attempt, 50 + Math.floor(Math.random() * 100)),
        },
      },
    });
    const tenants = Array.from({ length: 8 }, (_, i) => `tenant-${i}`);
    for (let n = 0; n < 5; n++) {
      await queue.enqueue(
        tenants.map((tenant) => ({ id: `${tenant}-step-${n}`, type: "step", group: tenant })),
        { now: Date.now() },
      );
    }
    const counts = await drainOnce(queue, tasks);
    expect(counts).toMatchObject({ done: 40, lost: 0 });
    expect(rec.most()).toBeGreaterThan(1);
    for (const tenant of tenants) {
      expect(rec.overlapOf(tenant), tenant).toBe(1);
      const order = rec.runs.filter((run) => run.key === tenant).map((run) => run.id);
      expect(order, tenant).toEqual(Array.from({ length: 5 }, (_, n) => `${tenant}-step-${n}`));
    }
    await expectClean(queue, Date.now());
  });

  it("settles a task that finished while its claim was out and claims again: its ordered group's next task runs in the same drain", async () => {
    const inner = await open();
    let claims = 0;
    // The second claim's reply comes after the first task's handler has finished.
    const store: Store = {
      async evalScript(script, keys, args) {
        const reply = await inner.evalScript(script, keys, args);
        if (script.name === "claim" && ++claims === 2) await sleep(300);
        return reply;
      },
      close: () => inner.close(),
    };
    const ran: string[] = [];
    const { tasks, queue } = await queueFor(
      {
        concurrency: 2,
        types: {
          step: {
            group: { ordered: true },
            handler: async (task) => {
              ran.push(task.id);
              await sleep(50);
            },
          },
        },
      },
      store,
    );
    await queue.enqueue(
      [
        { id: "a1", type: "step", group: "alice" },
        { id: "a2", type: "step", group: "alice" },
      ],
      { now: Date.now() },
    );
    const counts = await drainOnce(queue, tasks);
    expect(claims, "a claim while a1 ran, and one after its settle").toBeGreaterThanOrEqual(3);
    expect(ran).toEqual(["a1", "a2"]);
    expect(counts).toMatchObject({ done: 2, lost: 0 });
    await expectClean(queue, Date.now());
  });

  it("stops a run at its timeoutMs, while the heartbeat keeps a run longer than its heartbeat alive", async () => {
    const { tasks, queue } = await queueFor({
      types: {
        // Runs 2.5 s: more than twice its 1 s heartbeat, within its 10 s timeout.
        steady: {
          timeoutMs: 10_000,
          heartbeatMs: 1_000,
          handler: async () => {
            await sleep(2_500);
            // Nothing took its lease meanwhile: it was extended, not expired.
            expect((await queue.reclaim({ now: Date.now() })).reclaimed).toEqual([]);
          },
        },
        // Would run 10 s; its timeout is 1.5 s: stopped, an attempt, retried later.
        stuck: {
          timeoutMs: 1_500,
          heartbeatMs: 1_000,
          maxAttempts: 3,
          backoff: { baseMs: 60_000 },
          handler: (task) => sleep(10_000).then(() => task.signal.throwIfAborted()),
        },
      },
    });
    await queue.enqueue(
      [
        { id: "steady-1", type: "steady" },
        { id: "stuck-1", type: "stuck" },
      ],
      { now: Date.now() },
    );
    const startedAt = Date.now();
    const counts = await drainOnce(queue, tasks);
    // Stopped at its 1.5 s, not run its 10 s (with room for a loaded machine's late timers).
    expect(Date.now() - startedAt).toBeLessThan(9_000);
    expect(counts).toMatchObject({ done: 1, retried: 1, lost: 0 });
    expect(await queue.admin.inspect("steady-1")).toMatchObject({ state: "done", attempts: 1 });
    const stuck = await queue.admin.inspect("stuck-1");
    expect(stuck).toMatchObject({ state: "scheduled", attempts: 1 });
    // ran: from the start to the stop, as the clock reads it (a timer may fire a millisecond early).
    expect(stuck?.lastError).toMatch(
      /^did not finish within its timeoutMs \(1500 ms; ran (149\d|1[5-9]\d\d|[2-8]\d\d\d) ms\)$/,
    );
  });

  it("never starts a task whose lease may be lost, and stops a handler whose lease is lost, its settle refused", async () => {
    const inner = await open();
    let delayClaim = 0;
    let failExtends = false;
    // A store whose claim replies come late, and whose extends fail, when the test says so.
    const store: Store = {
      async evalScript(script, keys, args) {
        if (failExtends && script.name === "extend") throw new Error("connection reset");
        const reply = await inner.evalScript(script, keys, args);
        if (script.name === "claim" && delayClaim > 0) await sleep(delayClaim);
        return reply;
      },
      close: () => inner.close(),
    };
    const started: string[] = [];
    let aborted: unknown;
    const { tasks, queue } = await queueFor(
      {
        types: {
          job: {
            timeoutMs: 30_000,
            heartbeatMs: 1_500,
            handler: async (task) => {
              started.push(task.id);
              if (task.id === "long") {
                await new Promise<void>((resolve) => task.signal.addEventListener("abort", () => resolve()));
                aborted = task.signal.reason;
              }
            },
          },
        },
      },
      store,
    );
    const run = () => drain({ ...drainOptions(queue, tasks), safetyMarginMs: 200 });
    // The claim's reply arrives after most of the 1.5 s lease: the task is not started, and goes back.
    await queue.enqueue([{ id: "late", type: "job" }], { now: Date.now() });
    delayClaim = 1_200;
    const late = await run();
    delayClaim = 0;
    expect(started).toEqual([]);
    expect(late).toMatchObject({ claimed: 1, started: 0, released: 1 });
    expect(await queue.admin.inspect("late")).toMatchObject({ state: "ready", attempts: 0 });
    // Now it runs; a second task's extensions fail: its lease runs out, its handler is told to stop,
    // and a worker that takes it over after the reclaim holds it; the first holder settles nothing.
    await queue.enqueue([{ id: "long", type: "job" }], { now: Date.now() });
    const draining = run();
    while (!started.includes("long")) await sleep(20);
    failExtends = true;
    const counts = await draining;
    failExtends = false;
    expect(started).toEqual(["late", "long"]);
    expect(String((aborted as Error)?.message)).toBe("lease of task long was lost");
    expect(counts).toMatchObject({ lost: 1, done: 1 });
    // Never settled by its first holder: LEASED still, until the reclaimer returns it.
    expect(await queue.admin.inspect("long")).toMatchObject({ state: "leased" });
    expect((await queue.reclaim({ now: Date.now() + 2_000 })).reclaimed).toEqual(["long"]);
    await assertConsistent(redis, queue);
  });
});
