// singleton (docs/flow-control.md) on a real Redis, over both stores: at most one task per key
// waiting and one running, a new one replacing the one waiting, whatever it waits in (READY never
// claimed, parked behind the running one, SCHEDULED); its bounds; a lost reply repeated. Every test
// ends with the check clean.
import { describe, expect, it } from "vitest";
import { SINGLETON_GROUP_PREFIX } from "../../shared/config.js";
import { InvalidInputError } from "../../shared/errors.js";
import { Queue } from "../../shared/queue.js";
import { expectClean } from "../helpers/check.js";
import { assertConsistent, flowFields } from "../helpers/invariants.js";
import { adapters, lossyStore, queueFixture, snapshot } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("singleton over $name", (adapter) => {
  const { redis, open, fresh } = queueFixture(adapter);
  const singleton = { key: "sync:doc-7" };

  it("one running, one waiting: a new task replaces the waiting one, and waits until the running one settles", async () => {
    const queue = await fresh();
    expect(await queue.enqueue([{ id: "s1", type: "sync", payload: { v: 1 }, singleton }], { now: NOW })).toEqual([
      { id: "s1", status: "ok", state: "ready" },
    ]);
    const [running] = await queue.claim({ count: 10, now: NOW });
    expect(running.id).toBe("s1");
    // s2 waits (READY, never claimed); the running one is left alone.
    expect(await queue.enqueue([{ id: "s2", type: "sync", payload: { v: 2 }, singleton }], { now: NOW + 1 })).toEqual([
      { id: "s2", status: "ok", state: "ready" },
    ]);
    // Its lane runs one at a time: the claim parks s2 behind s1.
    expect(await queue.claim({ count: 10, now: NOW + 2 })).toEqual([]);
    expect((await queue.admin.inspect("s2"))?.state).toBe("ready");
    // s3 replaces s2, parked as it is.
    expect(await queue.enqueue([{ id: "s3", type: "sync", payload: { v: 3 }, singleton }], { now: NOW + 3 })).toEqual([
      { id: "s3", status: "ok", state: "ready", replaced: "s2" },
    ]);
    expect(await queue.admin.inspect("s2")).toBeUndefined();
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 3);
    expect(await queue.claim({ count: 10, now: NOW + 4 })).toEqual([]);
    await queue.ack([running], { now: NOW + 5 });
    const next = await queue.claim({ count: 10, now: NOW + 6 });
    expect(next.map((task) => [task.id, task.payload])).toEqual([["s3", JSON.stringify({ v: 3 })]]);
    // Another task of the type, not a singleton, is not held back by the singleton's lane.
    await queue.enqueue([{ id: "plain", type: "sync" }], { now: NOW + 6 });
    expect((await queue.claim({ count: 10, now: NOW + 7 })).map((task) => task.id)).toEqual(["plain"]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 7);
  });

  it("replaces a waiting task in every waiting state, never one that started, and one of the same call", async () => {
    const queue = await fresh();
    // SCHEDULED, never claimed: replaced.
    await queue.enqueue([{ id: "later", type: "sync", delayMs: 60_000, singleton }], { now: NOW });
    expect(await queue.enqueue([{ id: "now", type: "sync", singleton }], { now: NOW + 1 })).toEqual([
      { id: "now", status: "ok", state: "ready", replaced: "later" },
    ]);
    expect(await queue.admin.inspect("later")).toBeUndefined();
    // Two of one call: the second replaces the first, which is never written.
    expect(
      await queue.enqueue(
        [
          { id: "a", type: "sync", singleton },
          { id: "b", type: "sync", singleton },
        ],
        { now: NOW + 2 },
      ),
    ).toEqual([
      { id: "a", status: "ok", state: "ready", replaced: "now" },
      { id: "b", status: "ok", state: "ready", replaced: "a" },
    ]);
    expect(await queue.admin.inspect("a")).toBeUndefined();
    // Claimed and retried later (SCHEDULED with an attempt): it started, so it is not replaced.
    const [started] = await queue.claim({ count: 1, now: NOW + 3 });
    expect(started.id).toBe("b");
    await queue.settle([{ id: "b", token: started.token, outcome: "retry", retryAtMs: NOW + 10_000, error: "later" }], {
      now: NOW + 4,
    });
    expect(await queue.enqueue([{ id: "c", type: "sync", singleton }], { now: NOW + 5 })).toEqual([
      { id: "c", status: "ok", state: "ready" },
    ]);
    expect((await queue.admin.inspect("b"))?.state).toBe("scheduled");
    // Another key, another lane: runs beside it.
    await queue.enqueue([{ id: "other", type: "sync", singleton: { key: "sync:doc-8" } }], { now: NOW + 5 });
    expect((await queue.claim({ count: 10, now: NOW + 6 })).map((task) => task.id).sort()).toEqual(["c", "other"]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 6);
  });

  it("refuses a singleton with a group of its own, a reserved group, a key out of bounds; writes nothing", async () => {
    const queue = await fresh();
    const before = await snapshot(redis, queue);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ singleton, group: "g" }, /a singleton task runs in a lane of its own .* leave out group, got "g"/],
      [{ group: `${SINGLETON_GROUP_PREFIX}x` }, /group must not start with "@@s:"/],
      [{ singleton: { key: "k".repeat(125) } }, /singleton\.key must be 1-124 characters of/],
      [{ singleton: { key: "a b" } }, /singleton\.key must be 1-124 characters of/],
      [{ singleton: { key: "k", ttlMs: 5 } }, /singleton has unknown field "ttlMs"; allowed: key/],
      [{ singleton, dedupe: { key: "k", ttlMs: 5 } }, /at most one flow control .* got dedupe and singleton/],
    ];
    for (const [fields, message] of cases) {
      const call = queue.enqueue([{ id: "x", type: "sync", ...fields } as never], { now: NOW });
      await expect(call).rejects.toThrow(InvalidInputError);
      await expect(call).rejects.toThrow(message);
    }
    // Nor may a schedule make its tasks in a singleton's lane.
    await expect(
      queue.schedules.set("s", { every: 60_000, type: "sync", group: `${SINGLETON_GROUP_PREFIX}x` }, { now: NOW }),
    ).rejects.toThrow(/group must not start with "@@s:" \(a singleton's lane\), got "@@s:x"/);
    expect(await snapshot(redis, queue)).toEqual(before);
    // 124 characters is allowed: its group is then 128.
    expect(await queue.enqueue([{ id: "y", type: "sync", singleton: { key: "k".repeat(124) } }], { now: NOW })).toEqual(
      [{ id: "y", status: "ok", state: "ready" }],
    );
    expect((await queue.admin.inspect("y"))?.group).toBe(`${SINGLETON_GROUP_PREFIX}${"k".repeat(124)}`);
    await expectClean(queue, NOW);
  });

  it("a call repeated after a lost reply doubles nothing, and its field goes once its task no longer waits", async () => {
    const queue = await fresh();
    const lossyQueue = new Queue(lossyStore(await open()), { name: queue.name });
    await queue.enqueue([{ id: "s1", type: "sync", singleton }], { now: NOW });
    // The repeat answers duplicate, as every repeated enqueue does; s1 stays replaced.
    expect(await lossyQueue.enqueue([{ id: "s2", type: "sync", singleton }], { now: NOW + 1 })).toEqual([
      { id: "s2", status: "duplicate", state: "ready" },
    ]);
    expect(await queue.admin.inspect("s1")).toBeUndefined();
    expect((await queue.stats({ now: NOW + 1 })).ready).toBe(1);
    // s1 is remembered as replaced by s2 (for the DONE retention: sent again, it is a duplicate).
    const replaced = { "!r:s1": `s2|${NOW + 1 + 86_400_000}` };
    expect(await flowFields(redis, queue)).toEqual({ "!s:sync:doc-7": "s2", ...replaced });
    // Still waiting: the sweep keeps the field. Claimed: it goes.
    expect(await queue.admin.checkAll({ now: NOW + 2, repair: true })).toEqual([]);
    expect(await flowFields(redis, queue)).toEqual({ "!s:sync:doc-7": "s2", ...replaced });
    const [claimed] = await queue.claim({ count: 1, now: NOW + 3 });
    expect(claimed.id).toBe("s2");
    expect(await queue.admin.checkAll({ now: NOW + 4, repair: true })).toEqual([]);
    expect(await flowFields(redis, queue)).toEqual(replaced);
    await queue.ack([claimed], { now: NOW + 5 });
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 5);
  });
});
