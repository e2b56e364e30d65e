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
    expect((await queue.inspect("long"))?.state).toBe("leased");
  });

  it("release puts unstarted tasks back with their rank and their attempt returned", async () => {
    const { queue, claimed } = await leased(["r1", "r2", "r3"]);
    expect(await queue.release(claimed.slice(1), { now: NOW })).toEqual([
      { id: "r2", status: "ok" },
      { id: "r3", status: "ok" },
    ]);
    expect(await queue.release(claimed.slice(1, 2), { now: NOW })).toEqual([{ id: "r2", status: "stale_token" }]);
    expect(await queue.inspect("r2")).toMatchObject({ state: "ready", attempts: 0 });
    const again = await queue.claim({ count: 5, now: NOW });
    expect(again.map((t) => [t.id, t.attempt])).toEqual([
      ["r2", 1],
      ["r3", 1],
    ]);
    await assertConsistent(redis, queue);
  });

  it("reclaim returns only expired leases (past the skew margin), keeping rank order", async () => {
    const { queue, claimed } = await leased(["a", "b", "c", "d"]);
    await queue.extend([{ ...claimed[1], leaseMs: 60_000 }], { now: NOW });
    expect((await queue.reclaim({ now: NOW + 1_000 + SKEW })).reclaimed).toEqual([]);
    const result = await queue.reclaim({ now: NOW + 1_001 + SKEW });
    expect(result.reclaimed.sort()).toEqual(["a", "c", "d"]);
    await queue.enqueue([{ id: "newer", type: "t", priority: 0 }], { now: NOW + 5_000 });
    // Reclaimed tasks keep their original rank: they come before tasks enqueued after them, each in a
    // batch of its own (any of them may have crashed its worker).
    const batches: string[][] = [];
    for (let i = 0; i < 4; i++) batches.push((await queue.claim({ count: 10, now: NOW + 5_000 })).map((t) => t.id));
    expect(batches).toEqual([["a"], ["c"], ["d"], ["newer"]]);
    await assertConsistent(redis, queue);
  });

  it("hands a reclaimed task out alone, cutting the batch before it, and forgets it once claimed", async () => {
    const { queue, claimed } = await leased(["m1", "crasher", "m3"]);
    await queue.ack([claimed[0], claimed[2]], { now: NOW });
    expect((await queue.reclaim({ now: NOW + 60_000 })).reclaimed).toEqual(["crasher"]);
    await queue.enqueue(
      [
        { id: "before", type: "t", priority: -10 },
        { id: "after1", type: "t" },
        { id: "after2", type: "t" },
      ],
      { now: NOW + 60_000 },
    );
    const claim = async () => (await queue.claim({ count: 10, now: NOW + 60_001 })).map((t) => t.id);
    // "before" ranks ahead of it: the batch stops where the reclaimed task would join it.
    expect(await claim()).toEqual(["before"]);
    expect(await claim()).toEqual(["crasher"]);
    expect(await claim()).toEqual(["after1", "after2"]);
    // Claimed alone once, it is an ordinary task again: no mark left on it.
    expect((await readTasks(redis, queue)).get("crasher")?.flags).toBe("");
    await assertConsistent(redis, queue);
  });

  it("reclaim fails a task whose attempts are used up, with the reason", async () => {
    const { queue } = await leased(["once"], 1);
    const result = await queue.reclaim({ now: NOW + 60_000 });
    expect(result).toEqual({ reclaimed: [], failed: ["once"], more: false });
    expect(await queue.inspect("once")).toMatchObject({
      state: "failed",
      lastError: "lease expired after attempt 1 of 1",
    });
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
    for (const id of ids) expect(tasks.get(id)).toMatchObject({ state: "R", attempts: 1 });
  });
});
