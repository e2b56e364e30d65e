// A queue filled by leaseq 0.1.0 (storage format v0) drains under the scripts of format v1: each
// record is read in its old form and rewritten as v1 by the first script that meets it.
import { describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { luaScript } from "../../shared/store.js";
import { expectClean } from "../helpers/check.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";
import { V0_SCRIPTS } from "./fixtures/v0-scripts.js";

const NOW = 1_800_000_000_000;
const v0 = {
  enqueue: luaScript("enqueue", V0_SCRIPTS.enqueue),
  claim: luaScript("claim", V0_SCRIPTS.claim),
  settle: luaScript("settle", V0_SCRIPTS.settle),
};

describe.each(adapters)("a queue of format v0, over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);

  it("drains under format v1: every waiting, scheduled, leased, failed and done task keeps its meaning", async () => {
    const store = await open();
    const name = uniqueQueueName("v0");
    const queue = new Queue(store, { name });
    const k = queue.keys;
    // leaseq 0.1.0 kept the hold in its own key; the v1 layout has none, so it is an extra key here.
    const hold = `leaseq:{${name}}:hold`;
    const run = (script: keyof typeof v0, keys: string[], args: string[]) => store.evalScript(v0[script], keys, args);
    const enqueueKeys = [k.task, k.ready, k.scheduled, k.seq];
    const v0Task = (id: string, priority: number, runAt: number, payload: unknown) => [
      id,
      "job",
      String(priority),
      String(runAt),
      JSON.stringify(payload),
    ];
    await run("enqueue", enqueueKeys, [
      String(NOW),
      "262144",
      ...v0Task("ready-1", 0, NOW, { n: 1 }),
      ...v0Task("ready-2", -5, NOW, { n: 2 }),
      ...v0Task("later", 0, NOW + 60_000, { n: 3 }),
      ...v0Task("leased", -10, NOW, { n: 4 }),
      ...v0Task("failed", -10, NOW, { n: 5 }),
      ...v0Task("done", -10, NOW, { n: 6 }),
    ]);
    // Claim three under v0 (leased, failed, done: priority -10), then fail one and ack one.
    const claimed = (await run(
      "claim",
      [k.task, k.ready, k.scheduled, k.leased, hold],
      [String(NOW), "3", "0", "10", "5000", "3"],
    )) as unknown[];
    const tokens = new Map<string, string>();
    for (let i = 0; i < claimed.length; i += 7) tokens.set(String(claimed[i]), String(claimed[i + 4]));
    expect([...tokens.keys()].sort()).toEqual(["done", "failed", "leased"]);
    await run(
      "settle",
      [k.task, k.leased, k.scheduled, k.ready, k.done, k.failed, hold],
      [
        String(NOW),
        "2048",
        "0",
        ...["failed", tokens.get("failed") ?? "", "fail", "0", "broken under v0"],
        ...["done", tokens.get("done") ?? "", "ack", "0", ""],
      ],
    );

    // From here on, the v1 scripts only.
    expect(await queue.inspect("ready-2")).toMatchObject({
      state: "ready",
      type: "job",
      priority: -5,
      payload: '{"n":2}',
    });
    expect(await queue.inspect("failed")).toMatchObject({ state: "failed", attempts: 1, lastError: "broken under v0" });
    expect(await queue.inspect("done")).toMatchObject({ state: "done", payload: "" });
    expect(await queue.enqueue([{ id: "ready-1", type: "job" }], { now: NOW })).toEqual([
      { id: "ready-1", status: "duplicate", state: "ready" },
    ]);
    // The v0 lease is still fenced by its v0 token.
    expect(
      await queue.extend([{ id: "leased", token: tokens.get("leased") ?? "", leaseMs: 5_000 }], { now: NOW + 1 }),
    ).toEqual([{ id: "leased", status: "ok", leaseDeadlineMs: NOW + 5_001 }]);
    expect(await queue.ack([{ id: "leased", token: tokens.get("leased") ?? "" }], { now: NOW + 2 })).toEqual([
      { id: "leased", status: "ok", state: "done" },
    ]);
    expect(await queue.requeue(["failed"], { now: NOW + 3 })).toEqual([{ id: "failed", status: "ok" }]);
    // Ready ones in their v0 rank order (priority -10 requeued first, then -5, then 0); the scheduled one when due.
    const order: string[] = [];
    for (let now = NOW + 10; now <= NOW + 70_000; now += 10_000) {
      for (const task of await queue.claim({ count: 10, now })) {
        order.push(task.id);
        expect(JSON.parse(task.payload)).toHaveProperty("n");
        expect(await queue.ack([task], { now })).toEqual([{ id: task.id, status: "ok", state: "done" }]);
      }
    }
    expect(order).toEqual(["failed", "ready-2", "ready-1", "later"]);
    expect(await queue.stats({ now: NOW + 70_000 })).toMatchObject({
      ready: 0,
      scheduled: 0,
      leased: 0,
      done: 6,
      corrupt: 0,
    });
    // The DONE task acked under v0 is read as it is until trim deletes it, as it deletes the rest.
    // The test's clock is weeks ahead of the store's: the queue is told to take it as given.
    await redis.hset(k.config, "callerClock", "1");
    expect(await queue.trim({ now: NOW + 80_000, doneRetentionMs: 0 })).toEqual({ done: 6, failed: 0 });
    // Every task's record is gone; what stays is the queue's own (the lease counter, the v0 guard).
    expect((await redis.hkeys(k.task)).filter((field) => !field.startsWith("#"))).toEqual([]);
    await redis.del(hold);
  });

  it("a worker of format v0 still running pops nothing a producer of the new format enqueued", async () => {
    const store = await open();
    const name = uniqueQueueName("v0w");
    const queue = new Queue(store, { name });
    const k = queue.keys;
    const hold = `leaseq:{${name}}:hold`;
    // The upgrade order gone wrong: a new producer enqueues while an old worker still drains.
    await queue.enqueue(
      [
        { id: "new-1", type: "job" },
        { id: "new-2", type: "job", priority: -1 },
        { id: "new-3", type: "job", delayMs: 1_000 },
      ],
      { now: NOW },
    );
    const v0Claim = store
      .evalScript(
        v0.claim,
        [k.task, k.ready, k.scheduled, k.leased, hold],
        [String(NOW + 500), "10", "0", "10", "5000", "3"],
      )
      .then(
        (reply) => reply,
        (error: unknown) => error,
      );
    const answered = await v0Claim;
    // Whatever the old claim answered (an error), it took nothing: every task is still waiting, in order.
    expect(Array.isArray(answered) ? answered : []).toEqual([]);
    expect(await queue.stats({ now: NOW + 2_000 })).toMatchObject({ ready: 2, scheduled: 1, corrupt: 0 });
    const claimed = await queue.claim({ count: 10, now: NOW + 2_000 });
    expect(claimed.map((task) => task.id)).toEqual(["new-2", "new-1", "new-3"]);
    await expectClean(queue, NOW + 2_001);
    await redis.del(hold);
  });
});
