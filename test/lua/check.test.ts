// The consistency check (Queue.check, `leaseq check`, docs/design.md "Checking a queue"): each kind
// of broken invariant is planted on purpose in a real queue, straight into Redis, and the check
// must report it by its code; with repair, what it may repair safely is repaired, and a second
// check is clean. The reclaimer's tick runs a slice of it: a stalled group starts again.
import { describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import type { CheckProblem } from "../../shared/types.js";
import { adapters, failTasks, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

const codes = (problems: CheckProblem[]) => [...new Set(problems.map((problem) => problem.code))].sort();

/**
 * Check and expect exactly these codes; check again with repair: every problem it reports is
 * repaired but the `unrepaired` kinds (one repair may make another report moot: a group's record
 * made right is no longer stalled); then a check finds only those.
 */
async function expectFoundAndRepaired(queue: Queue, now: number, expected: string[], unrepaired: string[] = []) {
  const found = await queue.admin.checkAll({ now });
  expect(codes(found), JSON.stringify(found)).toEqual([...expected].sort());
  const repaired = await queue.admin.checkAll({ now, repair: true });
  expect(repaired.length).toBeGreaterThan(0);
  for (const problem of repaired) {
    expect(problem.repaired, `${problem.code} ${problem.subject}: ${problem.detail}`).toBe(
      !unrepaired.includes(problem.code),
    );
  }
  expect(codes(await queue.admin.checkAll({ now }))).toEqual([...unrepaired].sort());
}

describe.each(adapters)("leaseq check over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter, { policies: { job: { leaseMs: 10_000, maxAttempts: 3 } } });

  it("finds nothing in a healthy queue of every state, and reads a large one in bounded, resumable steps", async () => {
    const queue = await fresh({ typeGroups: { job: { concurrency: 1 } } });
    await failTasks(queue, [{ id: "f", type: "other" }], { now: NOW });
    await queue.enqueue(
      Array.from({ length: 30 }, (_, i) => ({
        id: `t${i}`,
        type: "job",
        group: `g${i % 3}`,
        delayMs: i % 5 === 0 ? 5_000 : 0,
      })),
      { now: NOW },
    );
    const claimed = await queue.claim({ count: 5, now: NOW });
    await queue.ack(claimed.slice(0, 1), { now: NOW });
    let steps = 0;
    let cursor: string | undefined;
    do {
      const step = await queue.admin.check({ now: NOW, count: 7, ...(cursor ? { cursor } : {}) });
      expect(step.problems).toEqual([]);
      cursor = step.next;
      steps++;
    } while (cursor !== undefined);
    expect(steps).toBeGreaterThan(5);
  });

  it("reads at most `count` group records a step, also when Redis hands the small groups hash over whole", async () => {
    const queue = await fresh({ typeGroups: { job: { concurrency: 1 } } });
    const groups = 300; // a listpack: one HSCAN returns every record
    await queue.enqueue(
      Array.from({ length: 2 * groups }, (_, i) => ({ id: `t${i}`, type: "job", group: `g${i % groups}` })),
      { now: NOW },
    );
    expect(await queue.claim({ count: 1000, now: NOW })).toHaveLength(groups); // each group: a lease, one parked
    expect(await redis.hlen(queue.keys.groups)).toBeGreaterThanOrEqual(groups);
    let cursor: string | undefined = "lanes:0";
    let steps = 0;
    while (cursor !== undefined) {
      const step: { problems: CheckProblem[]; next: string | undefined } = await queue.admin.check({
        now: NOW,
        count: 50,
        cursor,
      });
      expect(step.problems).toEqual([]);
      cursor = step.next;
      steps++;
    }
    expect(steps).toBeGreaterThanOrEqual(groups / 50);
    // A group whose record lost count of its parked task is still found, in its step.
    await redis.hset(
      queue.keys.groups,
      "job|g7",
      ((await redis.hget(queue.keys.groups, "job|g7")) ?? "").replace(/\|1\|0\|/, "|3|0|"),
    );
    expect(codes(await queue.admin.checkAll({ now: NOW, count: 50 }))).toEqual(["group_parked"]);
  });

  it("the format's guard, config nextDue, an ordered queue's hold, a wake-up mark", async () => {
    const queue = await fresh({ ordered: true });
    await queue.enqueue([{ id: "later", type: "job", delayMs: 60_000 }], { now: NOW });
    await redis.hdel(queue.keys.task, "#v0");
    await redis.hset(queue.keys.config, "nextDue", String(NOW + 3_600_000)); // after the task's due time
    await redis.hset(queue.keys.config, "hold", `${NOW + 3_600_000}|ghost`); // for a task that is not there
    await expectFoundAndRepaired(queue, NOW, ["v0_guard", "next_due", "hold"]);
    expect(await redis.hget(queue.keys.config, "nextDue")).toBe(String(NOW + 60_000));
    await queue.admin.delete(["later"], { now: NOW });
    await redis.hset(queue.keys.config, "wake", String(NOW + 60_000)); // nothing falls due then
    await expectFoundAndRepaired(queue, NOW, ["wake"]);
  });

  it("ids in no set, in the wrong one, in two; orphan members; records unreadable or without a body", async () => {
    const queue = await fresh();
    await failTasks(queue, ["f1", "f2", "f3"], { now: NOW });
    await queue.enqueue(
      ["r", "s"].map((id) => ({ id, type: "job", delayMs: id === "s" ? 60_000 : 0 })),
      { now: NOW },
    );
    await queue.enqueue([{ id: "u", type: "job" }], { now: NOW });
    await redis.zrem(queue.keys.scheduled, "s"); // s in no set
    await redis.zrem(queue.keys.failed, "f1");
    await redis.zadd(queue.keys.done, NOW, "f1"); // f1 in done, its record says failed
    await redis.zadd(queue.keys.done, NOW, "f2"); // f2 in failed and done
    await redis.hdel(queue.keys.task, "f3"); // f3 has lost its body
    await redis.zadd(queue.keys.leased, NOW, "ghost"); // a member with no task
    await redis.hset(queue.keys.task, "u:s", "R|not a state"); // u cannot be read
    await expectFoundAndRepaired(queue, NOW, [
      "no_set",
      "wrong_set",
      "two_sets",
      "no_body",
      "orphan_member",
      "unreadable",
    ]);
    expect(await queue.admin.inspect("s")).toMatchObject({ state: "scheduled", dueAt: NOW + 60_000 });
    expect(await redis.zscore(queue.keys.failed, "f1")).not.toBeNull();
    expect(await redis.zscore(queue.keys.done, "f1")).toBeNull();
    expect(await redis.zscore(queue.keys.done, "f2")).toBeNull();
    expect((await queue.admin.inspect("f3"))?.state).toBe("corrupt");
    expect((await queue.admin.inspect("u"))?.state).toBe("corrupt");
    expect(await redis.zscore(queue.keys.leased, "ghost")).toBeNull();
  });

  it("a quarantined record whose state does not say so (quarantined before format v2)", async () => {
    const queue = await fresh();
    await queue.enqueue([{ id: "q", type: "job" }], { now: NOW });
    const [task] = await queue.claim({ count: 1, now: NOW });
    await redis.hdel(queue.keys.task, "q");
    await queue.admin.checkAll({ now: NOW, repair: true }); // quarantined: no body
    const marked = await redis.hget(queue.keys.task, "q:s");
    expect(marked?.startsWith("C|L|")).toBe(true);
    await redis.hset(queue.keys.task, "q:s", marked?.slice(2) ?? ""); // as format v1 left it
    await expectFoundAndRepaired(queue, NOW, ["quarantine_mark"]);
    expect(await redis.hget(queue.keys.task, "q:s")).toBe(marked);
    expect(await queue.settle([{ id: "q", token: task.token, outcome: "ack" }], { now: NOW })).toEqual([
      { id: "q", status: "corrupt", state: "corrupt" },
    ]);
  });

  it("a quarantined task out of the corrupt set is put back there, its reason kept", async () => {
    const queue = await fresh();
    await queue.enqueue([{ id: "q", type: "job" }], { now: NOW });
    await queue.claim({ count: 1, now: NOW });
    await redis.hdel(queue.keys.task, "q");
    await queue.admin.checkAll({ now: NOW, repair: true }); // quarantined: no body
    await redis.zrem(queue.keys.corrupt, "q");
    await expectFoundAndRepaired(queue, NOW, ["no_set"]);
    expect(await queue.admin.inspect("q")).toMatchObject({ state: "corrupt", lastError: "a task without its body" });
    expect((await queue.stats({ now: NOW })).corrupt).toBe(1);
  });

  it("a DONE task that kept its body, attempts past the maximum, a lease above the lease counter", async () => {
    const queue = await fresh();
    await queue.enqueue(
      ["d", "l"].map((id) => ({ id, type: "job" })),
      { now: NOW },
    );
    const [d, l] = await queue.claim({ count: 2, now: NOW });
    await queue.ack([d], { now: NOW });
    await redis.hset(queue.keys.task, "d", `1|${NOW}|job||{}`);
    const state = (await redis.hget(queue.keys.task, "l:s")) ?? "";
    await redis.hset(queue.keys.task, "l:s", state.replace(/^L\|1\|/, "L|7|"));
    const counter = Number(await redis.hget(queue.keys.task, "#lease"));
    await redis.hset(queue.keys.task, "#lease", String(counter - 10));
    await expectFoundAndRepaired(queue, NOW, ["done_body", "attempts", "lease_counter"], ["attempts"]);
    // Repaired: the next claim's leases take a generation above every lease's.
    expect(Number(await redis.hget(queue.keys.task, "#lease"))).toBeGreaterThanOrEqual(counter);
    expect(l.token.endsWith(`.${counter}`)).toBe(true);
  });

  it("groups: a lease its record does not name, parked counts, an unreadable record, a group nothing lets out", async () => {
    const queue = await fresh({ typeGroups: { job: { concurrency: 1 } } });
    await queue.enqueue(
      ["a1", "a2", "b1", "b2"].map((id) => ({ id, type: "job", group: id[0] })),
      { now: NOW },
    );
    expect((await queue.claim({ count: 10, now: NOW })).map((task) => task.id)).toEqual(["a1", "b1"]);
    expect(await queue.claim({ count: 10, now: NOW })).toEqual([]); // a2, b2 parked behind them
    const a = (await redis.hget(queue.keys.groups, "job|a")) ?? "";
    await redis.hset(queue.keys.groups, "job|a", a.replace("a1", "")); // a1's lease is not named
    await redis.hset(queue.keys.groups, "job|b", "garbage"); // b's record cannot be read
    await expectFoundAndRepaired(queue, NOW, ["group_slots", "group_record", "group_parked", "group_stalled"]);
    expect(await queue.claim({ count: 10, now: NOW })).toEqual([]); // concurrency 1 still holds
  });

  it("a group whose only lease vanished: stalled until the check (or the tick's slice of it) repairs it", async () => {
    const queue = await fresh({ typeGroups: { job: { concurrency: 1 } } });
    await queue.enqueue(
      ["a1", "a2"].map((id) => ({ id, type: "job", group: "a" })),
      { now: NOW },
    );
    await queue.claim({ count: 10, now: NOW });
    expect(await queue.claim({ count: 10, now: NOW })).toEqual([]); // a2 parked
    // a1's records are lost (say an operator's HDEL): its ack will never come.
    await redis.hdel(queue.keys.task, "a1", "a1:s");
    await redis.zrem(queue.keys.leased, "a1");
    expect(await queue.claim({ count: 10, now: NOW + 1 })).toEqual([]);
    expect(codes(await queue.admin.checkAll({ now: NOW + 1 }))).toEqual(["group_stalled"]);
    // The reclaimer's tick checks a slice each run and repairs what it safely can.
    for (let run = 0; run < 5; run++) await queue.tick({ now: NOW + 2 + run });
    expect((await queue.claim({ count: 10, now: NOW + 10 })).map((task) => task.id)).toEqual(["a2"]);
    expect(await queue.admin.checkAll({ now: NOW + 11 })).toEqual([]);
  });

  it("an ordered group whose record became unreadable while only parked tasks remain: the tick's slice heals it", async () => {
    const queue = await fresh({ typeGroups: { job: { ordered: true } } });
    await queue.enqueue(
      ["a1", "a2", "a3"].map((id) => ({ id, type: "job", group: "a" })),
      { now: NOW },
    );
    const [a1] = await queue.claim({ count: 10, now: NOW });
    await redis.hset(queue.keys.groups, "job|a", "garbage");
    await queue.ack([a1], { now: NOW });
    // Nothing ready, leased or scheduled: a2 and a3 are parked behind a record that cannot be read.
    expect(await redis.zcard(queue.keys.ready)).toBe(0);
    expect(await queue.claim({ count: 10, now: NOW + 1 })).toEqual([]);
    for (let run = 0; run < 5; run++) await queue.tick({ now: NOW + 2 + run });
    expect((await queue.claim({ count: 10, now: NOW + 10 })).map((task) => task.id)).toEqual(["a2"]);
    expect(await queue.claim({ count: 10, now: NOW + 10 })).toEqual([]); // a3 behind it, in order
    expect(await queue.admin.checkAll({ now: NOW + 11 })).toEqual([]);
  });

  it("more leases in a group than its concurrency (a policy tightened while they ran): reported", async () => {
    const queue = await fresh({ typeGroups: { job: { concurrency: 2 } } });
    await queue.enqueue(
      ["a1", "a2"].map((id) => ({ id, type: "job", group: "a" })),
      { now: NOW },
    );
    expect(await queue.claim({ count: 10, now: NOW })).toHaveLength(2);
    await queue.configure({
      policies: { job: { leaseMs: 10_000, maxAttempts: 3 } },
      typeGroups: { job: { concurrency: 1 } },
    });
    const found = await queue.admin.checkAll({ now: NOW });
    expect(codes(found)).toEqual(["concurrency"]);
    expect(found[0]).toMatchObject({ subject: "job|a", repaired: false });
  });
});
