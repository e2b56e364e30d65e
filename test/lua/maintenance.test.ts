import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../shared/errors.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const DAY = 86_400_000;

describe.each(adapters)("stats, tick, trim, inspect, requeue and list over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter, { defaultPolicy: { leaseMs: 1_000, maxAttempts: 1 } });

  it("stats counts each state and reports the head's wait and the most overdue lease", async () => {
    const queue = await fresh();
    await queue.enqueue(
      [
        { id: "l", type: "t", priority: -1 },
        { id: "d", type: "t", priority: -1 },
        { id: "f", type: "t", priority: -1 },
        { id: "r", type: "t" },
        { id: "s", type: "t", delayMs: 10_000 },
      ],
      { now: NOW },
    );
    const [l, d, f] = await queue.claim({ count: 3, now: NOW });
    await queue.settle(
      [
        { ...d, outcome: "ack" },
        { ...f, outcome: "fail", error: "x" },
      ],
      { now: NOW },
    );
    expect(l.id).toBe("l");
    expect(await queue.stats({ now: NOW + 15_000 })).toEqual({
      ready: 1,
      scheduled: 1,
      leased: 1,
      done: 1,
      failed: 1,
      oldestReadyAgeMs: 15_000,
      oldestWaitingAgeMs: 15_000,
      mostOverdueLeaseMs: 14_000,
      dueScheduled: 1,
      corrupt: 0,
      paused: false,
      pausedTypes: [],
    });
  });

  it("tick reclaims, promotes and trims in one call and reports the stats after", async () => {
    const queue = await fresh({ doneRetentionMs: DAY, failedRetentionMs: 2 * DAY });
    await queue.enqueue(
      [
        { id: "old-done", type: "t" },
        { id: "expired", type: "t" },
        { id: "sched", type: "t", delayMs: 1_000 },
      ],
      { now: NOW },
    );
    const [oldDone] = await queue.claim({ count: 1, now: NOW });
    await queue.ack([oldDone], { now: NOW });
    // Its holder confirmed it (a heartbeat: its handler ran), then stopped: its last attempt is used.
    const [expired] = await queue.claim({ count: 1, now: NOW });
    await queue.extend([{ ...expired, leaseMs: 1_000 }], { now: NOW });
    const tick = await queue.tick({ now: NOW + DAY + 1 });
    expect(tick).toMatchObject({ reclaimed: 0, reclaimFailed: 1, promoted: 1, doneTrimmed: 1, failedTrimmed: 0 });
    expect(tick).toMatchObject({ ready: 1, scheduled: 0, leased: 0, done: 0, failed: 1 });
    expect(await queue.admin.inspect("old-done")).toBeUndefined();
    await assertConsistent(redis, queue);
  });

  it("trim deletes only DONE and FAILED tasks past their retention; a trimmed id can be enqueued again", async () => {
    const queue = await fresh({ doneRetentionMs: DAY, failedRetentionMs: 2 * DAY });
    await queue.enqueue(
      ["d1", "f1", "d2"].map((id) => ({ id, type: "t" })),
      { now: NOW },
    );
    const [d1, f1, d2] = await queue.claim({ count: 3, now: NOW });
    await queue.settle(
      [
        { ...d1, outcome: "ack" },
        { ...f1, outcome: "fail", error: "x" },
      ],
      { now: NOW },
    );
    await queue.ack([d2], { now: NOW + DAY });
    expect(await queue.trim({ now: NOW + DAY + 1 })).toEqual({ done: 1, failed: 0 });
    expect(await queue.trim({ now: NOW + 2 * DAY + 1 })).toEqual({ done: 1, failed: 1 });
    // No task's record is left (fields "#..." are the queue's own: the lease counter, the v0 guard).
    expect((await redis.hkeys(queue.keys.task)).filter((field) => !field.startsWith("#"))).toEqual([]);
    expect((await queue.enqueue([{ id: "d1", type: "t" }], { now: NOW + 3 * DAY }))[0].status).toBe("ok");
  });

  it("requeue sends FAILED tasks back to READY with fresh attempts and rejects others", async () => {
    const queue = await fresh();
    await queue.enqueue(
      ["f", "r"].map((id) => ({ id, type: "t", payload: { id } })),
      { now: NOW },
    );
    const [f] = await queue.claim({ count: 1, now: NOW });
    await queue.settle([{ ...f, outcome: "fail", error: "boom" }], { now: NOW });
    expect(await queue.admin.requeue(["f", "r", "nobody"], { now: NOW + 1 })).toEqual([
      { id: "f", status: "ok" },
      { id: "r", status: "not_failed" },
      { id: "nobody", status: "unknown_id" },
    ]);
    expect(await queue.admin.inspect("f")).toMatchObject({
      state: "ready",
      attempts: 0,
      lastError: "boom",
      payload: '{"id":"f"}',
    });
    // A repeated requeue (a retry after a lost reply) answers ok and changes nothing.
    expect(await queue.admin.requeue(["f"], { now: NOW + 1 })).toEqual([{ id: "f", status: "ok" }]);
    const [again] = await queue.claim({ count: 1, now: NOW + 2 });
    expect(again).toMatchObject({ id: "f", attempt: 1 });
    await assertConsistent(redis, queue);
  });

  it("list pages through a state in its order", async () => {
    const queue = await fresh();
    await queue.enqueue(
      ["a", "b", "c"].map((id, i) => ({ id, type: `type${i}`, priority: 3 - i })),
      { now: NOW },
    );
    expect((await queue.admin.list("ready", { limit: 2 })).map((t) => [t.id, t.type])).toEqual([
      ["c", "type2"],
      ["b", "type1"],
    ]);
    expect((await queue.admin.list("ready", { offset: 2 })).map((t) => t.id)).toEqual(["a"]);
    await expect(queue.admin.list("lost" as never)).rejects.toThrow(
      /list: state must be one of ready, scheduled, leased, done, failed, corrupt, got "lost"/,
    );
  });

  it("inspect answers undefined for an unknown id and rejects a malformed one", async () => {
    const queue = await fresh();
    expect(await queue.admin.inspect("nobody")).toBeUndefined();
    await expect(queue.admin.inspect("no body")).rejects.toBeInstanceOf(InvalidInputError);
  });
});
