// "At least once, never lost, fenced" under groups, rates and the operator's controls, each case
// through the public API (numbered 1-12), on a real redis-server over both stores. Each ends with the queue's own consistency check.
import { describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import type { ClaimedTask, TypeGroupPolicy } from "../../shared/types.js";
import { expectClean } from "../helpers/check.js";
import { ack, adapters, failTasks, ids, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("guarantees over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);

  /** A queue whose type "job" runs each group by `policy`, holding `taskIds` in group "g", enqueued in that order at NOW. */
  async function groupG(policy: TypeGroupPolicy, taskIds: string[]): Promise<Queue> {
    const queue = await fresh({ typeGroups: { job: policy } });
    await queue.enqueue(
      taskIds.map((id) => ({ id, type: "job", group: "g" })),
      { now: NOW },
    );
    return queue;
  }

  it("1: a stale holder's ack never settles a later incarnation of its id (delete, then enqueue again)", async () => {
    const queue = await fresh();
    // The head of priority 0 stays put (its type is paused), so the group's turn is the same both times.
    await queue.enqueue([{ id: "head", type: "other" }], { now: NOW });
    await queue.admin.pause({ now: NOW, type: "other" });
    await queue.enqueue([{ id: "x", type: "job", group: "g" }], { now: NOW });
    const [old] = await queue.claim({ count: 1, now: NOW });
    expect(old.id).toBe("x");
    expect(await queue.admin.cancel(["x"], { now: NOW + 1 })).toEqual([{ id: "x", status: "ok" }]);
    expect(await queue.admin.delete(["x"])).toEqual([{ id: "x", status: "ok" }]);
    await queue.enqueue([{ id: "x", type: "job", group: "g" }], { now: NOW + 2 });
    const [renewed] = await queue.claim({ count: 1, now: NOW + 3 });
    expect(renewed.id).toBe("x");
    expect(renewed.token).not.toBe(old.token);
    expect(await ack(queue, [old], NOW + 4)).toEqual([{ id: "x", status: "stale_token", state: "leased" }]);
    expect(await ack(queue, [renewed], NOW + 5)).toEqual([{ id: "x", status: "ok", state: "done" }]);
    await expectClean(queue, NOW + 6);
  });

  it("3: a parked task whose record cannot be read is quarantined, not dropped", async () => {
    const queue = await groupG({ concurrency: 1 }, ["a", "b"]);
    const claimed = await queue.claim({ count: 10, now: NOW });
    expect(ids(claimed)).toEqual(["a"]); // b is parked behind a
    await redis.hset(queue.keys.task, "b:s", "W|0|0|not a state");
    await ack(queue, claimed, NOW + 1); // a's slot is free: b's turn, and its record is unreadable
    expect((await queue.stats({ now: NOW + 2 })).corrupt).toBe(1);
    expect(await queue.admin.inspect("b")).toMatchObject({ state: "corrupt" });
    expect((await queue.admin.list("corrupt")).map((task) => task.id)).toEqual(["b"]);
    await expectClean(queue, NOW + 3);
  });

  it("4: a filtered delete or purge leaves a task that moved on since it was found", async () => {
    const queue = await fresh();
    await failTasks(queue, ["f1", "f2", "f3"], { now: NOW });
    const found = (await queue.admin.find("failed", {})).tasks.map((task) => task.id);
    expect(found).toEqual(["f1", "f2", "f3"]);
    await queue.admin.requeue(["f2"], { now: NOW + 1 }); // an operator (or the dashboard) requeues f2 meanwhile
    expect(await queue.admin.delete(found, { state: "failed" })).toEqual([
      { id: "f1", status: "ok" },
      { id: "f2", status: "not_in_state" },
      { id: "f3", status: "ok" },
    ]);
    expect((await queue.admin.inspect("f2"))?.state).toBe("ready");
    await queue.admin.delete(["f2"]);

    // purge: a requeue lands between the page it read and the delete it sends.
    await failTasks(queue, ["g1", "g2"], { now: NOW + 10 });
    const context = (queue as unknown as { context: { store: Store } }).context;
    const store = context.store;
    const original = store.evalScript.bind(store);
    let raced = false;
    context.store = {
      ...store,
      evalScript: async (script, keys, args) => {
        if (script.name === "delete" && !raced) {
          raced = true;
          await queue.admin.requeue(["g1"], { now: NOW + 11 });
        }
        return original(script, keys, args);
      },
      close: () => store.close(),
    };
    expect(await queue.admin.purge("failed")).toBe(1);
    expect((await queue.admin.inspect("g1"))?.state).toBe("ready");
    expect(await queue.admin.inspect("g2")).toBeUndefined();
    context.store = store;
    await expectClean(queue, NOW + 12);
  });

  it.each([
    ["cancelling", (queue: Queue) => queue.admin.cancel(["poison"], { now: NOW + 3 })],
    ["deleting", (queue: Queue) => queue.admin.delete(["poison"])],
  ])("6: %s the task an ordered queue waits for ends the wait", async (_, end) => {
    const queue = await fresh({ ordered: true, policies: { job: { leaseMs: 10_000, maxAttempts: 5 } } });
    await queue.enqueue(
      [
        { id: "poison", type: "job" },
        { id: "next", type: "job" },
      ],
      { now: NOW },
    );
    const [poison] = await queue.claim({ count: 1, now: NOW });
    const year = 366 * 24 * 3600 * 1000;
    await queue.settle([{ id: poison.id, token: poison.token, outcome: "retry", retryAtMs: NOW + year, error: "x" }], {
      now: NOW + 1,
    });
    expect(await queue.claim({ count: 1, now: NOW + 2 })).toEqual([]); // held for the retry
    await end(queue);
    expect(ids(await queue.claim({ count: 1, now: NOW + 4 }))).toEqual(["next"]);
    await expectClean(queue, NOW + 5);
  });

  it("7: a type whose rate is used up does not hold back the types behind it", async () => {
    const queue = await fresh({ typeGroups: { slow: { typeRate: { max: 1, perMs: 60_000 } } } });
    for (let start = 0; start < 1_100; start += 500) {
      const batch = Array.from({ length: Math.min(500, 1_100 - start) }, (_, i) => ({
        id: `s${start + i}`,
        type: "slow",
      }));
      await queue.enqueue(batch, { now: NOW });
    }
    await queue.enqueue([{ id: "quick", type: "fast" }], { now: NOW });
    expect(ids(await queue.claim({ count: 5, now: NOW }))).toEqual(["s0"]);
    // Its window is used: the claims that follow reach the other type within a claim or two.
    const seen: string[] = [];
    for (let i = 0; i < 3 && !seen.includes("quick"); i++) {
      seen.push(...ids(await queue.claim({ count: 5, now: NOW + 1 + i })));
    }
    expect(seen).toEqual(["quick"]);
    await expectClean(queue, NOW + 10);
  });

  it("8: a task without a group is not starved by a steady backlog of groups (the fairness bound)", async () => {
    const queue = await fresh();
    const groups = 20;
    let n = 0;
    const refill = async (count: number, now: number) => {
      const batch = Array.from({ length: count }, () => {
        n++;
        return { id: `g${n}`, type: "job", group: `tenant-${n % groups}` };
      });
      await queue.enqueue(batch, { now });
    };
    await refill(groups * 10, NOW);
    await queue.enqueue([{ id: "lonely", type: "job" }], { now: NOW });
    // Tasks without a group take turns as one more group: the lonely task is the first of its group,
    // so at most 2 × 21 claims (docs/groups.md) come before it, while the groups stay backlogged.
    const before: string[] = [];
    for (let step = 0; step < 100; step++) {
      const claimed = await queue.claim({ count: 1, now: NOW + step });
      expect(claimed).toHaveLength(1);
      if (claimed[0].id === "lonely") break;
      before.push(claimed[0].id);
      await ack(queue, claimed, NOW + step);
      await refill(1, NOW + step);
    }
    expect(before.length).toBeLessThanOrEqual(2 * (groups + 1));
    await expectClean(queue, NOW + 200);
  });

  it("9: naming a parked task twice in one delete counts it once", async () => {
    const queue = await groupG({ concurrency: 1 }, ["a", "b", "c"]);
    const first = await queue.claim({ count: 10, now: NOW });
    expect(ids(first)).toEqual(["a"]);
    expect(await queue.admin.delete(["b", "b"])).toEqual([
      { id: "b", status: "ok" },
      { id: "b", status: "ok" },
    ]);
    await ack(queue, first, NOW + 1);
    expect(ids(await queue.claim({ count: 10, now: NOW + 2 }))).toEqual(["c"]);
    await expectClean(queue, NOW + 3);
  });

  it("10: an ordered group whose head was quarantined goes on with its next task", async () => {
    const queue = await groupG({ ordered: true }, ["a", "b"]);
    await redis.hset(queue.keys.task, "a:s", "R|garbage");
    expect(await queue.claim({ count: 10, now: NOW })).toEqual([]);
    expect((await queue.admin.inspect("a"))?.state).toBe("corrupt");
    // The group's turn passes to b once the quarantined head is out of it (here: deleted).
    await queue.admin.delete(["a"]);
    expect(ids(await queue.claim({ count: 10, now: NOW + 1 }))).toEqual(["b"]);
    await expectClean(queue, NOW + 2);
  });

  it("11: a caller whose clock is 1 ms behind never reopens a type's rate window", async () => {
    const queue = await fresh({ typeGroups: { job: { typeRate: { max: 1, perMs: 1_000 } } } });
    await queue.enqueue(
      Array.from({ length: 20 }, (_, i) => ({ id: `t${i}`, type: "job" })),
      { now: NOW },
    );
    let claimed = 0;
    const boundary = NOW - (NOW % 1_000) + 1_000; // the next window starts here
    for (let i = 0; i < 10; i++) {
      claimed += (await queue.claim({ count: 1, now: boundary - 1 })).length; // worker A, 1 ms behind
      claimed += (await queue.claim({ count: 1, now: boundary })).length; // worker B
    }
    // At most twice `max` over any span of one interval (docs/groups.md).
    expect(claimed).toBeLessThanOrEqual(2);
    await expectClean(queue, boundary + 1);
  });

  it("12: cancelling a DONE or FAILED task whose record cannot be read moves it to corrupt alone", async () => {
    const queue = await fresh();
    await failTasks(queue, ["f"], { now: NOW });
    await queue.enqueue([{ id: "d", type: "job" }], { now: NOW });
    await ack(queue, await queue.claim({ count: 1, now: NOW }), NOW);
    await redis.hset(queue.keys.task, "f:s", "F|broken", "d:s", "D|broken");
    expect(await queue.admin.cancel(["f", "d"], { now: NOW + 1 })).toEqual([
      { id: "f", status: "corrupt" },
      { id: "d", status: "corrupt" },
    ]);
    expect(await redis.zscore(queue.keys.failed, "f")).toBeNull();
    expect(await redis.zscore(queue.keys.done, "d")).toBeNull();
    expect((await queue.stats({ now: NOW + 2 })).corrupt).toBe(2);
    await expectClean(queue, NOW + 3);
  });

  it("3b: a quarantined task stays out: its worker's token settles nothing, a cancel does not bring it back", async () => {
    const queue = await fresh();
    await queue.enqueue([{ id: "x", type: "job" }], { now: NOW });
    const claimed = await queue.claim({ count: 1, now: NOW });
    await redis.hdel(queue.keys.task, "x"); // its body is lost while its worker runs it
    const repaired = await queue.admin.checkAll({ now: NOW + 1, repair: true });
    expect(repaired.map((problem) => problem.code)).toEqual(["no_body"]);
    expect((await queue.admin.inspect("x"))?.state).toBe("corrupt");
    // Its state still reads as a lease with that token: only the mark keeps the worker out.
    expect(await ack(queue, claimed, NOW + 2)).toEqual([{ id: "x", status: "corrupt", state: "corrupt" }]);
    expect(await queue.admin.cancel(["x", "x"], { now: NOW + 3 })).toEqual([
      { id: "x", status: "corrupt" },
      { id: "x", status: "corrupt" },
    ]);
    expect(await redis.zscore(queue.keys.failed, "x")).toBeNull();
    expect(await redis.zscore(queue.keys.done, "x")).toBeNull();
    expect((await queue.stats({ now: NOW + 4 })).corrupt).toBe(1);
    expect(await queue.admin.inspect("x")).toMatchObject({
      state: "corrupt",
      type: "job",
      lastError: "a task without its body",
    });
    await expectClean(queue, NOW + 5);
  });

  it.each([
    ["releasing", (queue: Queue, task: ClaimedTask) => queue.release([task], { now: NOW + 1 })],
    [
      "extending",
      async (queue: Queue, task: ClaimedTask) =>
        (await queue.extend([{ ...task, leaseMs: 1_000 }], { now: NOW + 1 })).map(({ id, status, leaseDeadlineMs }) => {
          expect(leaseDeadlineMs).toBeUndefined();
          return { id, status };
        }),
    ],
  ] as const)(
    "3d: %s a lease whose record cannot be read sets it aside at once, its group's slot freed",
    async (_, call) => {
      const queue = await fresh({ typeGroups: { job: { concurrency: 1 } } });
      await queue.enqueue(
        ["r1", "r2"].map((id) => ({ id, type: "job", group: "g" })),
        { now: NOW },
      );
      const [task] = await queue.claim({ count: 1, now: NOW });
      await redis.hset(queue.keys.task, `${task.id}:s`, "L|garbled"); // its state cannot be read
      expect(await call(queue, task)).toEqual([{ id: task.id, status: "corrupt" }]);
      expect(await queue.admin.inspect(task.id)).toMatchObject({ state: "corrupt" });
      expect(await redis.zscore(queue.keys.leased, task.id)).toBeNull();
      // The group's next task runs: the slot the unreadable lease held is free.
      expect((await queue.claim({ count: 1, now: NOW + 2 })).map((next) => next.id)).toEqual(["r2"]);
      await expectClean(queue, NOW + 3);
    },
  );

  it("3c: a parked task deleted while unreadable does not let out the next task given its id", async () => {
    const queue = await groupG({ ordered: true }, ["a", "b"]);
    const [a] = await queue.claim({ count: 10, now: NOW });
    expect(a.id).toBe("a"); // b waits, parked, behind it
    await redis.hset(queue.keys.task, "b:s", "W|not a state");
    // delete cannot name b's member in grouped (its record is what names it): the member stays.
    expect(await queue.admin.delete(["b"], { now: NOW + 1 })).toEqual([{ id: "b", status: "ok" }]);
    await queue.enqueue(
      ["c", "b"].map((id) => ({ id, type: "job", group: "g" })),
      { now: NOW + 2 },
    );
    const order: string[] = [];
    let held = [a];
    for (let step = 3; step < 8 && held.length > 0; step++) {
      await ack(queue, held, NOW + step);
      held = await queue.claim({ count: 10, now: NOW + step });
      order.push(...ids(held));
    }
    expect(order).toEqual(["c", "b"]); // the old b's member let out neither the new b nor anything early
    expect((await queue.stats({ now: NOW + 9 })).corrupt).toBe(0);
    await expectClean(queue, NOW + 9);
  });
});
