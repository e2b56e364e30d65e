import { describe, expect, it } from "vitest";
import { assertConsistent, readTasks } from "../helpers/invariants.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const SKEW = 2_000; // the default clock-skew margin of reclaim

describe.each(adapters)("extend, release and reclaim over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);
  async function leased(ids: string[], maxAttempts = 3) {
    const queue = await fresh({ defaultPolicy: { leaseMs: 1_000, maxAttempts } });
    await queue.enqueue(
      ids.map((id) => ({ id, type: "t" })),
      { now: NOW },
    );
    return { queue, claimed: await queue.claim({ count: ids.length, now: NOW }) };
  }

  it("extend pushes the deadline so reclaim leaves the task alone", async () => {
    const { queue, claimed } = await leased(["long"]);
    const [extended] = await queue.extend([{ ...claimed[0], leaseMs: 30_000 }], { now: NOW + 900 });
    expect(extended).toEqual({ id: "long", status: "ok", leaseDeadlineMs: NOW + 30_900 });
    expect((await queue.reclaim({ now: NOW + 10_000 })).reclaimed).toEqual([]);
    expect((await queue.admin.inspect("long"))?.state).toBe("leased");
  });

  it("release puts unstarted tasks back with their rank and their attempt returned", async () => {
    const { queue, claimed } = await leased(["r1", "r2", "r3"]);
    expect(await queue.release(claimed.slice(1), { now: NOW })).toEqual([
      { id: "r2", status: "ok" },
      { id: "r3", status: "ok" },
    ]);
    expect(await queue.release(claimed.slice(1, 2), { now: NOW })).toEqual([{ id: "r2", status: "stale_token" }]);
    expect(await queue.admin.inspect("r2")).toMatchObject({ state: "ready", attempts: 0 });
    const again = await queue.claim({ count: 5, now: NOW });
    expect(again.map((t) => [t.id, t.attempt])).toEqual([
      ["r2", 1],
      ["r3", 1],
    ]);
    await assertConsistent(redis, queue);
  });

  it("release keeps the attempt of a lease its holder confirmed, and ends FAILED one that was the last", async () => {
    const { queue, claimed } = await leased(["ran", "last"], 2);
    await queue.extend(
      claimed.map((task) => ({ ...task, leaseMs: 1_000 })),
      { now: NOW },
    ); // handlers started
    await queue.release(claimed, { now: NOW + 1 });
    expect(await queue.admin.inspect("ran")).toMatchObject({ state: "ready", attempts: 1 });
    const [second] = await queue.claim({ count: 1, now: NOW + 2 });
    expect(second).toMatchObject({ id: "ran", attempt: 2 });
    await queue.extend([{ ...second, leaseMs: 1_000 }], { now: NOW + 3 });
    await queue.release([second], { now: NOW + 4 });
    // Its last attempt ran: no claim may run it a third time.
    expect(await queue.admin.inspect("ran")).toMatchObject({
      state: "failed",
      attempts: 2,
      lastError: "released after attempt 2 of 2",
    });
    expect((await queue.claim({ count: 5, now: NOW + 5 })).map((task) => task.id)).toEqual(["last"]);
    await assertConsistent(redis, queue);
  });

  it("reclaim returns only expired leases (past the skew margin), keeping rank order", async () => {
    const { queue, claimed } = await leased(["a", "b", "c", "d"]);
    await queue.extend([{ ...claimed[1], leaseMs: 60_000 }], { now: NOW });
    expect((await queue.reclaim({ now: NOW + 1_000 + SKEW })).reclaimed).toEqual([]);
    const result = await queue.reclaim({ now: NOW + 1_001 + SKEW });
    expect(result.reclaimed.sort()).toEqual(["a", "c", "d"]);
    await queue.enqueue([{ id: "newer", type: "t", priority: 0 }], { now: NOW + 5_000 });
    // Reclaimed tasks keep their original rank: they come before tasks enqueued after them. A first
    // stall runs with the rest (a whole worker killed once is no reason to run its tasks one by one).
    const batch = await queue.claim({ count: 10, now: NOW + 5_000 });
    expect(batch.map((t) => [t.id, t.solo])).toEqual([
      ["a", false],
      ["c", false],
      ["d", false],
      ["newer", false],
    ]);
    await assertConsistent(redis, queue);
  });

  it("a lease never confirmed gives its attempt back when it runs out; a confirmed one keeps it; both count a stall", async () => {
    const { queue, claimed } = await leased(["unstarted", "started"]);
    // Only the second one's holder confirmed it (a heartbeat: its handler runs).
    await queue.extend([{ ...claimed[1], leaseMs: 1_000 }], { now: NOW });
    expect((await queue.reclaim({ now: NOW + 60_000 })).reclaimed.sort()).toEqual(["started", "unstarted"]);
    expect(await queue.admin.inspect("unstarted")).toMatchObject({ state: "ready", attempts: 0, stalls: 1 });
    expect(await queue.admin.inspect("started")).toMatchObject({ state: "ready", attempts: 1, stalls: 1 });
    const again = await queue.claim({ count: 10, now: NOW + 60_000 });
    expect(again.map((t) => [t.id, t.attempt])).toEqual([
      ["unstarted", 1],
      ["started", 2],
    ]);
    await assertConsistent(redis, queue);
  });

  it("hands a task that stalled twice out alone, cutting the batch before it, to a caller running nothing", async () => {
    const { queue, claimed } = await leased(["m1", "crasher", "m3"]);
    await queue.ack([claimed[0], claimed[2]], { now: NOW });
    expect((await queue.reclaim({ now: NOW + 60_000 })).reclaimed).toEqual(["crasher"]);
    // Its second lease runs out too: from now on it runs alone.
    const [second] = await queue.claim({ count: 1, now: NOW + 60_000 });
    expect(second).toMatchObject({ id: "crasher", solo: false });
    expect((await queue.reclaim({ now: NOW + 120_000 })).reclaimed).toEqual(["crasher"]);
    expect(await queue.admin.inspect("crasher")).toMatchObject({ state: "ready", stalls: 2 });
    await queue.enqueue(
      [
        { id: "before", type: "t", priority: -10 },
        { id: "after1", type: "t" },
        { id: "after2", type: "t" },
      ],
      { now: NOW + 120_000 },
    );
    const claim = async (busy = false) => {
      const outcome = await queue.claimOrNextDue({ count: 10, now: NOW + 120_001, busy });
      return {
        ids: outcome.tasks.map((t) => t.id),
        solo: outcome.tasks.map((t) => t.solo),
        waiting: outcome.soloWaiting,
      };
    };
    // "before" ranks ahead of it: the batch stops where the solo task would join it.
    expect(await claim()).toEqual({ ids: ["before"], solo: [false], waiting: false });
    // A caller running other tasks leaves it READY and is told it waits; the tasks after it are its.
    expect(await claim(true)).toEqual({ ids: ["after1", "after2"], solo: [false, false], waiting: true });
    expect(await claim()).toEqual({ ids: ["crasher"], solo: [true], waiting: false });
    // Claimed alone once, it keeps no mark but its lease's (a): run alone.
    expect((await readTasks(redis, queue)).get("crasher")?.flags).toBe("a");
    await assertConsistent(redis, queue);
  });

  it("reclaim fails a task whose confirmed run was its last attempt, and one stalled maxStalls times, with the reason", async () => {
    const { queue, claimed } = await leased(["once"], 1);
    await queue.extend([{ ...claimed[0], leaseMs: 1_000 }], { now: NOW });
    const result = await queue.reclaim({ now: NOW + 60_000 });
    expect(result).toEqual({ reclaimed: [], failed: ["once"], more: false });
    expect(await queue.admin.inspect("once")).toMatchObject({
      state: "failed",
      lastError: "lease expired after attempt 1 of 1",
      stalls: 1,
    });
    // Never confirmed, a task is never charged an attempt by a reclaim: its stalls end it.
    const stalling = await fresh({ defaultPolicy: { leaseMs: 1_000, maxAttempts: 1 }, maxStalls: 2 });
    await stalling.enqueue([{ id: "s", type: "t" }], { now: NOW });
    for (const at of [NOW, NOW + 60_000]) {
      await stalling.claim({ count: 1, now: at });
      await stalling.reclaim({ now: at + 30_000 });
    }
    expect(await stalling.admin.inspect("s")).toMatchObject({
      state: "failed",
      attempts: 0,
      stalls: 2,
      lastError: "stalled 2 times (the lease ran out while held: its worker stopped), at most 2",
    });
    await assertConsistent(redis, stalling);
  });

  it("reclaim moves at most `limit` per call and says when more remain", async () => {
    const { queue } = await leased(["x1", "x2", "x3"]);
    const first = await queue.reclaim({ now: NOW + 60_000, limit: 2 });
    expect(first.reclaimed).toHaveLength(2);
    expect(first.more).toBe(true);
    const second = await queue.reclaim({ now: NOW + 60_000, limit: 2 });
    expect(second).toMatchObject({ reclaimed: ["x3"], more: false });
  });

  it("several reclaimers at once move each expired id once, without extra attempts", async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `c${i}`);
    const { queue } = await leased(ids);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => queue.reclaim({ now: NOW + 60_000, limit: 50 })),
    );
    const moved = results.flatMap((r) => r.reclaimed);
    expect(moved.length).toBe(200);
    expect(new Set(moved).size).toBe(moved.length);
    while ((await queue.reclaim({ now: NOW + 60_000 })).reclaimed.length > 0);
    const tasks = await assertConsistent(redis, queue);
    // Never confirmed by a heartbeat: each attempt was given back, and a stall counted once.
    for (const id of ids) expect(tasks.get(id)).toMatchObject({ state: "R", attempts: 0 });
    expect((await queue.admin.inspect("c7"))?.stalls).toBe(1);
  });
});
