// A task's attempts (docs/storage.md, "<id>:h"): each attempt's start, wait, end, outcome and error,
// bounded in count and in bytes, on a real redis-server over both stores.
import { describe, expect, it } from "vitest";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("attempt history over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);

  it("keeps each attempt's start, wait, end, outcome and error: two retries, then DONE", async () => {
    const queue = await fresh({ policies: { etl: { leaseMs: 60_000, maxAttempts: 5 } } });
    await queue.enqueue([{ id: "import-1", type: "etl", group: "acme" }], { now: NOW });
    // Attempt 1 starts 2 s after the enqueue and fails after 3 s; attempt 2 starts 1 s after its retry
    // was due and fails after 4 s; attempt 3 runs 5 s and is done.
    let [lease] = await queue.claim({ count: 1, now: NOW + 2_000 });
    await queue.settle([{ ...lease, outcome: "retry", retryAtMs: NOW + 10_000, error: "row 7: bad date" }], {
      now: NOW + 5_000,
    });
    [lease] = await queue.claim({ count: 1, now: NOW + 11_000 });
    await queue.settle([{ ...lease, outcome: "retry", retryAtMs: NOW + 20_000, error: "timeout\nat step 3" }], {
      now: NOW + 15_000,
    });
    [lease] = await queue.claim({ count: 1, now: NOW + 20_000 });
    const running = await queue.admin.inspect("import-1");
    expect(running?.history.map((attempt) => [attempt.attempt, attempt.outcome])).toEqual([
      [1, "retried"],
      [2, "retried"],
      [3, "running"],
    ]);
    await queue.settle([{ ...lease, outcome: "ack" }], { now: NOW + 25_000 });
    const task = await queue.admin.inspect("import-1");
    expect(task?.history).toEqual([
      {
        attempt: 1,
        startedAtMs: NOW + 2_000,
        waitedMs: 2_000,
        endedAtMs: NOW + 5_000,
        runMs: 3_000,
        outcome: "retried",
        error: "row 7: bad date",
      },
      {
        attempt: 2,
        startedAtMs: NOW + 11_000,
        waitedMs: 1_000,
        endedAtMs: NOW + 15_000,
        runMs: 4_000,
        outcome: "retried",
        error: "timeout\nat step 3",
      },
      {
        attempt: 3,
        startedAtMs: NOW + 20_000,
        waitedMs: 0,
        endedAtMs: NOW + 25_000,
        runMs: 5_000,
        outcome: "done",
        error: "",
      },
    ]);
    await assertConsistent(redis, queue);
    expect(await queue.admin.checkAll({ now: NOW + 26_000 })).toEqual([]);
  });

  it("a task retried 1,000 times keeps its newest historyAttempts, each error cut to maxErrorBytes", async () => {
    const queue = await fresh({
      policies: { etl: { leaseMs: 60_000, maxAttempts: 1000 } },
      historyAttempts: 3,
      maxErrorBytes: 100,
    });
    await queue.enqueue([{ id: "flaky", type: "etl" }], { now: NOW });
    let now = NOW;
    for (let i = 1; i <= 1000; i++) {
      const [lease] = await queue.claim({ count: 1, now });
      expect(lease?.attempt).toBe(i);
      await queue.settle([{ ...lease, outcome: "retry", retryAtMs: now, error: `attempt ${i} ${"x".repeat(500)}` }], {
        now: now + 1,
      });
      now += 2;
    }
    const task = await queue.admin.inspect("flaky");
    expect(task?.state).toBe("failed");
    expect(task?.history.map((attempt) => [attempt.attempt, attempt.outcome])).toEqual([
      [998, "retried"],
      [999, "retried"],
      [1000, "failed"],
    ]);
    expect(task?.history[2].error).toBe(`attempt 1000 ${"x".repeat(100 - "attempt 1000 ".length)}`);
    // The field holds three entries of at most 100 bytes of error each.
    expect(await redis.hstrlen(queue.keys.task, "flaky:h")).toBeLessThan(3 * (100 + 60));
  });

  it("an expired lease is an attempt of its own; the history goes with the task", async () => {
    const queue = await fresh({
      policies: { etl: { leaseMs: 10_000, maxAttempts: 3 } },
      doneRetentionMs: 60_000,
      failedRetentionMs: 60_000,
    });
    await queue.enqueue([{ id: "crash", type: "etl" }], { now: NOW });
    const [lease] = await queue.claim({ count: 1, now: NOW + 1_000 });
    await queue.extend([{ ...lease, leaseMs: 10_000 }], { now: NOW + 2_000 }); // it started: charged
    await queue.tick({ now: NOW + 30_000 });
    const [again] = await queue.claim({ count: 1, now: NOW + 31_000 });
    expect(again.attempt).toBe(2);
    await queue.settle([{ ...again, outcome: "ack" }], { now: NOW + 32_000 });
    const task = await queue.admin.inspect("crash");
    expect(
      task?.history.map((attempt) => [attempt.attempt, attempt.outcome, attempt.startedAtMs, attempt.endedAtMs]),
    ).toEqual([
      [1, "expired", NOW + 1_000, NOW + 30_000],
      [2, "done", NOW + 31_000, NOW + 32_000],
    ]);
    await assertConsistent(redis, queue);
    // Trimmed after its retention: its history field goes with its state.
    await queue.tick({ now: NOW + 32_000 + 61_000 });
    expect(await queue.admin.inspect("crash")).toBeUndefined();
    expect(await redis.hexists(queue.keys.task, "crash:h")).toBe(0);
  });

  it("amend gives a FAILED task a new payload and requeues it, the edit kept in its history; nothing else is amended", async () => {
    const queue = await fresh({
      policies: { etl: { leaseMs: 60_000, maxAttempts: 1 } },
      typeGroups: { etl: { ordered: true, onFailure: "hold" } },
      maxPayloadBytes: 1024,
    });
    await queue.enqueue(
      [
        { id: "f1", type: "etl", group: "acme", payload: { file: "acme.csv", sep: ";" } },
        { id: "f2", type: "etl", group: "acme", payload: { file: "acme-2.csv" } },
      ],
      { now: NOW },
    );
    const [lease] = await queue.claim({ count: 10, now: NOW });
    await queue.settle([{ ...lease, outcome: "fail", error: "row 1: bad separator" }], { now: NOW + 1_000 });
    expect(await queue.claim({ count: 10, now: NOW + 2_000 })).toEqual([]); // acme waits behind f1
    const before = await snapshotOf("f2");
    expect(await queue.admin.amend("f2", { file: "x" }, { now: NOW + 3_000 })).toEqual({
      id: "f2",
      status: "not_failed",
    });
    expect(await snapshotOf("f2")).toEqual(before);
    await expect(queue.admin.amend("f1", { blob: "x".repeat(2000) }, { now: NOW + 3_000 })).rejects.toThrow(
      /amend f1: payload is 2011 bytes as JSON; the cap is 1024 bytes/,
    );
    expect(
      await queue.admin.amend(
        "f1",
        { file: "acme.csv", sep: "," },
        { now: NOW + 4_000, note: "payload edited by ops: sep" },
      ),
    ).toEqual({ id: "f1", status: "ok" });
    // It runs first, in the slot it kept, with the new payload; its history says what happened.
    const [again] = await queue.claim({ count: 10, now: NOW + 5_000 });
    expect([again.id, JSON.parse(again.payload)]).toEqual(["f1", { file: "acme.csv", sep: "," }]);
    const task = await queue.admin.inspect("f1");
    expect(task?.history.map((attempt) => [attempt.attempt, attempt.outcome, attempt.error])).toEqual([
      [1, "failed", "row 1: bad separator"],
      [1, "edited", "payload edited by ops: sep"],
      [1, "running", ""],
    ]);
    await assertConsistent(redis, queue);

    async function snapshotOf(id: string) {
      return redis.hmget(queue.keys.task, id, `${id}:s`, `${id}:h`);
    }
  });
});
