// The operator's controls (docs/design.md "Controls"): pause and resume, cancel, purge, find by
// filter, and the per-minute history, each a bounded script call on a real redis-server, over both
// stores.
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../shared/errors.js";
import { listQueues } from "../../shared/queue-admin.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const MINUTE = 60_000;

describe.each(adapters)("controls over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);

  it("a paused queue leases nothing and says so in its stats; a resume asks for a wake-up for its ready work", async () => {
    const queue = await fresh();
    await queue.enqueue(
      [
        { id: "a", type: "email" },
        { id: "b", type: "email" },
      ],
      { now: NOW },
    );
    expect(await queue.admin.pause({ now: NOW })).toBe(true);
    expect(await queue.admin.pause({ now: NOW }), "paused already").toBe(false);
    expect(await queue.claim({ count: 10, now: NOW + 1 })).toEqual([]);
    expect(await queue.stats({ now: NOW + 1 })).toMatchObject({ ready: 2, leased: 0, paused: true, pausedTypes: [] });
    // An enqueue into a paused queue asks for no wake-up; the reclaimer's tick arranges none either.
    expect((await queue.enqueueAndWake([{ id: "c", type: "email" }], { now: NOW + 2 })).wakeAtMs).toBeUndefined();
    expect((await queue.tick({ now: NOW + 3, wakeHorizonMs: 70_000 })).paused).toBe(true);
    // The reclaimer keeps working while the queue is paused: it reclaims and promotes, arranges no wake-up.
    await queue.admin.resume({ now: NOW + 3 });
    const [held] = await queue.claim({ count: 1, now: NOW + 3 });
    await queue.enqueue([{ id: "due", type: "email", delayMs: 10 }], { now: NOW + 3 });
    await queue.admin.pause({ now: NOW + 3 });
    const tick = await queue.tick({ now: NOW + 3 + 120_000, wakeHorizonMs: 70_000 });
    expect(tick).toMatchObject({ reclaimed: 1, promoted: 1, paused: true, wakeAtMs: undefined });
    expect((await queue.admin.inspect(held.id))?.state).toBe("ready");
    const later = NOW + 3 + 120_000;
    expect(await queue.admin.resume({ now: later })).toEqual({ changed: true, wakeAtMs: later, wakeTo: [] });
    // The reclaimed task (its first stall) comes at its rank, with the rest.
    expect((await queue.claim({ count: 10, now: later })).map((task) => task.id)).toEqual(["a", "b", "c", "due"]);
    expect((await queue.stats({ now: later })).paused).toBe(false);
    await assertConsistent(redis, queue);
  });

  // A reclaimed task of a paused type stays READY: it does not stop the batch as a task handed out
  // alone would.
  it("a reclaimed task of a paused type does not cut a claim's batch short", async () => {
    const queue = await fresh({
      policies: { a: { leaseMs: 1_000, maxAttempts: 3 }, b: { leaseMs: 1_000, maxAttempts: 3 } },
    });
    await queue.enqueue([{ id: "b1", type: "b" }], { now: NOW });
    await queue.claim({ count: 1, now: NOW });
    await queue.enqueue(
      [
        { id: "a1", type: "a", priority: -1 },
        { id: "a2", type: "a" },
      ],
      { now: NOW + 1 },
    );
    await queue.tick({ now: NOW + 5_000 }); // b1 reclaimed: READY, to go alone
    await queue.admin.pause({ now: NOW + 5_000, type: "b" });
    expect((await queue.claim({ count: 5, now: NOW + 5_001 })).map((task) => task.id)).toEqual(["a1", "a2"]);
    expect((await queue.admin.inspect("b1"))?.state).toBe("ready");
    await assertConsistent(redis, queue);
  });

  it("a paused type stays READY while the others are claimed, and comes back on resume", async () => {
    const queue = await fresh();
    await queue.enqueue(
      [
        { id: "r1", type: "resize", priority: -5 },
        { id: "e1", type: "email" },
        { id: "r2", type: "resize" },
        { id: "e2", type: "email" },
      ],
      { now: NOW },
    );
    await queue.admin.pause({ now: NOW, type: "resize" });
    await queue.admin.pause({ now: NOW, type: "audit" });
    expect((await queue.stats({ now: NOW })).pausedTypes).toEqual(["audit", "resize"]);
    expect((await queue.claim({ count: 10, now: NOW })).map((task) => task.id)).toEqual(["e1", "e2"]);
    expect(await queue.admin.resume({ now: NOW, type: "resize" })).toMatchObject({ changed: true });
    expect((await queue.stats({ now: NOW })).pausedTypes).toEqual(["audit"]);
    expect((await queue.claim({ count: 10, now: NOW })).map((task) => task.id)).toEqual(["r1", "r2"]);
    await expect(queue.admin.pause({ now: NOW, type: "bad type" })).rejects.toThrow(
      /type must be 1-64 characters of A-Z a-z 0-9 _ \. -/,
    );
  });

  it("a claim reads past 200 waiting tasks of a paused type to the ones it may lease (at most 1000 heads)", async () => {
    const queue = await fresh();
    await queue.enqueue(
      Array.from({ length: 200 }, (_, i) => ({ id: `r${i}`, type: "resize", priority: -1 })),
      { now: NOW },
    );
    await queue.enqueue(
      Array.from({ length: 5 }, (_, i) => ({ id: `e${i}`, type: "email" })),
      { now: NOW },
    );
    await queue.admin.pause({ now: NOW, type: "resize" });
    expect((await queue.claim({ count: 5, now: NOW })).map((task) => task.id)).toEqual(["e0", "e1", "e2", "e3", "e4"]);
    expect(await queue.stats({ now: NOW })).toMatchObject({ ready: 200, leased: 5 });
    await assertConsistent(redis, queue);
  });

  it("an ordered queue stops at a task of a paused type", async () => {
    const queue = await fresh({ ordered: true });
    await queue.enqueue(
      [
        { id: "first", type: "resize" },
        { id: "second", type: "email" },
      ],
      { now: NOW },
    );
    await queue.admin.pause({ now: NOW, type: "resize" });
    expect(await queue.claim({ count: 10, now: NOW })).toEqual([]);
    await queue.admin.resume({ now: NOW, type: "resize" });
    expect((await queue.claim({ count: 10, now: NOW })).map((task) => task.id)).toEqual(["first", "second"]);
  });

  it("cancel ends READY, SCHEDULED and LEASED tasks FAILED; the revoked lease's settle is answered stale_token", async () => {
    const queue = await fresh();
    await queue.enqueue(
      [
        { id: "leased", type: "t", priority: -1 },
        { id: "ready", type: "t" },
        { id: "later", type: "t", delayMs: MINUTE },
        { id: "finished", type: "t" },
      ],
      { now: NOW },
    );
    const [held] = await queue.claim({ count: 1, now: NOW });
    expect(held.id).toBe("leased");
    const results = await queue.admin.cancel(["leased", "ready", "later", "nope", "ready"], { now: NOW + 10 });
    expect(results.map((result) => result.status)).toEqual(["ok", "ok", "ok", "unknown_id", "already_failed"]);
    expect(await queue.ack([held], { now: NOW + 20 })).toEqual([
      { id: "leased", status: "stale_token", state: "failed" },
    ]);
    for (const id of ["leased", "ready", "later"]) {
      expect(await queue.admin.inspect(id)).toMatchObject({
        state: "failed",
        lastError: "cancelled",
        finishedAt: NOW + 10,
      });
    }
    const [done] = await queue.claim({ count: 1, now: NOW + 30 });
    await queue.ack([done], { now: NOW + 30 });
    expect(await queue.admin.cancel(["finished", "ready"], { now: NOW + 40 })).toEqual([
      { id: "finished", status: "already_done" },
      { id: "ready", status: "already_failed" },
    ]);
    // A cancelled task can be brought back.
    expect(await queue.admin.requeue(["leased"], { now: NOW + 50 })).toEqual([{ id: "leased", status: "ok" }]);
    expect((await queue.claim({ count: 1, now: NOW + 60 }))[0].id).toBe("leased");
    await assertConsistent(redis, queue);
  });

  it("find selects by type, error substring and age, bounded per call and resumable; purge deletes a state in batches", async () => {
    const queue = await fresh({ defaultPolicy: { leaseMs: 1_000, maxAttempts: 1 } });
    const tasks = Array.from({ length: 30 }, (_, i) => ({ id: `t${i}`, type: i % 3 === 0 ? "resize" : "email" }));
    await queue.enqueue(tasks, { now: NOW });
    const claimed = await queue.claim({ count: 30, now: NOW });
    await queue.settle(
      claimed.map((task, i) => ({
        id: task.id,
        token: task.token,
        outcome: "fail" as const,
        error: i % 2 === 0 ? "SMTP 550 mailbox unavailable" : "timeout",
      })),
      { now: NOW },
    );
    const all = [];
    let cursor: number | undefined = 0;
    let calls = 0;
    while (cursor !== undefined) {
      const page = await queue.admin.find("failed", { type: "email", error: "SMTP 550", cursor, scan: 7 });
      all.push(...page.tasks);
      cursor = page.next;
      calls++;
    }
    expect(calls).toBe(5);
    const expected = claimed.filter((task, i) => i % 2 === 0 && task.type === "email").map((task) => task.id);
    expect(all.map((task) => task.id).sort()).toEqual(expected.sort());
    expect(all.every((task) => task.lastError.includes("SMTP 550"))).toBe(true);
    const old = await queue.admin.find("failed", { olderThanMs: 5 * MINUTE, now: NOW + 10 * MINUTE });
    expect(old.tasks).toHaveLength(30);
    expect((await queue.admin.find("failed", { olderThanMs: 5 * MINUTE, now: NOW + MINUTE })).tasks).toHaveLength(0);
    await expect(queue.admin.find("ready", { olderThanMs: 1, now: NOW })).rejects.toBeInstanceOf(InvalidInputError);

    expect(await queue.admin.purge("failed", { limit: 12 })).toBe(12);
    expect(await queue.admin.purge("failed", { limit: 12 })).toBe(12);
    expect(await queue.admin.purge("failed", { limit: 12 })).toBe(6);
    expect(await queue.admin.purge("failed")).toBe(0);
    expect(await queue.stats({ now: NOW })).toMatchObject({ failed: 0, ready: 0, leased: 0 });
    await expect(queue.admin.purge("leased" as never)).rejects.toThrow(/purge: state must be one of/);
    await assertConsistent(redis, queue);
  });

  it("listQueues finds the queues on the server by their config keys, through the store", async () => {
    const queue = await fresh();
    const store = await adapter.open();
    try {
      expect(await listQueues(store)).toContain(queue.name);
      await queue.admin.drop({ confirm: queue.name });
      expect(await listQueues(store)).not.toContain(queue.name);
    } finally {
      await store.close();
    }
  });

  it("drop only when drained refuses, in the same script, while any task waits or runs: READY, parked in a group, SCHEDULED, LEASED", async () => {
    const queue = await fresh({ defaultPolicy: { leaseMs: 60_000, maxAttempts: 1 }, groups: { concurrency: 1 } });
    const drained = () => queue.admin.drop({ confirm: queue.name, only: "drained" });
    await queue.enqueue(
      [
        { id: "g1", type: "email", group: "g" },
        { id: "g2", type: "email", group: "g" },
        { id: "later", type: "email", delayMs: 60_000 },
      ],
      { now: NOW },
    );
    const [first] = await queue.claim({ count: 1, now: NOW });
    expect(first.id).toBe("g1");
    // g1 LEASED, g2 parked behind it, `later` SCHEDULED: the queue is kept.
    expect(await drained()).toBe(-1);
    await queue.ack([first], { now: NOW + 1 });
    expect(await queue.stats({ now: NOW + 1 })).toMatchObject({ ready: 1, scheduled: 1, leased: 0 });
    expect(await drained()).toBe(-1);
    const [second] = await queue.claim({ count: 1, now: NOW + 2 });
    await queue.ack([second], { now: NOW + 3 });
    expect(await drained()).toBe(-1); // `later`, SCHEDULED
    const [last] = await queue.claim({ count: 1, now: NOW + 60_000 });
    expect(last.id).toBe("later");
    expect(await drained()).toBe(-1); // LEASED
    await queue.ack([last], { now: NOW + 60_001 });
    expect(await queue.stats({ now: NOW + 60_001 })).toMatchObject({ ready: 0, scheduled: 0, leased: 0, done: 3 });
    expect(await drained()).toBeGreaterThan(0);
    expect(await redis.exists(queue.keys.config, queue.keys.task, queue.keys.done)).toBe(0);
    await expect(queue.admin.drop({ confirm: queue.name, only: "all" as never })).rejects.toThrow(
      /only must be "drained" or absent/,
    );
  });

  it("history counts DONE and FAILED per minute over the last hour", async () => {
    const queue = await fresh({ defaultPolicy: { leaseMs: 60_000, maxAttempts: 1 } });
    const start = Math.floor(NOW / MINUTE) * MINUTE;
    await queue.enqueue(
      Array.from({ length: 6 }, (_, i) => ({ id: `h${i}`, type: "t" })),
      { now: start },
    );
    const claimed = await queue.claim({ count: 6, now: start });
    // 3 done in the first minute, 1 done and 2 failed two minutes later.
    await queue.ack(claimed.slice(0, 3), { now: start + 5_000 });
    await queue.ack(claimed.slice(3, 4), { now: start + 2 * MINUTE + 1 });
    await queue.settle(
      claimed.slice(4).map((task) => ({ id: task.id, token: task.token, outcome: "fail" as const, error: "x" })),
      { now: start + 2 * MINUTE + 59_999 },
    );
    const history = await queue.admin.history({ now: start + 2 * MINUTE + 59_999, minutes: 60 });
    expect(history.startMs).toBe(start + 2 * MINUTE - 59 * MINUTE);
    expect(history.bucketMs).toBe(MINUTE);
    expect(history.done).toHaveLength(60);
    expect(history.done.slice(-3)).toEqual([3, 0, 1]);
    expect(history.failed.slice(-3)).toEqual([0, 0, 2]);
    expect(history.done.slice(0, -3).every((n) => n === 0)).toBe(true);
    await expect(queue.admin.history({ now: NOW, minutes: 241 })).rejects.toThrow(
      /minutes must be an integer from 1 to 240/,
    );
  });
});
