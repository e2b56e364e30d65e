import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../shared/errors.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, queueFixture, snapshot } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("settle over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter, { defaultPolicy: { leaseMs: 1_000, maxAttempts: 3 } });
  async function leased(ids: string[], options = {}) {
    const queue = await fresh(options);
    await queue.enqueue(
      ids.map((id) => ({ id, type: "t", payload: { id } })),
      { now: NOW },
    );
    const claimed = await queue.claim({ count: ids.length, now: NOW });
    return { queue, claimed };
  }

  it("acks to DONE, drops the payload, and answers a repeated ack with already_done", async () => {
    const { queue, claimed } = await leased(["a", "b"]);
    expect(await queue.ack(claimed, { now: NOW + 10 })).toEqual([
      { id: "a", status: "ok", state: "done" },
      { id: "b", status: "ok", state: "done" },
    ]);
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "done", payload: "", finishedAt: NOW + 10 });
    expect(await redis.zscore(queue.keys.done, "a")).toBe(String(NOW + 10));
    expect(await queue.ack([claimed[0]], { now: NOW + 20 })).toEqual([
      { id: "a", status: "already_done", state: "done" },
    ]);
    // No redelivery after a confirmed ack.
    expect(await queue.claim({ count: 10, now: NOW + 10_000_000 })).toEqual([]);
    await assertConsistent(redis, queue);
  });

  it("reports stale tokens and unknown ids per item without holding back the good ones", async () => {
    const { queue, claimed } = await leased(["a", "b"]);
    const results = await queue.settle(
      [
        { id: "a", token: "999.9", outcome: "ack" },
        { id: "nobody", token: claimed[1].token, outcome: "ack" },
        { id: "b", token: claimed[1].token, outcome: "ack" },
      ],
      { now: NOW },
    );
    expect(results.map((r) => r.status)).toEqual(["stale_token", "unknown_id", "ok"]);
    expect((await queue.admin.inspect("a"))?.state).toBe("leased");
  });

  it("schedules a retry at the given time with its rank kept, records the error, then fails it when attempts run out", async () => {
    const { queue, claimed } = await leased(["r1", "r2"]);
    const rankOfR1 = claimed[0].rank;
    const retryAt = NOW + 5_000;
    const [result] = await queue.settle([{ ...claimed[0], outcome: "retry", retryAtMs: retryAt, error: "timeout" }], {
      now: NOW,
    });
    expect(result).toEqual({ id: "r1", status: "ok", state: "scheduled" });
    expect(await redis.zscore(queue.keys.scheduled, "r1")).toBe(String(retryAt));
    expect(await queue.admin.inspect("r1")).toMatchObject({
      state: "scheduled",
      lastError: "timeout",
      attempts: 1,
      dueAt: retryAt,
    });

    // Attempt 2 and 3 fail too; the third has no attempts left: FAILED with its error and payload kept.
    let now = retryAt;
    for (const attempt of [2, 3]) {
      const [task] = await queue.claim({ count: 1, now });
      expect(task).toMatchObject({ id: "r1", attempt, rank: rankOfR1 });
      const [settled] = await queue.settle(
        [{ ...task, outcome: "retry", retryAtMs: now + 1, error: `err ${attempt}` }],
        { now },
      );
      expect(settled.state).toBe(attempt === 3 ? "failed" : "scheduled");
      now += 1;
    }
    expect(await queue.admin.inspect("r1")).toMatchObject({
      state: "failed",
      attempts: 3,
      lastError: "err 3",
      payload: '{"id":"r1"}',
    });
    await assertConsistent(redis, queue);
  });

  it("sends a retry due now straight back to READY, and a fatal nack to FAILED at once", async () => {
    const { queue, claimed } = await leased(["now", "fatal"]);
    const results = await queue.settle(
      [
        { ...claimed[0], outcome: "retry", retryAtMs: NOW, error: "again" },
        { ...claimed[1], outcome: "fail", error: "bad payload" },
      ],
      { now: NOW },
    );
    expect(results.map((r) => r.state)).toEqual(["ready", "failed"]);
    expect(await queue.admin.inspect("fatal")).toMatchObject({ attempts: 1, lastError: "bad payload" });
  });

  it("answers a repeated retry or fail with the same token ok, changing nothing; a repeated ack stays already_done", async () => {
    const { queue, claimed } = await leased(["rr", "ff"]);
    const items = [
      { ...claimed[0], outcome: "retry" as const, retryAtMs: NOW + 500, error: "later" },
      { ...claimed[1], outcome: "fail" as const, error: "poison" },
    ];
    expect((await queue.settle(items, { now: NOW })).map((r) => [r.status, r.state])).toEqual([
      ["ok", "scheduled"],
      ["ok", "failed"],
    ]);
    const before = await snapshot(redis, queue);
    expect((await queue.settle(items, { now: NOW + 1 })).map((r) => [r.status, r.state])).toEqual([
      ["ok", "scheduled"],
      ["ok", "failed"],
    ]);
    expect(await snapshot(redis, queue)).toEqual(before);
    // A fail replayed onto a task that was retried is not what happened: stale.
    expect((await queue.settle([{ ...claimed[0], outcome: "fail", error: "x" }], { now: NOW + 2 }))[0].status).toBe(
      "stale_token",
    );
    // A reclaim revokes the token too: a late retry of an expired lease is stale, not a replay.
    const { queue: other, claimed: late } = await leased(["late"]);
    expect((await other.reclaim({ now: NOW + 60_000 })).reclaimed).toEqual(["late"]);
    const [lateRetry] = await other.settle([{ ...late[0], outcome: "retry", retryAtMs: NOW, error: "x" }], {
      now: NOW + 60_001,
    });
    expect(lateRetry).toEqual({ id: "late", status: "stale_token", state: "ready" });
    // Once claimed again, the old token is stale for every outcome.
    const [again] = await queue.claim({ count: 1, now: NOW + 500 });
    expect(again.id).toBe("rr");
    expect((await queue.settle([items[0]], { now: NOW + 501 }))[0].status).toBe("stale_token");
  });

  it("caps the error text at 2048 bytes", async () => {
    const { queue, claimed } = await leased(["long"]);
    await queue.settle([{ ...claimed[0], outcome: "fail", error: "é".repeat(5000) }], { now: NOW });
    const info = await queue.admin.inspect("long");
    expect(Buffer.byteLength(info?.lastError ?? "")).toBe(2048);
  });

  it("refuses a zombie ack after reclaim and re-claim, and changes nothing", async () => {
    const { queue, claimed } = await leased(["z"]);
    const zombie = claimed[0];
    // Its holder confirmed it (its handler started), then stopped heartbeating.
    await queue.extend([{ ...zombie, leaseMs: 1_000 }], { now: NOW });
    const reclaimed = await queue.reclaim({ now: NOW + 1_000 + 2_001 });
    expect(reclaimed.reclaimed).toEqual(["z"]);
    const [live] = await queue.claim({ count: 1, now: NOW + 4_000 });
    expect(live.attempt).toBe(2);
    const before = await snapshot(redis, queue);
    expect(await queue.ack([zombie], { now: NOW + 4_001 })).toEqual([
      { id: "z", status: "stale_token", state: "leased" },
    ]);
    expect(await queue.extend([{ ...zombie, leaseMs: 60_000 }], { now: NOW + 4_001 })).toEqual([
      { id: "z", status: "stale_token", leaseDeadlineMs: undefined },
    ]);
    expect(await snapshot(redis, queue)).toEqual(before);
    expect(await queue.ack([live], { now: NOW + 4_002 })).toEqual([{ id: "z", status: "ok", state: "done" }]);
  });

  it("rejects malformed items before sending anything", async () => {
    const { queue, claimed } = await leased(["m"]);
    const before = await snapshot(redis, queue);
    const bad = [
      [
        { id: "m", token: claimed[0].token, outcome: "maybe" },
        /item 1 \(id m\): outcome must be "ack", "retry" or "fail", got "maybe"/,
      ],
      [
        { id: "m", token: claimed[0].token, outcome: "retry", retryAtMs: Number.NaN, error: "" },
        /retryAtMs must be an integer/,
      ],
      [{ id: "m\n", token: claimed[0].token, outcome: "ack" }, /item 1: id must be/],
      [{ id: "m", token: 5, outcome: "ack" }, /token must be a string, got 5/],
    ] as const;
    for (const [item, message] of bad) {
      const error = await queue.settle([item as never], { now: NOW }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).toMatch(message);
    }
    expect(await snapshot(redis, queue)).toEqual(before);
  });
});
