// Large but allowed inputs: thousands of groups waiting for one rate window,
// thousands of leases across the groups of one claim page, and the largest `limit` each
// maintenance call accepts. Redis's Lua refuses to unpack about 8,000 values; no script may fail
// on a size the library lets a caller reach, and none may stop half-way after writing.
import { describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import type { ClaimedTask } from "../../shared/types.js";
import { expectClean } from "../helpers/check.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const tcp = adapters.filter((adapter) => adapter.name === "tcp");

async function enqueueAll(queue: Queue, tasks: Array<{ id: string; type: string; group?: string }>, now: number) {
  for (let i = 0; i < tasks.length; i += 1_000) await queue.enqueue(tasks.slice(i, i + 1_000), { now });
}

async function claimAll(queue: Queue, now: number, max = Number.POSITIVE_INFINITY): Promise<ClaimedTask[]> {
  const all: ClaimedTask[] = [];
  for (;;) {
    const batch = await queue.claim({ count: 1_000, now });
    all.push(...batch);
    if (batch.length === 0 || all.length >= max) return all;
  }
}

describe.each(tcp)("large inputs over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);

  it("5a: 9,000 groups waiting for the same rate window: claims, ticks and promotes go on", async () => {
    const queue = await fresh({ typeGroups: { job: { rate: { max: 1, perMs: 60_000 } } } });
    const groups = 9_000;
    const tasks = [];
    for (let g = 0; g < groups; g++) tasks.push({ id: `a${g}`, type: "job", group: `tenant-${g}` });
    for (let g = 0; g < groups; g++) tasks.push({ id: `b${g}`, type: "job", group: `tenant-${g}` });
    await enqueueAll(queue, tasks, NOW);
    // Each group's first task runs; its second waits for the group's next window.
    const first = await claimAll(queue, NOW);
    expect(first).toHaveLength(groups);
    expect(new Set(first.map((task) => task.id.slice(0, 1)))).toEqual(new Set(["a"]));
    // The claims that meet the second tasks park them: each group waits in groupwait for its window.
    for (let i = 0; i < 20 && (await redis.zcard(queue.keys.ready)) > 0; i++) {
      expect(await queue.claim({ count: 1_000, now: NOW })).toEqual([]);
    }
    expect(await redis.zcard(queue.keys.groupwait)).toBe(groups);
    // The window opens for all 9,000 groups at once.
    const later = NOW + 60_000;
    const tick = await queue.tick({ now: later, wakeHorizonMs: 70_000 });
    expect(tick.ready).toBe(groups);
    expect(await queue.promote({ now: later })).toBeGreaterThanOrEqual(0);
    const second = await claimAll(queue, later + 1);
    expect(second).toHaveLength(groups);
    await expectClean(queue, later + 2);
  }, 120_000);

  it("5b: 8,100 leases held across the groups of one claim page", async () => {
    const queue = await fresh({ typeGroups: { job: { concurrency: 100 } } });
    const tasks = [];
    for (let g = 0; g < 81; g++) {
      for (let i = 0; i < 101; i++) tasks.push({ id: `g${g}-${i}`, type: "job", group: `tenant-${g}` });
    }
    await enqueueAll(queue, tasks, NOW);
    const leased = await claimAll(queue, NOW);
    expect(leased).toHaveLength(8_100); // 100 per group; each group's last waits for a slot
    expect(await queue.claim({ count: 1_000, now: NOW + 1 })).toEqual([]);
    await queue.ack(leased.slice(0, 1_000), { now: NOW + 2 });
    expect((await claimAll(queue, NOW + 3)).length).toBeGreaterThan(0);
    await expectClean(queue, NOW + 4);
  }, 120_000);

  it("5c: promote, reclaim, trim and tick each take their largest limit, 10,000", async () => {
    const n = 10_000;
    const many = (prefix: string, delayMs = 0) =>
      Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, type: "job", delayMs }));
    const open = () => fresh({ policies: { job: { leaseMs: 1_000, maxAttempts: 3 } } });
    // Due later, then promoted in one call.
    const delayed = await open();
    await enqueueAll(delayed, many("d", 1_000), NOW);
    expect(await delayed.promote({ now: NOW + 1_000, limit: n })).toBe(n);
    // Leased, expired, reclaimed in one call.
    const reclaimed = await open();
    await enqueueAll(reclaimed, many("r"), NOW);
    expect(await claimAll(reclaimed, NOW)).toHaveLength(n);
    expect((await reclaimed.reclaim({ now: NOW + 10_000, limit: n })).reclaimed).toHaveLength(n);
    // The same through the tick.
    const ticked = await open();
    await enqueueAll(ticked, many("k"), NOW);
    expect(await claimAll(ticked, NOW)).toHaveLength(n);
    expect((await ticked.tick({ now: NOW + 10_000, limit: n })).reclaimed).toBe(n);
    // Done, then trimmed in one call.
    const trimmed = await open();
    await enqueueAll(trimmed, many("t"), NOW);
    const done = await claimAll(trimmed, NOW);
    for (let i = 0; i < done.length; i += 1_000) await trimmed.ack(done.slice(i, i + 1_000), { now: NOW });
    expect(await trimmed.trim({ now: NOW + 60_000, limit: n, doneRetentionMs: 0 })).toEqual({ done: n, failed: 0 });
    for (const queue of [delayed, reclaimed, ticked, trimmed]) await expectClean(queue, NOW + 60_001);
  }, 300_000);
});
