// Waiting that the ready set's head does not show (docs/groups.md "Stuck groups"): tasks parked
// behind their group count in stats' oldestWaitingAgeMs and in each group's age, and the tick counts
// the tasks that finished since it last did, on a real redis-server over both stores.
import { describe, expect, it } from "vitest";
import { assertConsistent } from "../helpers/invariants.js";
import { ack, adapters, ids, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("waiting tasks over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);

  it("a group stuck behind a long task shows in oldestWaitingAgeMs while the ready set is empty", async () => {
    const queue = await fresh({ typeGroups: { etl: { concurrency: 1 } } });
    await queue.enqueue(
      [
        { id: "a1", type: "etl", group: "tenant-a" },
        { id: "a2", type: "etl", group: "tenant-a" },
        { id: "a3", type: "etl", group: "tenant-a" },
        { id: "b1", type: "etl", group: "tenant-b" },
      ],
      { now: NOW },
    );
    // Both heads run; tenant-b finishes, tenant-a's head runs on and its other tasks wait behind it.
    const running = await queue.claim({ count: 10, now: NOW, maxLeaseMs: 600_000 });
    expect(ids(running)).toEqual(["a1", "b1"]);
    await ack(queue, running.slice(1), NOW + 1_000);
    const stats = await queue.stats({ now: NOW + 90_000 });
    expect(stats.ready).toBe(2);
    expect(stats.oldestReadyAgeMs).toBe(0); // nothing in the ready set: what the ETL team saw
    expect(stats.oldestWaitingAgeMs).toBe(90_000);
    const { groups } = await queue.admin.groups({ now: NOW + 90_000 });
    const byName = new Map(groups.map((group) => [group.group, group]));
    expect(byName.get("tenant-a")).toMatchObject({ parked: 2, leased: 1, oldestWaitingAgeMs: 90_000 });
    await assertConsistent(redis, queue);

    // The head is done: a2 is let out and claimed; a3 still waits, since it was enqueued.
    await ack(queue, running.slice(0, 1), NOW + 100_000);
    const a2 = await queue.claim({ count: 10, now: NOW + 100_000 });
    expect(ids(a2)).toEqual(["a2"]);
    expect((await queue.stats({ now: NOW + 120_000 })).oldestWaitingAgeMs).toBe(120_000);
    await assertConsistent(redis, queue);

    // The last one is let out: nothing waits, and the group leaves parkedsince.
    await ack(queue, a2, NOW + 130_000);
    const a3 = await queue.claim({ count: 10, now: NOW + 130_000 });
    expect(ids(a3)).toEqual(["a3"]);
    expect((await queue.stats({ now: NOW + 140_000 })).oldestWaitingAgeMs).toBe(0);
    expect(await redis.zcard(queue.keys.parkedsince)).toBe(0);
    await assertConsistent(redis, queue);
  });

  it("a group's time follows its next parked task when one is let out, and the tick puts a stale one right", async () => {
    const queue = await fresh({ typeGroups: { etl: { concurrency: 1 } } });
    await queue.enqueue([{ id: "a1", type: "etl", group: "t" }], { now: NOW });
    await queue.enqueue([{ id: "a2", type: "etl", group: "t" }], { now: NOW + 10_000 });
    await queue.enqueue([{ id: "a3", type: "etl", group: "t" }], { now: NOW + 20_000 });
    await queue.enqueue([{ id: "a4", type: "etl", group: "t" }], { now: NOW + 30_000 });
    // The claim leases a1 and parks the rest behind it: the group waits since a2 became READY.
    const [a1, more] = await queue.claim({ count: 10, now: NOW + 30_000 });
    expect([a1.id, more]).toEqual(["a1", undefined]);
    const parked = await queue.stats({ now: NOW + 40_000 });
    expect([parked.oldestReadyAgeMs, parked.oldestWaitingAgeMs]).toEqual([0, 30_000]);
    await ack(queue, [a1], NOW + 40_000);
    const [a2] = await queue.claim({ count: 10, now: NOW + 40_000 });
    expect(a2.id).toBe("a2");
    // a3 is next: it has waited since NOW + 20 s.
    expect((await queue.stats({ now: NOW + 50_000 })).oldestWaitingAgeMs).toBe(30_000);
    // a3 is cancelled while parked: the group's time is a3's until the tick reads a4's.
    await queue.admin.cancel(["a3"], { now: NOW + 50_000 });
    expect((await queue.stats({ now: NOW + 60_000 })).oldestWaitingAgeMs).toBe(40_000);
    const tick = await queue.tick({ now: NOW + 60_000 });
    expect(tick.oldestWaitingAgeMs).toBe(30_000);
    expect((await queue.stats({ now: NOW + 60_000 })).oldestWaitingAgeMs).toBe(30_000);
    await assertConsistent(redis, queue);
  });

  it("the tick counts the tasks that finished since it last counted, each once", async () => {
    const queue = await fresh({ policies: { job: { leaseMs: 30_000, maxAttempts: 1 } } });
    expect(await queue.tick({ now: NOW })).toMatchObject({ finishedDone: 0, finishedFailed: 0 });
    await queue.enqueue(
      ["d1", "d2", "f1"].map((id) => ({ id, type: "job" })),
      { now: NOW },
    );
    const leases = await queue.claim({ count: 3, now: NOW + 1_000 });
    await ack(queue, leases.slice(0, 2), NOW + 2_000);
    // The first tick that sees finished tasks starts counting from there.
    expect(await queue.tick({ now: NOW + 3_000 })).toMatchObject({ finishedDone: 0, finishedFailed: 0 });
    const [f1] = leases.slice(2);
    await queue.settle([{ id: f1.id, token: f1.token, outcome: "fail", error: "bad file" }], {
      now: NOW + 4_000,
    });
    await queue.enqueue([{ id: "d3", type: "job" }], { now: NOW + 4_000 });
    await ack(queue, await queue.claim({ count: 1, now: NOW + 4_000 }), NOW + 5_000);
    expect(await queue.tick({ now: NOW + 6_000 })).toMatchObject({ finishedDone: 1, finishedFailed: 1 });
    expect(await queue.tick({ now: NOW + 7_000 })).toMatchObject({ finishedDone: 0, finishedFailed: 0 });
  });
});
