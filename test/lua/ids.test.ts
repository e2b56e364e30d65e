// Task ids and group names with ":" and "@" (docs/design.md "Ids and names"): an EventBridge time,
// "user:42", "<schedule>@<slot>", a group "@email". Each goes through every state and every
// operator verb, a group keeps its order and its concurrency, none is confused with a task's own
// fields ("<id>:s") or a type's own record ("@<type>"), and the check finds nothing wrong.
import { describe, expect, it } from "vitest";
import { InvalidInputError, ScriptArgumentError, toQueueError } from "../../shared/errors.js";
import { scriptKeys } from "../../shared/keys.js";
import { SCRIPTS } from "../../shared/scripts.js";
import { expectClean } from "../helpers/check.js";
import { assertConsistent } from "../helpers/invariants.js";
import { ack, adapters, ids, queueFixture, snapshot } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const EVENTBRIDGE = "sweep-2026-12-01T21:15:00Z";
const SLOT = "nightly@2026-12-01T03:00:00Z";

describe.each(adapters)("ids and groups with : and @ over $name", (adapter) => {
  const { redis, fresh, open } = queueFixture(adapter);

  it("a task with such an id goes enqueue → claim → ack → DONE, shown by inspect, list and history", async () => {
    const queue = await fresh({ policies: { sweep: { leaseMs: 30_000, maxAttempts: 3 } } });
    const named = ["user:42", EVENTBRIDGE, SLOT, "@lead", "user:S", "a:1:b@c"];
    const enqueued = await queue.enqueue(
      named.map((id, i) => ({ id, type: "sweep", payload: { i }, ...(i === 2 ? { group: "tenant:1" } : {}) })),
      { now: NOW },
    );
    expect(enqueued.map((result) => [result.id, result.status])).toEqual(named.map((id) => [id, "ok"]));
    expect((await queue.admin.inspect("user:42"))?.state).toBe("ready");
    expect((await queue.admin.inspect(SLOT))?.group).toBe("tenant:1");
    await assertConsistent(redis, queue);

    const claimed = await queue.claim({ count: 10, now: NOW });
    expect(ids(claimed).sort()).toEqual([...named].sort());
    expect(claimed.find((task) => task.id === SLOT)?.group).toBe("tenant:1");
    const extended = await queue.extend(
      claimed.map((task) => ({ id: task.id, token: task.token, leaseMs: 60_000 })),
      { now: NOW + 1 },
    );
    expect(extended.map((result) => result.status)).toEqual(named.map(() => "ok"));
    await ack(queue, claimed, NOW + 2);

    const done = await queue.admin.inspect(EVENTBRIDGE);
    expect(done).toMatchObject({ id: EVENTBRIDGE, state: "done", type: "sweep", payload: "", finishedAt: NOW + 2 });
    expect((await queue.admin.inspect(SLOT))?.group).toBe("tenant:1");
    expect((await queue.admin.list("done", { limit: 100 })).map((task) => task.id).sort()).toEqual([...named].sort());
    const history = await queue.admin.history({ now: NOW + 2, minutes: 1 });
    expect(history.done).toEqual([named.length]);
    // Idempotent by id: a second enqueue of each is a duplicate, DONE.
    const again = await queue.enqueue(
      named.map((id) => ({ id, type: "sweep" })),
      { now: NOW + 3 },
    );
    expect(again.map((result) => [result.status, result.state])).toEqual(named.map(() => ["duplicate", "done"]));
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 3);
  });

  it("retry, fail, requeue, cancel, release, reclaim, repair and delete take such ids", async () => {
    const queue = await fresh({ policies: { job: { leaseMs: 1_000, maxAttempts: 2 } } });
    const all = ["r:1", "f@1", "c:1", "x@y:z9", "l:1", "d@1"];
    await queue.enqueue(
      all.map((id) => ({ id, type: "job", group: id.startsWith("d") ? "@job" : undefined })),
      { now: NOW },
    );
    const claimed = await queue.claim({ count: 10, now: NOW });
    const byId = new Map(claimed.map((task) => [task.id, task]));
    const token = (id: string) => byId.get(id)?.token as string;
    expect(
      await queue.settle(
        [
          { id: "r:1", token: token("r:1"), outcome: "retry", retryAtMs: NOW + 10, error: "again" },
          { id: "f@1", token: token("f@1"), outcome: "fail", error: "no" },
        ],
        { now: NOW + 1 },
      ),
    ).toEqual([
      { id: "r:1", status: "ok", state: "scheduled" },
      { id: "f@1", status: "ok", state: "failed" },
    ]);
    expect((await queue.release([{ id: "l:1", token: token("l:1") }], { now: NOW + 1 })).map((r) => r.status)).toEqual([
      "ok",
    ]);
    expect((await queue.admin.cancel(["c:1"], { now: NOW + 1 })).map((r) => r.status)).toEqual(["ok"]);
    expect((await queue.admin.requeue(["f@1", "c:1"], { now: NOW + 2 })).map((r) => r.status)).toEqual(["ok", "ok"]);
    // "x@y:z9" and "d@1" are still leased: the reclaimer takes them back when the lease ends.
    const reclaimed = await queue.reclaim({ now: NOW + 10_000 });
    expect(reclaimed.reclaimed.sort()).toEqual(["d@1", "x@y:z9"]);
    // A record made unreadable is quarantined (by the check, repairing), and repaired by its id.
    await redis.hset(queue.keys.task, "l:1:s", "not a state");
    const found = await queue.admin.checkAll({ now: NOW + 10_001, repair: true });
    expect(found.map((problem) => [problem.code, problem.subject])).toEqual([["unreadable", "l:1"]]);
    expect((await queue.admin.inspect("l:1"))?.state).toBe("corrupt");
    expect((await queue.admin.repair(["l:1"], { now: NOW + 10_002 })).map((r) => r.status)).toEqual(["ok"]);
    expect((await queue.admin.delete(["d@1", "r:1"])).map((r) => r.status)).toEqual(["ok", "ok"]);
    expect(await queue.admin.inspect("d@1")).toBeUndefined();
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 10_003);
  });

  it("an ordered group with ':' runs in order, apart from a group whose name it begins", async () => {
    const queue = await fresh({
      typeGroups: { charge: { ordered: true } },
      policies: { charge: { leaseMs: 30_000, maxAttempts: 5 } },
    });
    // "customer:42" is a prefix of "customer:42:eu" and of "customer:42@eu": each its own group.
    const groups = ["customer:42", "customer:42:eu", "customer:42@eu"];
    await queue.enqueue(
      [1, 2, 3].flatMap((n) => groups.map((group) => ({ id: `${group}-n${n}`, type: "charge", group }))),
      { now: NOW },
    );
    const ran: string[] = [];
    for (let step = 0; step < 20 && ran.length < 9; step++) {
      const tasks = await queue.claim({ count: 10, now: NOW + step * 10 });
      expect(new Set(tasks.map((task) => task.group)).size, "one task per ordered group at a time").toBe(tasks.length);
      // The first of each group is retried once: its group waits for it, the others go on.
      const retried = tasks.filter((task) => task.id.endsWith("-n1") && task.attempt === 1);
      if (retried.length > 0)
        await queue.settle(
          retried.map((task) => ({
            id: task.id,
            token: task.token,
            outcome: "retry" as const,
            retryAtMs: NOW + step * 10 + 5,
            error: "declined",
          })),
          { now: NOW + step * 10 + 1 },
        );
      const acked = tasks.filter((task) => !retried.includes(task));
      ran.push(...ids(acked));
      if (acked.length > 0) await ack(queue, acked, NOW + step * 10 + 2);
      await assertConsistent(redis, queue);
    }
    for (const group of groups)
      expect(ran.filter((id) => id.startsWith(`${group}-n`))).toEqual([1, 2, 3].map((n) => `${group}-n${n}`));
    await expectClean(queue, NOW + 1_000);
  });

  it("a group with '@' keeps its concurrency, and counts in groups() under its own name", async () => {
    const queue = await fresh({ typeGroups: { api: { concurrency: 2 } } });
    await queue.enqueue(
      Array.from({ length: 5 }, (_, i) => ({ id: `t@${i}`, type: "api", group: "tenant@acme" })),
      { now: NOW },
    );
    const first = await queue.claim({ count: 10, now: NOW });
    expect(ids(first)).toEqual(["t@0", "t@1"]);
    expect(await queue.claim({ count: 10, now: NOW + 1 })).toEqual([]);
    expect((await queue.admin.groups({ now: NOW + 1 })).groups).toEqual([
      { type: "api", group: "tenant@acme", leased: 2, ready: 3, parked: 3, oldestWaitingAgeMs: 1 },
    ]);
    await ack(queue, first.slice(0, 1), NOW + 2);
    expect(ids(await queue.claim({ count: 10, now: NOW + 3 }))).toEqual(["t@2"]);
    expect((await queue.admin.find("ready", { group: "tenant@acme" })).tasks.map((task) => task.id)).toEqual([
      "t@3",
      "t@4",
    ]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 3);
  });

  it('a group named "@email" is never taken for the type email\'s own record, paused or rated', async () => {
    // The type "email" sets its tasks aside under "@email" when paused; the group "@email" of the
    // type "send" is the group "send|@email", and of the type "email" itself "email|@email".
    const queue = await fresh({
      typeGroups: { send: { concurrency: 1 }, email: { concurrency: 1, typeRate: { max: 2, perMs: 1_000 } } },
    });
    await queue.enqueue(
      [
        { id: "s1", type: "send", group: "@email" },
        { id: "s2", type: "send", group: "@email" },
        { id: "e1", type: "email", group: "@email" },
        { id: "e2", type: "email", group: "@email" },
        { id: "e3", type: "email" },
        { id: "e4", type: "email" },
      ],
      { now: NOW },
    );
    await queue.admin.pause({ now: NOW, type: "email" });
    const first = await queue.claim({ count: 10, now: NOW });
    expect(ids(first)).toEqual(["s1"]);
    const stored = await redis.zrange(queue.keys.grouped, 0, -1);
    expect(stored.map((member) => member.split("\0")[0]).sort()).toEqual([
      "@email",
      "@email",
      "@email",
      "@email",
      "send|@email",
    ]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW);
    const groups = (await queue.admin.groups({ now: NOW + 1 })).groups;
    expect(groups.sort((a, b) => a.type.localeCompare(b.type))).toEqual([
      { type: "email", group: "@email", leased: 0, ready: 2, parked: 0 },
      { type: "send", group: "@email", leased: 1, ready: 1, parked: 1, oldestWaitingAgeMs: 1 },
    ]);

    await queue.admin.resume({ now: NOW + 1, type: "email" });
    await ack(queue, first, NOW + 2);
    const next = await queue.claim({ count: 10, now: NOW + 3 });
    // send|@email lets s2 out; email's group @email runs one (concurrency 1), and its type's rate
    // (2 a second) lets one more of email through.
    expect(ids(next).sort()).toEqual(["e1", "e3", "s2"]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 3);
    await ack(queue, next, NOW + 4);
    const last = await queue.claim({ count: 10, now: NOW + 1_000 });
    expect(ids(last).sort()).toEqual(["e2", "e4"]);
    await ack(queue, last, NOW + 1_001);
    expect((await queue.stats({ now: NOW + 1_001 })).done).toBe(6);
    await expectClean(queue, NOW + 1_001);
  });

  it('refuses an id ending in ":" and a lower-case letter: it would name another task\'s state', async () => {
    const queue = await fresh();
    await queue.enqueue([{ id: "user", type: "t" }], { now: NOW });
    const before = await snapshot(redis, queue);
    const store = await open();
    for (const id of ["user:s", "user:x", "user:a", "a:b:z"]) {
      const error = await queue.enqueue([{ id, type: "t" }], { now: NOW }).catch((e: unknown) => e);
      expect(error, id).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).toMatch(/id must not end in ":" and a lower-case letter/);
      // The script refuses it on its own, before it writes.
      const raw = await store
        .evalScript(SCRIPTS.enqueue, scriptKeys(queue.keys), [
          String(NOW),
          "",
          "",
          id,
          "0",
          String(NOW),
          `1|${NOW}|t||{}`,
        ])
        .catch((e: unknown) => e);
      const refused = toQueueError("enqueue", raw);
      expect(refused, id).toBeInstanceOf(ScriptArgumentError);
      expect(refused.message).toMatch(/task 1 id must not end in ":" and a lower-case letter/);
      const inspected = await store.evalScript(SCRIPTS.inspect, scriptKeys(queue.keys), [id]).catch((e: unknown) => e);
      expect(toQueueError("inspect", inspected).message).toMatch(/inspect: id must not end in ":"/);
    }
    expect(await snapshot(redis, queue)).toEqual(before);
    // Ending in ":" and a digit or a capital is an id like any other, beside "user".
    await queue.enqueue(
      [
        { id: "user:S", type: "t" },
        { id: "user:4", type: "t" },
      ],
      { now: NOW },
    );
    expect((await queue.claim({ count: 10, now: NOW })).map((task) => task.id)).toEqual(["user", "user:S", "user:4"]);
    await expectClean(queue, NOW);
  });
});
