import { describe, expect, it } from "vitest";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("claim over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);

  it("returns tasks in rank order: lower priority first, FIFO within a priority", async () => {
    const queue = await fresh();
    await queue.enqueue(
      [
        { id: "p0-a", type: "t" },
        { id: "p5-a", type: "t", priority: 5 },
        { id: "pm3-a", type: "t", priority: -3 },
        { id: "p0-b", type: "t" },
        { id: "pm3-b", type: "t", priority: -3 },
      ],
      { now: NOW },
    );
    const claimed = await queue.claim({ count: 10, now: NOW });
    expect(claimed.map((t) => t.id)).toEqual(["pm3-a", "pm3-b", "p0-a", "p0-b", "p5-a"]);
    expect(claimed.map((t) => t.priority)).toEqual([-3, -3, 0, 0, 5]);
    expect(claimed.every((t, i) => i === 0 || t.rank > claimed[i - 1].rank)).toBe(true);
  });

  it("treats count as an upper bound and answers [] when nothing is ready", async () => {
    const queue = await fresh();
    expect(await queue.claim({ count: 5, now: NOW })).toEqual([]);
    await queue.enqueue([{ id: "only", type: "t" }], { now: NOW });
    expect(await queue.claim({ count: 5, now: NOW })).toHaveLength(1);
    expect(await queue.claim({ count: 5, now: NOW })).toEqual([]);
  });

  it("leases each task for its type's lease, counts the attempt and issues a unique token", async () => {
    const queue = await fresh({
      policies: { slow: { leaseMs: 300_000, maxAttempts: 2 } },
      defaultPolicy: { leaseMs: 10_000, maxAttempts: 4 },
    });
    await queue.enqueue(
      [
        { id: "s", type: "slow", payload: { n: 1 } },
        { id: "f", type: "fast" },
      ],
      { now: NOW },
    );
    const [slow, fast] = await queue.claim({ count: 2, now: NOW });
    expect(slow).toMatchObject({
      id: "s",
      type: "slow",
      payload: '{"n":1}',
      attempt: 1,
      leaseDeadlineMs: NOW + 300_000,
    });
    expect(fast).toMatchObject({ id: "f", attempt: 1, leaseDeadlineMs: NOW + 10_000 });
    expect(slow.token).not.toBe(fast.token);
    expect(await redis.zscore(queue.keys.leased, "s")).toBe(String(NOW + 300_000));
    expect(await queue.admin.inspect("s")).toMatchObject({ state: "leased", attempts: 1, maxAttempts: 2 });

    // A release gives the attempt back, but the next claim still gets a new token.
    await queue.release([slow], { now: NOW });
    const [again] = await queue.claim({ count: 1, now: NOW });
    expect(again.id).toBe("s");
    expect(again.attempt).toBe(1);
    expect(again.token).not.toBe(slow.token);
    await assertConsistent(redis, queue);
  });

  it("never claims a task before it is due, and promotes it with its enqueue rank once due", async () => {
    const queue = await fresh();
    await queue.enqueue(
      [
        { id: "due-later", type: "t", delayMs: 1_000, priority: -10 },
        { id: "now", type: "t" },
      ],
      { now: NOW },
    );
    expect((await queue.claim({ count: 10, now: NOW + 999 })).map((t) => t.id)).toEqual(["now"]);
    await queue.enqueue([{ id: "now-2", type: "t" }], { now: NOW + 999 });
    // Once due, the high-priority task goes ahead of the ready one.
    expect((await queue.claim({ count: 10, now: NOW + 1_000 })).map((t) => t.id)).toEqual(["due-later", "now-2"]);
    await assertConsistent(redis, queue);
  });

  it("keeps FIFO within a priority across 10,000 tasks", async () => {
    const queue = await fresh();
    const ids = Array.from({ length: 10_000 }, (_, i) => `fifo-${i}`);
    for (let i = 0; i < ids.length; i += 1000) {
      await queue.enqueue(
        ids.slice(i, i + 1000).map((id) => ({ id, type: "t" })),
        { now: NOW },
      );
    }
    const seen: string[] = [];
    for (;;) {
      const batch = await queue.claim({ count: 1000, now: NOW });
      if (batch.length === 0) break;
      seen.push(...batch.map((t) => t.id));
    }
    expect(seen).toEqual(ids);
  });

  it("on an ordered queue claims nothing while any task is leased", async () => {
    const queue = await fresh({ ordered: true });
    await queue.enqueue(
      ["o1", "o2", "o3"].map((id) => ({ id, type: "t" })),
      { now: NOW },
    );
    const [first] = await queue.claim({ count: 1, now: NOW });
    expect(first.id).toBe("o1");
    expect(await queue.claim({ count: 1, now: NOW })).toEqual([]);
    await queue.ack([first], { now: NOW });
    expect((await queue.claim({ count: 5, now: NOW })).map((t) => t.id)).toEqual(["o2", "o3"]);
  });

  it("on an ordered queue holds everything behind a task waiting to retry", async () => {
    const queue = await fresh({ ordered: true });
    await queue.enqueue(
      ["h1", "h2"].map((id) => ({ id, type: "t" })),
      { now: NOW },
    );
    const [first, second] = await queue.claim({ count: 2, now: NOW });
    await queue.settle([{ ...first, outcome: "retry", retryAtMs: NOW + 5_000, error: "busy" }], { now: NOW });
    await queue.release([second], { now: NOW });
    expect(await queue.claim({ count: 2, now: NOW + 4_999 })).toEqual([]);
    expect((await queue.claim({ count: 2, now: NOW + 5_000 })).map((t) => t.id)).toEqual(["h1", "h2"]);
  });
});
