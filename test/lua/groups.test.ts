// Groups (docs/groups.md): order, concurrency and rate per group, and groups taking turns, on a
// real redis-server over both stores.
import { describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import { assertConsistent } from "../helpers/invariants.js";
import { ack, adapters, ids, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("groups over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);

  /** Claims and acks at NOW until a claim comes back empty (`after` following each ack); the ids run, in order. */
  async function runAll(queue: Queue, after: () => Promise<unknown> = async () => {}): Promise<string[]> {
    const ran: string[] = [];
    for (;;) {
      const claimed = await queue.claim({ count: 10, now: NOW });
      if (claimed.length === 0) return ran;
      ran.push(...ids(claimed));
      await ack(queue, claimed, NOW);
      await after();
    }
  }

  it("a group of concurrency 1 runs one task at a time, in order, while other groups run beside it", async () => {
    const queue = await fresh({ typeGroups: { charge: { concurrency: 1 } } });
    await queue.enqueue(
      [
        { id: "a1", type: "charge", group: "alice" },
        { id: "a2", type: "charge", group: "alice" },
        { id: "a3", type: "charge", group: "alice" },
        { id: "b1", type: "charge", group: "bob" },
        { id: "b2", type: "charge", group: "bob" },
        { id: "n1", type: "charge" },
      ],
      { now: NOW },
    );
    expect((await queue.stats({ now: NOW })).ready).toBe(6);
    const first = await queue.claim({ count: 10, now: NOW });
    expect(ids(first)).toEqual(["a1", "b1", "n1"]);
    await assertConsistent(redis, queue);
    expect(await queue.claim({ count: 10, now: NOW })).toEqual([]);
    await ack(queue, first.slice(0, 1), NOW + 1);
    expect(ids(await queue.claim({ count: 10, now: NOW + 2 }))).toEqual(["a2"]);
    await assertConsistent(redis, queue);
  });

  it("an ordered group runs in rank order while tasks join and leave the parked ones its record names ahead", async () => {
    const queue = await fresh({ typeGroups: { step: { ordered: true } } });
    // "late" comes first by rank but is due later; g1..g12 are READY: g1 runs, the rest park.
    await queue.enqueue([{ id: "late", type: "step", group: "alice", delayMs: 1_000 }], { now: NOW });
    await queue.enqueue(
      Array.from({ length: 12 }, (_, i) => ({ id: `g${i + 1}`, type: "step", group: "alice" })),
      { now: NOW },
    );
    const ran: string[] = [];
    const runOne = async (now: number) => {
      const claimed = await queue.claim({ count: 10, now });
      expect(claimed.length, `one task of an ordered group at a time: ${ids(claimed)}`).toBeLessThanOrEqual(1);
      if (claimed.length === 0) return 0;
      ran.push(...ids(claimed));
      await ack(queue, claimed, now);
      await assertConsistent(redis, queue);
      return claimed.length;
    };
    await runOne(NOW);
    await runOne(NOW); // g2: the record names g3.. ahead now
    expect((await redis.hget(queue.keys.groups, "step|alice"))?.split("|")[6]?.split(",").length).toBeGreaterThan(1);
    // Named ahead, then gone: cancelled and deleted.
    await queue.admin.cancel(["g4"], { now: NOW });
    await queue.admin.delete(["g5"], { now: NOW });
    await assertConsistent(redis, queue);
    // A task of a higher priority parks before all of them; "late" falls due and parks at its rank.
    await queue.enqueue([{ id: "urgent", type: "step", group: "alice", priority: -5 }], { now: NOW + 1 });
    await assertConsistent(redis, queue);
    while ((await runOne(NOW + 2_000)) > 0);
    // g3 was let out as g2 was acked (the group's head): then the rest in rank order.
    expect(ran).toEqual(["g1", "g2", "g3", "urgent", "late", "g6", "g7", "g8", "g9", "g10", "g11", "g12"]);
    const checked = await queue.admin.checkAll({ now: NOW + 2_000 });
    expect(checked).toEqual([]);
  });

  it("the check finds a record naming ahead tasks that are not its first parked ones, and repairs it", async () => {
    const queue = await fresh({ typeGroups: { step: { ordered: true } } });
    await queue.enqueue(
      Array.from({ length: 12 }, (_, i) => ({ id: `g${i + 1}`, type: "step", group: "alice" })),
      { now: NOW },
    );
    for (const _ of [1, 2]) await ack(queue, await queue.claim({ count: 1, now: NOW }), NOW);
    const record = (await redis.hget(queue.keys.groups, "step|alice")) ?? "";
    const fields = record.split("|");
    const named = fields[6].split(",");
    expect(named.length).toBeGreaterThan(2);
    // Its first two swapped: g4 would run before g3.
    fields[6] = [named[1], named[0], ...named.slice(2)].join(",");
    await redis.hset(queue.keys.groups, "step|alice", fields.join("|"));
    const found = await queue.admin.checkAll({ now: NOW });
    expect(found.map((problem) => problem.code)).toEqual(["group_ahead"]);
    expect(found[0].detail).toMatch(/names as its first parked tasks \d+ that are not its first \d+ in grouped/);
    await queue.admin.checkAll({ now: NOW, repair: true });
    expect(await queue.admin.checkAll({ now: NOW })).toEqual([]);
    expect(await runAll(queue)).toEqual(["g3", "g4", "g5", "g6", "g7", "g8", "g9", "g10", "g11", "g12"]);
    await assertConsistent(redis, queue);
  });

  it("reads a group record as the build before the list wrote it (no ahead field), and writes one without a list that way", async () => {
    const queue = await fresh({ typeGroups: { step: { ordered: true } } });
    await queue.enqueue(
      Array.from({ length: 6 }, (_, i) => ({ id: `g${i + 1}`, type: "step", group: "alice" })),
      { now: NOW },
    );
    await ack(queue, await queue.claim({ count: 5, now: NOW }), NOW);
    const fields = ((await redis.hget(queue.keys.groups, "step|alice")) ?? "").split("|");
    expect(fields).toHaveLength(7);
    // What a worker of the build before writes: six fields, its counts and no list.
    await redis.hset(queue.keys.groups, "step|alice", fields.slice(0, 6).join("|"));
    expect(await queue.admin.checkAll({ now: NOW })).toEqual([]);
    expect(await runAll(queue, () => assertConsistent(redis, queue))).toEqual(["g2", "g3", "g4", "g5", "g6"]);
    // A record without a list has no seventh field.
    await queue.enqueue(
      [
        { id: "h1", type: "step", group: "bob" },
        { id: "h2", type: "step", group: "bob" },
      ],
      { now: NOW },
    );
    expect((await redis.hget(queue.keys.groups, "step|bob"))?.split("|")).toHaveLength(6);
  });

  it("a retry of an ordered group holds only its own group until it is done", async () => {
    const queue = await fresh({
      typeGroups: { charge: { ordered: true } },
      policies: { charge: { leaseMs: 30_000, maxAttempts: 5 } },
    });
    await queue.enqueue(
      [
        { id: "a1", type: "charge", group: "alice" },
        { id: "a2", type: "charge", group: "alice" },
        { id: "b1", type: "charge", group: "bob" },
        { id: "b2", type: "charge", group: "bob" },
      ],
      { now: NOW },
    );
    const [a1, b1] = await queue.claim({ count: 10, now: NOW });
    expect([a1.id, b1.id]).toEqual(["a1", "b1"]);
    // a1 fails and is retried in 60 s: alice waits, bob goes on.
    await queue.settle([{ id: a1.id, token: a1.token, outcome: "retry", retryAtMs: NOW + 60_000, error: "declined" }], {
      now: NOW + 1,
    });
    await ack(queue, [b1], NOW + 1);
    expect(ids(await queue.claim({ count: 10, now: NOW + 2 }))).toEqual(["b2"]);
    await assertConsistent(redis, queue);
    expect(await queue.claim({ count: 10, now: NOW + 30_000 })).toEqual([]);
    // At its retry time a1 comes back first, and a2 only after it is done.
    const again = await queue.claim({ count: 10, now: NOW + 60_000 });
    expect(ids(again)).toEqual(["a1"]);
    expect(again[0].attempt).toBe(2);
    expect(await queue.claim({ count: 10, now: NOW + 60_001 })).toEqual([]);
    await ack(queue, again, NOW + 60_002);
    expect(ids(await queue.claim({ count: 10, now: NOW + 60_003 }))).toEqual(["a2"]);
    await assertConsistent(redis, queue);
  });

  it("a group with 5,000 tasks waiting does not delay another group's one task", async () => {
    const queue = await fresh();
    const heavy = Array.from({ length: 1000 }, (_, i) => ({ id: `h${i}`, type: "sync", group: "heavy" }));
    for (let i = 0; i < 5; i++)
      await queue.enqueue(
        heavy.map((task) => ({ ...task, id: `${task.id}-${i}` })),
        { now: NOW },
      );
    await queue.enqueue([{ id: "light", type: "sync", group: "light" }], { now: NOW });
    const claimed = await queue.claim({ count: 10, now: NOW });
    expect(ids(claimed)).toContain("light");
    expect(claimed).toHaveLength(10);
    await assertConsistent(redis, queue);
  });

  it("priorities order a group's tasks, and the groups' heads", async () => {
    const queue = await fresh({ typeGroups: { job: { concurrency: 1 } } });
    await queue.enqueue(
      [
        { id: "low", type: "job", group: "g" },
        { id: "high", type: "job", group: "g", priority: -10 },
        { id: "other", type: "job", group: "h", priority: -5 },
      ],
      { now: NOW },
    );
    const first = await queue.claim({ count: 10, now: NOW });
    expect(ids(first)).toEqual(["high", "other"]);
    await ack(queue, first, NOW + 1);
    expect(ids(await queue.claim({ count: 10, now: NOW + 1 }))).toEqual(["low"]);
    await assertConsistent(redis, queue);
  });

  it("a group's rate allows at most its max claims per interval", async () => {
    const queue = await fresh({ typeGroups: { api: { rate: { max: 2, perMs: 1000 } } } });
    await queue.enqueue(
      Array.from({ length: 5 }, (_, i) => ({ id: `t${i}`, type: "api", group: "acme" })),
      { now: NOW },
    );
    const first = await queue.claim({ count: 10, now: NOW });
    expect(ids(first)).toEqual(["t0", "t1"]);
    expect(await queue.claim({ count: 10, now: NOW + 500 })).toEqual([]);
    await assertConsistent(redis, queue);
    expect(ids(await queue.claim({ count: 10, now: NOW + 1000 }))).toEqual(["t2", "t3"]);
  });

  it("a type's rate holds all its groups together", async () => {
    const queue = await fresh({ typeGroups: { api: { typeRate: { max: 3, perMs: 1000 } } } });
    await queue.enqueue(
      Array.from({ length: 6 }, (_, i) => ({ id: `t${i}`, type: "api", group: `g${i}` })),
      { now: NOW },
    );
    expect(await queue.claim({ count: 10, now: NOW })).toHaveLength(3);
    const none = await queue.claim({ count: 10, now: NOW + 10 });
    expect(none).toEqual([]);
    expect(await queue.claim({ count: 10, now: NOW + 1000 })).toHaveLength(3);
    await assertConsistent(redis, queue);
  });

  it("release, reclaim, cancel and delete keep each group's head and count right", async () => {
    const queue = await fresh({
      typeGroups: { job: { concurrency: 1 } },
      policies: { job: { leaseMs: 1000, maxAttempts: 3 } },
    });
    await queue.enqueue(
      ["g1", "g2", "g3", "g4"].map((id) => ({ id, type: "job", group: "g" })),
      { now: NOW },
    );
    const [one] = await queue.claim({ count: 10, now: NOW });
    await queue.release([{ id: one.id, token: one.token }], { now: NOW + 1 });
    const [again] = await queue.claim({ count: 10, now: NOW + 2 });
    expect(again.id).toBe("g1");
    await assertConsistent(redis, queue);
    // Its lease expires: the reclaim gives it back first.
    await queue.tick({ now: NOW + 10_000 });
    await assertConsistent(redis, queue);
    const [reclaimed] = await queue.claim({ count: 10, now: NOW + 10_001 });
    expect(reclaimed.id).toBe("g1");
    await queue.admin.cancel(["g1", "g2"], { now: NOW + 10_002 });
    await assertConsistent(redis, queue);
    expect(ids(await queue.claim({ count: 10, now: NOW + 10_003 }))).toEqual(["g3"]);
    await queue.admin.delete(["g4"]);
    await assertConsistent(redis, queue);
  });

  it("a task enqueued READY into a group, never claimed, is counted, deleted and cancelled with its group", async () => {
    const queue = await fresh({ typeGroups: { job: { concurrency: 1 } } });
    await queue.enqueue(
      [
        { id: "a1", type: "job", group: "alice", priority: 2 },
        { id: "a2", type: "job", group: "alice", priority: 2 },
        { id: "a3", type: "job", group: "alice" },
        { id: "b1", type: "job", group: "bob" },
      ],
      { now: NOW },
    );
    const counts = async () =>
      Object.fromEntries((await queue.admin.groups()).groups.map((g) => [g.group, [g.ready, g.leased, g.parked]]));
    expect(await counts()).toEqual({ alice: [3, 0, 0], bob: [1, 0, 0] });
    // Never claimed, such a task is found and listed with its group, from its body (a3 first: its
    // priority, 0, runs before 2).
    expect((await queue.admin.inspect("a2"))?.group).toBe("alice");
    expect((await queue.admin.find("ready", { group: "alice" })).tasks.map((task) => task.id)).toEqual([
      "a3",
      "a1",
      "a2",
    ]);
    await queue.admin.delete(["a3"]);
    await queue.admin.cancel(["b1"], { now: NOW + 1 });
    await assertConsistent(redis, queue);
    expect(await counts()).toEqual({ alice: [2, 0, 0] });
    // Within its group a task's turn follows its arrival, at its priority.
    const [first] = await queue.claim({ count: 10, now: NOW + 2 });
    expect(first.id).toBe("a1");
    // Its group full, a2 is parked by the next claim: given a state then, it is still READY since
    // its enqueue.
    expect(await queue.claim({ count: 10, now: NOW + 3 })).toEqual([]);
    expect(await queue.admin.inspect("a2")).toMatchObject({ state: "ready", readySince: NOW, enqueuedAtMs: NOW });
    expect(await counts()).toEqual({ alice: [1, 1, 1] });
    await ack(queue, [first], NOW + 3);
    expect(ids(await queue.claim({ count: 10, now: NOW + 4 }))).toEqual(["a2"]);
    await assertConsistent(redis, queue);
  });
});
