// Storage format v1 (docs/storage.md): bodies written once, exact numbers over the whole range,
// records that cannot be read set aside without losing their batch, repeatable claims, the config.
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../shared/config.js";
import { FormatError } from "../../shared/errors.js";
import { scriptKeys } from "../../shared/keys.js";
import { replyRows } from "../../shared/protocol/index.js";
import { LEASED_ANCHOR } from "../../shared/protocol/record.js";
import { Queue } from "../../shared/queue.js";
import { SCRIPTS } from "../../shared/scripts.js";
import type { Store } from "../../shared/store.js";
import { assertConsistent, readTasks } from "../helpers/invariants.js";
import { claimArgs } from "../helpers/script-args.js";
import { adapters, queueFixture, uniqueQueueName } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const END_OF_9999 = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

describe.each(adapters)("storage format v2 over $name", (adapter) => {
  const { redis, open, fresh } = queueFixture(adapter, { defaultPolicy: { leaseMs: 10_000, maxAttempts: 3 } });

  it("writes a body once: moves rewrite only the small state, whatever the payload's size", async () => {
    const queue = await fresh();
    const big = { blob: "x".repeat(200_000) };
    await queue.enqueue([{ id: "big", type: "t", payload: big }], { now: NOW });
    const bodyBefore = await redis.hget(queue.keys.task, "big");
    const [task] = await queue.claim({ count: 1, now: NOW });
    expect(JSON.parse(task.payload)).toEqual(big);
    await queue.settle([{ ...task, outcome: "retry", retryAtMs: NOW + 1_000, error: "later" }], { now: NOW });
    await queue.promote({ now: NOW + 1_000 });
    expect(await redis.hget(queue.keys.task, "big")).toBe(bodyBefore); // the same bytes, never rewritten
    expect((await redis.hstrlen(queue.keys.task, "big:s")) < 100).toBe(true);
    const [again] = await queue.claim({ count: 1, now: NOW + 2_000 });
    await queue.ack([again], { now: NOW + 2_001 });
    expect(await redis.hexists(queue.keys.task, "big")).toBe(0); // an ack drops the payload
    expect(await queue.admin.inspect("big")).toMatchObject({ state: "done", attempts: 2, payload: "" });
  });

  it("keeps the leased set a skiplist by its anchor, which no count, list, reclaim or check ever shows", async () => {
    const queue = await fresh({ defaultPolicy: { leaseMs: 1_000, maxAttempts: 3 } });
    await queue.enqueue(
      ["a", "b", "c"].map((id) => ({ id, type: "t" })),
      { now: NOW },
    );
    const [a, b] = await queue.claim({ count: 3, now: NOW });
    // Three leases: a listpack by Redis's defaults, but for the anchor its first write puts in.
    expect(await redis.call("OBJECT", "ENCODING", queue.keys.leased)).toBe("skiplist");
    expect(await redis.zscore(queue.keys.leased, LEASED_ANCHOR)).toBe("inf");
    expect(await queue.stats({ now: NOW })).toMatchObject({ leased: 3 });
    expect((await queue.admin.list("leased")).map((task) => task.id)).toEqual(["a", "b", "c"]);
    expect(await queue.admin.checkAll({ now: NOW })).toEqual([]);
    await queue.ack([a, b], { now: NOW });
    // The leases past their end come back; the anchor, at +inf, never does.
    expect(await queue.reclaim({ now: NOW + 60_000 })).toMatchObject({ reclaimed: ["c"] });
    expect(await queue.stats({ now: NOW + 60_000 })).toMatchObject({ leased: 0, ready: 1, done: 2 });
    expect(await queue.admin.list("leased")).toEqual([]);
    const [again] = await queue.claim({ count: 1, now: NOW + 60_000 });
    await queue.ack([again], { now: NOW + 60_000 });
    expect(await queue.tick({ now: NOW + 60_001 })).toMatchObject({ leased: 0 });
    expect(await queue.admin.checkAll({ now: NOW + 60_001 })).toEqual([]);
    await assertConsistent(redis, queue);
    expect(await redis.zcard(queue.keys.leased)).toBe(1); // the anchor alone: the key stays a skiplist
  });

  it("keeps a waiting task in its body and the ready set alone: no state until it is first claimed", async () => {
    const queue = await fresh();
    await queue.enqueue([{ id: "w", type: "t", payload: { n: 1 }, priority: -3 }], { now: NOW });
    // Its body alone; "#v0" is the queue's guard against workers of format v0 (docs/storage.md).
    expect((await redis.hkeys(queue.keys.task)).sort()).toEqual(["#v0", "w"]);
    expect(await queue.admin.inspect("w")).toMatchObject({
      state: "ready",
      type: "t",
      priority: -3,
      attempts: 0,
      readySince: NOW,
    });
  });

  it("reads a state of the layout before the run field (a queue upgraded with tasks waiting, a previous worker draining): scheduled, leased and failed ones go on", async () => {
    const queue = await fresh({ policies: { t: { leaseMs: 30_000, maxAttempts: 3 } } });
    const rank = String(1_000 * 2 ** 42 + 7);
    // As the previous release wrote them: no run field after the claim.
    const tasks: Record<string, [string, string]> = {
      sched: [`S|1|3|3|${NOW}||${rank}|t|||timeout`, "scheduled"],
      lease: [`L|1|4|3|${NOW + 30_000}|r|${rank}|t||c1|`, "leased"],
      fail: [`F|3|5|3|${NOW}||${rank}|t|||bad row`, "failed"],
    };
    for (const [id, [state, set]] of Object.entries(tasks)) {
      await redis.hset(queue.keys.task, id, `1|${NOW}|t||{}`, `${id}:s`, state);
      await redis.zadd(queue.keys[set as "scheduled"], set === "leased" ? NOW + 30_000 : NOW, id);
    }
    expect(await queue.admin.inspect("sched")).toMatchObject({
      state: "scheduled",
      attempts: 1,
      lastError: "timeout",
      history: [],
    });
    expect(await queue.admin.checkAll({ now: NOW })).toEqual([]);
    // The lease settles with its token (rank.gen); the scheduled one runs when due; the failed one requeues.
    expect(await queue.settle([{ id: "lease", token: `${rank}.4`, outcome: "ack" }], { now: NOW + 1 })).toMatchObject([
      { status: "ok", state: "done" },
    ]);
    expect((await queue.admin.requeue(["fail"], { now: NOW + 1 }))[0].status).toBe("ok");
    const claimed = await queue.claim({ count: 10, now: NOW + 2 });
    expect(claimed.map((task) => [task.id, task.attempt]).sort()).toEqual([
      ["fail", 1],
      ["sched", 2],
    ]);
    expect(await queue.admin.inspect("sched")).toMatchObject({
      state: "leased",
      history: [{ attempt: 2, outcome: "running" }],
    });
  });

  it("writes a body without tracing as before the trace field (a worker of that layout reads it), reads both layouts: claimed, inspected, listed, its payload whole", async () => {
    const queue = await fresh();
    await queue.enqueue([{ id: "new", type: "t", group: "g", payload: { a: "x|y" } }], { now: NOW });
    expect(await redis.hget(queue.keys.task, "new")).toBe(`1|${NOW}|t|g|{"a":"x|y"}`);
    // Bodies of the layout before the trace field (a queue upgraded with tasks waiting), written as
    // enqueue wrote them then: a task never claimed, alone in the ready set, with its rank as score.
    const legacy = { old: `1|${NOW}|t||{"a":"x|y"}`, oldgrouped: `1|${NOW}|t|g2|[1,2]`, oldnumber: `1|${NOW}|t||12` };
    let rank = 1_000 * 2 ** 42 + 100;
    for (const [id, body] of Object.entries(legacy)) {
      await redis.hset(queue.keys.task, id, body);
      await redis.zadd(queue.keys.ready, rank++, id);
    }
    expect(await queue.admin.inspect("old")).toMatchObject({ state: "ready", type: "t", payload: `{"a":"x|y"}` });
    expect(await queue.admin.inspect("oldgrouped")).toMatchObject({ group: "g2", payload: "[1,2]" });
    const claimed = await queue.claim({ count: 10, now: NOW });
    expect(claimed.map((task) => [task.id, task.group, task.payload, task.trace])).toEqual([
      ["new", "g", `{"a":"x|y"}`, undefined],
      ["old", undefined, `{"a":"x|y"}`, undefined],
      ["oldgrouped", "g2", "[1,2]", undefined],
      ["oldnumber", undefined, "12", undefined],
    ]);
    expect(await queue.admin.checkAll({ now: NOW })).toEqual([]);
    await queue.ack(claimed, { now: NOW });
    expect((await queue.stats({ now: NOW })).done).toBe(4);
  });

  it("round-trips a task due at 9999-12-31T23:59:59.999Z through enqueue, inspect, a duplicate enqueue and promote", async () => {
    const queue = await fresh();
    const far = { id: "far", type: "t", payload: { last: true }, runAt: END_OF_9999 };
    expect(await queue.enqueue([far], { now: NOW })).toEqual([{ id: "far", status: "ok", state: "scheduled" }]);
    expect(await queue.admin.inspect("far")).toMatchObject({ state: "scheduled", dueAt: END_OF_9999 });
    expect(await redis.zscore(queue.keys.scheduled, "far")).toBe(String(END_OF_9999));
    expect(await queue.enqueue([far], { now: NOW })).toEqual([{ id: "far", status: "duplicate", state: "scheduled" }]);
    expect(await queue.promote({ now: END_OF_9999 - 1 })).toBe(0);
    expect(await queue.promote({ now: END_OF_9999 })).toBe(1);
    const [task] = await queue.claim({ count: 1, now: END_OF_9999 });
    expect(task).toMatchObject({ id: "far", attempt: 1, leaseDeadlineMs: END_OF_9999 + 10_000 });
    expect(await queue.ack([task], { now: END_OF_9999 })).toEqual([{ id: "far", status: "ok", state: "done" }]);
    // Every number written is exact: no "2.534023008e+14" anywhere in the records.
    for (const value of Object.values(await redis.hgetall(queue.keys.task))) expect(value).not.toMatch(/e\+/);
    expect((await readTasks(redis, queue)).get("far")).toMatchObject({ state: "D", at: END_OF_9999 });
  });

  it("accepts `now` up to the end of 9999 and refuses one past it, in TypeScript and in the script alike", async () => {
    const queue = await fresh();
    await expect(queue.enqueue([{ id: "a", type: "t" }], { now: LIMITS.timeMaxMs + 1 })).rejects.toThrow(
      /now \(ms since epoch\) must be an integer from 0 to 253402300799999/,
    );
    const raw = await storeOf(queue)
      .evalScript(SCRIPTS.stats, scriptKeys(queue.keys), [String(LIMITS.timeMaxMs + 1)])
      .catch((e: unknown) => e);
    expect(String(raw)).toMatch(/now must be an integer from 0 to 253402300799999/);
  });

  it("sets aside a record it cannot read in the middle of a ready batch, and claims the others", async () => {
    const queue = await fresh();
    await queue.enqueue(
      ["c1", "c2", "c3", "c4"].map((id) => ({ id, type: "t" })),
      { now: NOW },
    );
    await redis.hset(queue.keys.task, "c2", "garbage that no format reads");
    const batch = await queue.claim({ count: 4, now: NOW });
    expect(batch.map((task) => task.id)).toEqual(["c1", "c3", "c4"]);
    expect(await redis.zrange(queue.keys.corrupt, 0, -1)).toEqual(["c2"]);
    expect(await redis.zscore(queue.keys.ready, "c2")).toBeNull();
    expect(await queue.stats({ now: NOW })).toMatchObject({ ready: 0, leased: 3, corrupt: 1 });
    expect(await queue.admin.list("corrupt")).toEqual([
      { id: "c2", score: NOW, type: "", attempts: 0, lastError: "unreadable record (not of format v2)" },
    ]);
    expect(await queue.admin.inspect("c2")).toMatchObject({
      state: "corrupt",
      lastError: expect.stringMatching(/^unreadable/),
    });
    // Its body cannot be read: repair refuses, delete removes it.
    expect(await queue.admin.repair(["c2"], { now: NOW })).toEqual([{ id: "c2", status: "unrepairable" }]);
    expect(await queue.admin.delete(["c2"])).toEqual([{ id: "c2", status: "ok" }]);
    expect(await queue.admin.inspect("c2")).toBeUndefined();
    expect(await queue.stats({ now: NOW })).toMatchObject({ corrupt: 0 });
    await assertConsistent(redis, queue);
  });

  it("fills a batch past the records it sets aside: a claim of 2 behind two broken heads gets the next two", async () => {
    const queue = await fresh();
    await queue.enqueue(
      ["h1", "h2", "h3", "h4", "h5"].map((id) => ({ id, type: "t" })),
      { now: NOW },
    );
    await redis.hset(queue.keys.task, "h1:s", "broken");
    await redis.hset(queue.keys.task, "h2", "broken");
    expect((await queue.claim({ count: 2, now: NOW })).map((task) => task.id)).toEqual(["h3", "h4"]);
    expect((await queue.claim({ count: 2, now: NOW })).map((task) => task.id)).toEqual(["h5"]);
    expect(await queue.stats({ now: NOW })).toMatchObject({ ready: 0, leased: 3, corrupt: 2 });
    await assertConsistent(redis, queue);
  });

  it("repairs a task whose state was damaged but whose body reads: READY again, with a token never issued before", async () => {
    const queue = await fresh();
    await queue.enqueue([{ id: "r", type: "t", payload: { keep: 1 } }], { now: NOW });
    const [first] = await queue.claim({ count: 1, now: NOW });
    await redis.hset(queue.keys.task, "r:s", "L|not|numbers");
    expect(await queue.ack([first], { now: NOW + 1 })).toEqual([{ id: "r", status: "corrupt", state: "corrupt" }]);
    expect(await queue.stats({ now: NOW })).toMatchObject({ leased: 0, corrupt: 1 });
    expect(await queue.admin.repair(["r", "nope"], { now: NOW + 2 })).toEqual([
      { id: "r", status: "ok" },
      { id: "nope", status: "unknown_id" },
    ]);
    const [again] = await queue.claim({ count: 1, now: NOW + 3 });
    expect(JSON.parse(again.payload)).toEqual({ keep: 1 });
    expect(again.token).not.toBe(first.token);
    expect(await queue.ack([first], { now: NOW + 4 })).toEqual([{ id: "r", status: "stale_token", state: "leased" }]);
    expect(await queue.ack([again], { now: NOW + 4 })).toEqual([{ id: "r", status: "ok", state: "done" }]);
  });

  it("answers a repeated claim id with the batch the first run leased: same tokens, no second attempt", async () => {
    const queue = await fresh({ policies: { slow: { leaseMs: 30_000, maxAttempts: 3 } } });
    await queue.enqueue(
      [
        { id: "a", type: "t" },
        { id: "b", type: "slow" },
        { id: "c", type: "t" },
      ],
      { now: NOW },
    );
    const store = storeOf(queue);
    const args = (claimId: string, repeat: "0" | "1") =>
      claimArgs(NOW, { count: "2", maxLeaseMs: String(LIMITS.leaseMaxMs), claimId, repeat });
    const first = await store.evalScript(SCRIPTS.claim, scriptKeys(queue.keys), args("claim-1", "0"));
    const repeat = await store.evalScript(SCRIPTS.claim, scriptKeys(queue.keys), args("claim-1", "1"));
    expect(repeat).toEqual(first);
    expect(replyRows("claim", first as unknown[]).map((row) => row.id)).toEqual(["a", "b"]);
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "leased", attempts: 1 });
    // Another claim id gets the next task, and a repeat of an unknown claim id claims afresh.
    const other = await store.evalScript(SCRIPTS.claim, scriptKeys(queue.keys), args("claim-2", "1"));
    expect(replyRows("claim", other as unknown[]).map((row) => row.id)).toEqual(["c"]);
  });

  it("keeps what every caller must agree on in the queue's config: written once, read by every script", async () => {
    const name = uniqueQueueName("config");
    const store = await open();
    const writer = new Queue(store, { name, settings: { ordered: true, maxPayloadBytes: 100, clockSkewMs: 0 } });
    expect(await writer.configure()).toBe(true);
    expect(await writer.configure()).toBe(false); // the same declaration again changes nothing
    // A caller with no settings of its own follows the config: the payload cap, the order.
    const reader = new Queue(store, { name });
    await expect(reader.enqueue([{ id: "x", type: "t", payload: "y".repeat(200) }], { now: NOW })).rejects.toThrow(
      /task 1 payload is 202 bytes; the cap is 100/,
    );
    await reader.enqueue(
      [
        { id: "o1", type: "t" },
        { id: "o2", type: "t" },
      ],
      { now: NOW },
    );
    expect((await reader.claim({ count: 5, now: NOW })).map((task) => task.id)).toEqual(["o1", "o2"]);
    expect(await reader.claim({ count: 5, now: NOW })).toEqual([]); // ordered: nothing while leased
    expect(await redis.hget(reader.keys.config, "v")).toBe("2");
  });

  it("refuses, with a clear error, a queue stored in another format", async () => {
    const queue = await fresh();
    await redis.hset(queue.keys.config, "v", "3");
    const error = await queue.claim({ count: 1, now: NOW }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FormatError);
    expect((error as Error).message).toBe(
      "claim: the queue is stored in format v3, and this release reads and writes format v2 only: drain the queue with the leaseq release that wrote it, or delete it (leaseq drop), then run this release (docs/storage.md)",
    );
    await expect(queue.enqueue([{ id: "a", type: "t" }], { now: NOW })).rejects.toThrow(FormatError);
  });

  // Format v2 is the first this release reads: a queue written by leaseq 0.1.0 (v0: no config, one
  // packed field per task) or stamped v1 is refused by every script, reads and writes alike.
  it.each([
    { found: "v1", setUp: (queue: Queue) => redis.hset(queue.keys.config, "v", "1") },
    {
      found: "v0 \\(leaseq 0\\.1\\.0\\)",
      setUp: async (queue: Queue) => {
        await redis.del(queue.keys.config, queue.keys.task, queue.keys.scheduled); // as 0.1.0 left it
        await redis.hset(queue.keys.task, "a", `R|job|${1000 * 2 ** 42 + 1}|0|0|0|${NOW}|0|{"n":1}`);
        await redis.zadd(queue.keys.ready, 1000 * 2 ** 42 + 1, "a");
      },
    },
  ])("refuses a queue of format $found, naming it and what to do, and writes nothing", async ({ found, setUp }) => {
    const queue = await fresh();
    await setUp(queue);
    const keys = Object.values(queue.keys);
    const dump = async () => Promise.all(keys.map((key) => redis.dump(key)));
    const before = await dump();
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["enqueue", () => queue.enqueue([{ id: "b", type: "job" }], { now: NOW })],
      ["claim", () => queue.claim({ count: 5, now: NOW })],
      ["configure", () => queue.configure()],
      ["stats", () => queue.stats({ now: NOW })],
      ["inspect", () => queue.admin.inspect("a")],
      ["cancel", () => queue.admin.cancel(["a"], { now: NOW })],
      ["tick", () => queue.tick({ now: NOW })],
      ["check", () => queue.admin.check({ now: NOW, repair: true })],
    ];
    for (const [name, call] of calls) {
      const error = await call().catch((e: unknown) => e);
      expect(error, name).toBeInstanceOf(FormatError);
      expect((error as Error).message, name).toMatch(
        new RegExp(
          `format ${found}, and this release reads and writes format v2 only: drain the queue with the leaseq release that wrote it, or delete it \\(leaseq drop\\)`,
        ),
      );
    }
    expect(await dump()).toEqual(before);
  });

  // A batch of acks alone reads no config (it would cost a command per batch): its tokens came from
  // a claim, which checked the format.
  it("refuses, in every script that reads or writes tasks, a queue of another format, writing nothing", async () => {
    const queue = await fresh();
    await queue.enqueue([{ id: "a", type: "t", payload: { n: 1 } }], { now: NOW });
    const [task] = await queue.claim({ count: 1, now: NOW });
    await redis.hset(queue.keys.config, "v", "3");
    const before = await readTasks(redis, queue);
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["stats", () => queue.stats({ now: NOW })],
      ["inspect", () => queue.admin.inspect("a")],
      ["list", () => queue.admin.list("leased")],
      ["extend", () => queue.extend([{ id: "a", token: task.token, leaseMs: 1_000 }], { now: NOW })],
      ["release", () => queue.release([task], { now: NOW })],
      ["settle", () => queue.settle([{ ...task, outcome: "retry", retryAtMs: NOW, error: "later" }], { now: NOW })],
      ["requeue", () => queue.admin.requeue(["a"], { now: NOW })],
      ["repair", () => queue.admin.repair(["a"], { now: NOW })],
      ["delete", () => queue.admin.delete(["a"])],
      ["reclaim", () => queue.reclaim({ now: NOW + 3_600_000 })],
      ["tick", () => queue.tick({ now: NOW + 3_600_000 })],
      ["trim", () => queue.trim({ now: NOW })],
      ["cancel", () => queue.admin.cancel(["a"], { now: NOW })],
      ["check", () => queue.admin.check({ now: NOW, repair: true })],
    ];
    for (const [name, call] of calls) {
      const error = await call().catch((e: unknown) => e);
      expect(error, name).toBeInstanceOf(FormatError);
      expect((error as Error).message, name).toMatch(/format v3, and this release reads and writes format v2 only/);
    }
    expect(await readTasks(redis, queue)).toEqual(before);
  });
});

/** The store a Queue was opened on, for raw script calls. */
function storeOf(queue: Queue): Store {
  return (queue as unknown as { context: { store: Store } }).context.store;
}
