// Flow control per key (docs/flow-control.md) on a real Redis, over both stores: each mode's
// window boundaries by the caller's `now`, a repeated call after a lost reply, hostile input, and
// batches mixing modes, plain tasks and one key twice. Every test ends with the check clean.
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../shared/errors.js";
import { scriptKeys } from "../../shared/keys.js";
import { Queue } from "../../shared/queue.js";
import { SCRIPTS } from "../../shared/scripts.js";
import { expectClean } from "../helpers/check.js";
import { assertConsistent, flowFields } from "../helpers/invariants.js";
import { adapters, lossyStore, queueFixture, snapshot } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("flow control over $name", (adapter) => {
  const { redis, open, fresh } = queueFixture(adapter);

  it("dedupe: the last enqueue inside the window is a duplicate of the first, the first outside enqueues", async () => {
    const queue = await fresh();
    const dedupe = { key: "user:42", ttlMs: 10_000 };
    expect(await queue.enqueue([{ id: "a", type: "t", dedupe }], { now: NOW })).toEqual([
      { id: "a", status: "ok", state: "ready" },
    ]);
    expect(await queue.enqueue([{ id: "b", type: "t", dedupe }], { now: NOW + 9_999 })).toEqual([
      { id: "b", status: "duplicate", state: "ready", existingId: "a" },
    ]);
    expect(await queue.admin.inspect("b")).toBeUndefined();
    // The first task done and trimmed: the window still holds.
    const [claimed] = await queue.claim({ count: 1, now: NOW + 9_999 });
    await queue.ack([claimed], { now: NOW + 9_999 });
    await queue.admin.delete(["a"]);
    expect(await queue.enqueue([{ id: "c", type: "t", dedupe }], { now: NOW + 9_999 })).toEqual([
      { id: "c", status: "duplicate", state: undefined, existingId: "a" },
    ]);
    expect(await queue.enqueue([{ id: "d", type: "t", dedupe }], { now: NOW + 10_000 })).toEqual([
      { id: "d", status: "ok", state: "ready" },
    ]);
    expect((await flowFields(redis, queue))["!d:user:42"]).toBe(`d|${NOW + 20_000}`);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 10_000);
  });

  it("debounce: one task runs delayMs after the last enqueue, with the last payload, no later than maxWaitMs after the first", async () => {
    const queue = await fresh();
    const debounce = { key: "doc-7", delayMs: 1_000, maxWaitMs: 5_000 };
    const first = await queue.enqueue([{ id: "a", type: "t", payload: { v: 1 }, debounce }], { now: NOW });
    expect(first).toEqual([{ id: "a", status: "ok", state: "scheduled" }]);
    expect(await queue.enqueue([{ id: "b", type: "t", payload: { v: 2 }, debounce }], { now: NOW + 999 })).toEqual([
      { id: "b", status: "ok", state: "scheduled", replaced: "a" },
    ]);
    expect(await queue.admin.inspect("a")).toBeUndefined();
    expect((await queue.admin.inspect("b"))?.dueAt).toBe(NOW + 1_999);
    // maxWaitMs: the window's last enqueue runs at first + maxWaitMs, not later.
    expect(await queue.enqueue([{ id: "c", type: "t", payload: { v: 3 }, debounce }], { now: NOW + 4_999 })).toEqual([
      { id: "c", status: "ok", state: "scheduled", replaced: "b" },
    ]);
    expect((await queue.admin.inspect("c"))?.dueAt).toBe(NOW + 5_000);
    expect(await queue.claim({ count: 10, now: NOW + 4_999 })).toEqual([]);
    const [claimed] = await queue.claim({ count: 10, now: NOW + 5_000 });
    expect(claimed).toMatchObject({ id: "c", payload: '{"v":3}' });
    // The held task started: a new window begins.
    expect(await queue.enqueue([{ id: "d", type: "t", debounce }], { now: NOW + 5_001 })).toEqual([
      { id: "d", status: "ok", state: "scheduled" },
    ]);
    expect((await queue.admin.inspect("d"))?.dueAt).toBe(NOW + 6_001);
    expect(await queue.admin.inspect("c")).toMatchObject({ state: "leased" });
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 5_001);
  });

  it("debounce: the first enqueue at or past first + maxWaitMs starts a new window", async () => {
    const queue = await fresh();
    const debounce = { key: "k", delayMs: 3_000, maxWaitMs: 4_000 };
    await queue.enqueue([{ id: "a", type: "t", debounce }], { now: NOW });
    // The task is due at NOW + 3000; at NOW + 2999 it still waits and is replaced.
    expect((await queue.enqueue([{ id: "b", type: "t", debounce }], { now: NOW + 2_999 }))[0].replaced).toBe("a");
    expect((await queue.admin.inspect("b"))?.dueAt).toBe(NOW + 4_000);
    // At first + maxWaitMs the window is over: b is not replaced (it is due and runs).
    expect(await queue.enqueue([{ id: "c", type: "t", debounce }], { now: NOW + 4_000 })).toEqual([
      { id: "c", status: "ok", state: "scheduled" },
    ]);
    expect((await queue.admin.inspect("c"))?.dueAt).toBe(NOW + 7_000);
    expect(await queue.admin.inspect("b")).toMatchObject({ state: "scheduled" });
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 4_000);
  });

  it("throttle drop: at most one task per key per period, the rest answered throttled; defer: the next free period", async () => {
    const queue = await fresh();
    const drop = { key: "sync", perMs: 1_000 };
    expect((await queue.enqueue([{ id: "a", type: "t", throttle: drop }], { now: NOW }))[0].status).toBe("ok");
    expect(await queue.enqueue([{ id: "b", type: "t", throttle: drop }], { now: NOW + 999 })).toEqual([
      { id: "b", status: "throttled", state: undefined },
    ]);
    expect(await queue.admin.inspect("b")).toBeUndefined();
    expect((await queue.enqueue([{ id: "c", type: "t", throttle: drop }], { now: NOW + 1_000 }))[0].status).toBe("ok");

    const defer = { key: "mail", perMs: 1_000, onLimit: "defer" as const };
    const results = await queue.enqueue(
      [
        { id: "d1", type: "t", throttle: defer },
        { id: "d2", type: "t", throttle: defer },
        { id: "d3", type: "t", throttle: defer },
      ],
      { now: NOW },
    );
    expect(results.map((result) => result.state)).toEqual(["ready", "scheduled", "scheduled"]);
    expect((await queue.admin.inspect("d2"))?.dueAt).toBe(NOW + 1_000);
    expect((await queue.admin.inspect("d3"))?.dueAt).toBe(NOW + 2_000);
    // A task asking for a later time than the next free period keeps its own.
    await queue.enqueue([{ id: "d4", type: "t", delayMs: 10_000, throttle: defer }], { now: NOW });
    expect((await queue.admin.inspect("d4"))?.dueAt).toBe(NOW + 10_000);
    expect((await queue.enqueue([{ id: "d5", type: "t", throttle: defer }], { now: NOW }))[0]).toMatchObject({
      state: "scheduled",
    });
    expect((await queue.admin.inspect("d5"))?.dueAt).toBe(NOW + 11_000);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW);
  });

  it("a batch mixing modes and plain tasks, and one key twice in a call, answers as calls one by one would", async () => {
    const queue = await fresh();
    const results = await queue.enqueue(
      [
        { id: "p1", type: "t" },
        { id: "x1", type: "t", dedupe: { key: "k", ttlMs: 60_000 } },
        { id: "x2", type: "t", dedupe: { key: "k", ttlMs: 60_000 } },
        { id: "y1", type: "t", debounce: { key: "k", delayMs: 500, maxWaitMs: 5_000 } },
        { id: "y2", type: "t", payload: 2, debounce: { key: "k", delayMs: 500, maxWaitMs: 5_000 } },
        { id: "z1", type: "t", throttle: { key: "k", perMs: 1_000 } },
        { id: "z2", type: "t", throttle: { key: "k", perMs: 1_000 } },
        { id: "x3", type: "t", dedupe: { key: "j", ttlMs: 5_000 } },
        { id: "z3", type: "t", throttle: { key: "k", perMs: 1_000, onLimit: "defer" } },
        { id: "s1", type: "t", singleton: { key: "k" } },
        { id: "p2", type: "t", group: "g" },
        { id: "p1", type: "t" },
      ],
      { now: NOW },
    );
    expect(results).toEqual([
      { id: "p1", status: "ok", state: "ready" },
      { id: "x1", status: "ok", state: "ready" },
      { id: "x2", status: "duplicate", state: "ready", existingId: "x1" },
      { id: "y1", status: "ok", state: "scheduled" },
      { id: "y2", status: "ok", state: "scheduled", replaced: "y1" },
      { id: "z1", status: "ok", state: "ready" },
      { id: "z2", status: "throttled", state: undefined },
      { id: "x3", status: "ok", state: "ready" },
      { id: "z3", status: "ok", state: "scheduled" },
      { id: "s1", status: "ok", state: "ready" },
      { id: "p2", status: "ok", state: "ready" },
      { id: "p1", status: "duplicate", state: "ready" },
    ]);
    expect(await queue.admin.inspect("y1")).toBeUndefined();
    expect(await queue.admin.inspect("y2")).toMatchObject({ state: "scheduled", payload: "2", dueAt: NOW + 500 });
    expect((await queue.admin.inspect("z3"))?.dueAt).toBe(NOW + 1_000);
    // Each flow of the batch is its own run ("1:-,2:d|60000|0,2:b|500|5000,..."): each key its window.
    expect(await flowFields(redis, queue)).toEqual({
      "!d:k": `x1|${NOW + 60_000}`,
      "!d:j": `x3|${NOW + 5_000}`,
      "!b:k": `y2|${NOW}|${NOW + 5_000}`,
      "!t:k": String(NOW + 2_000),
      "!s:k": "s1",
      // y1, replaced by y2 of the same call, is remembered for the DONE retention.
      "!r:y1": `y2|${NOW + 86_400_000}`,
    });
    const stats = await queue.stats({ now: NOW });
    expect([stats.ready, stats.scheduled]).toEqual([6, 2]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW);
  });

  it("a call repeated after a lost reply answers as the store's repeat always did and doubles nothing", async () => {
    const queue = await fresh();
    const store = await open();
    const repeated = new Queue(lossyStore(store), { name: queue.name });
    await queue.enqueue(
      [
        { id: "held", type: "t", debounce: { key: "b", delayMs: 1_000, maxWaitMs: 9_000 } },
        { id: "first", type: "t", dedupe: { key: "d", ttlMs: 9_000 } },
        { id: "slot", type: "t", throttle: { key: "t", perMs: 9_000 } },
      ],
      { now: NOW },
    );
    const batch = [
      { id: "n1", type: "t", debounce: { key: "b", delayMs: 1_000, maxWaitMs: 9_000 } },
      { id: "n2", type: "t", dedupe: { key: "d", ttlMs: 9_000 } },
      { id: "n3", type: "t", throttle: { key: "t", perMs: 9_000 } },
      { id: "n4", type: "t", throttle: { key: "t2", perMs: 9_000, onLimit: "defer" as const } },
    ];
    // The first run enqueued n1 (replacing held) and n4; the repeat finds them known.
    expect(await repeated.enqueue(batch, { now: NOW + 10 })).toEqual([
      { id: "n1", status: "duplicate", state: "scheduled" },
      { id: "n2", status: "duplicate", state: "ready", existingId: "first" },
      { id: "n3", status: "throttled", state: undefined },
      { id: "n4", status: "duplicate", state: "ready" },
    ]);
    expect(await queue.admin.inspect("held")).toBeUndefined();
    expect((await queue.admin.inspect("n1"))?.dueAt).toBe(NOW + 1_010);
    // The throttle's period was taken once: a task at its end enqueues.
    expect(
      (await queue.enqueue([{ id: "n5", type: "t", throttle: batch[3].throttle }], { now: NOW + 9_010 }))[0],
    ).toMatchObject({
      status: "ok",
      state: "ready",
    });
    const stats = await queue.stats({ now: NOW });
    expect([stats.ready, stats.scheduled]).toEqual([4, 1]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 10);
  });

  it("refuses hostile flow-control input before anything is sent, naming the field, the value and what is allowed", async () => {
    const queue = await fresh();
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [
        { dedupe: { key: "a{b}", ttlMs: 1 } },
        /dedupe\.key must be 1-128 characters of A-Z a-z 0-9 _ \. - : @, got "a\{b\}"/,
      ],
      [{ dedupe: { key: "", ttlMs: 1 } }, /dedupe\.key must be 1-128/],
      [{ dedupe: { key: "x".repeat(129), ttlMs: 1 } }, /dedupe\.key must be 1-128/],
      [{ dedupe: { key: 42, ttlMs: 1 } }, /dedupe\.key must be .*got 42/],
      [{ dedupe: { key: "a b", ttlMs: 1 } }, /dedupe\.key/],
      [
        { dedupe: { key: "k", ttlMs: 0 } },
        /dedupe\.ttlMs must be an integer of ms from 1 to 31622400000 \(366 days\), got 0/,
      ],
      [{ dedupe: { key: "k", ttl: 5 } }, /dedupe has unknown field "ttl"; allowed: key, ttlMs/],
      [{ dedupe: "k" }, /dedupe must be an object \{ key, ttlMs \}, got "k"/],
      [{ debounce: { key: "k", delayMs: -1, maxWaitMs: 5 } }, /debounce\.delayMs must be an integer/],
      [{ debounce: { key: "k", delayMs: 1, maxWaitMs: 5 }, delayMs: 3 }, /leave out delayMs and runAt/],
      [{ throttle: { key: "k", perMs: 1.5 } }, /throttle\.perMs must be an integer/],
      [
        { throttle: { key: "k", perMs: 5, onLimit: "queue" } },
        /throttle\.onLimit must be "drop" or "defer", got "queue"/,
      ],
      [
        { dedupe: { key: "k", ttlMs: 1 }, throttle: { key: "k", perMs: 1 } },
        /at most one flow control .* got dedupe and throttle/,
      ],
    ];
    const before = await snapshot(redis, queue);
    for (const [fields, message] of bad) {
      const call = queue.enqueue(
        [
          { id: "ok", type: "t" },
          { id: "x", type: "t", ...fields },
        ],
        { now: NOW },
      );
      await expect(call).rejects.toThrow(InvalidInputError);
      await expect(call).rejects.toThrow(message);
    }
    expect(await snapshot(redis, queue)).toEqual(before);
    expect(await flowFields(redis, queue)).toEqual({});
  });

  it("the script refuses bad flows (a key out of its alphabet or length, a mode, a window, a key without a flow), writing nothing", async () => {
    const queue = await fresh();
    const store = await open();
    const keys = scriptKeys(queue.keys);
    const task = ["a", "0", String(NOW), `1|${NOW}|t||{}`];
    // [flows, the values after the task (its key)]
    const cases: Array<[string, string[], RegExp]> = [
      ["1:d|1000|0", ["a{b}"], /task 1 dedupe key must be 1-128 characters of/],
      ["1:d|1000|0", [""], /task 1 dedupe key must be 1-128 characters of/],
      ["1:d|1000|0", ["k".repeat(129)], /task 1 dedupe key must be 1-128 characters of/],
      ["1:d|1000|0", ["k|x"], /task 1 dedupe key must be 1-128 characters of/],
      ["1:d|1000|0", ["!d:k"], /task 1 dedupe key must be 1-128 characters of/],
      ["1:s|0|0", ["k".repeat(125)], /task 1 singleton key must be 1-124 characters of/],
      ["1:d|1000|0", [], /expected groups of 4 arguments from ARGV\[4\] for 1 tasks and 1 flow keys, got 4 arguments/],
      ["1:-", ["k"], /expected groups of 4 arguments from ARGV\[4\] for 1 tasks and 0 flow keys, got 5 arguments/],
      ["2:d|1000|0", ["k", "j"], /for 2 tasks and 2 flow keys, got 6 arguments/],
      ["0:d|1000|0", ["k"], /flows run 1 must be "<count>:-" or "<count>:<m>\|<a>\|<b>"/],
      ["1:d|1000|0,", ["k"], /flows run 2 must be/],
      ["d|1000|0", ["k"], /flows run 1 must be/],
      ["1:d|1000", ["k"], /task 1 flow must be "<m>\|<a>\|<b>" with m d \(dedupe\).*, got "d\|1000"/],
      ["1:dedupe|1000|0", ["k"], /task 1 flow must be "<m>\|<a>\|<b>"/],
      ["1:x|1000|0", ["k"], /task 1 flow must be "<m>\|<a>\|<b>"/],
      ["1:d|-5|0", ["k"], /task 1 flow must be "<m>\|<a>\|<b>"/],
      ["1:d|0|0", ["k"], /task 1 dedupe\.ttlMs must be an integer from 1/],
      ["1:d|1000|7", ["k"], /task 1 dedupe takes one number, then 0/],
      ["1:t|1000|2", ["k"], /task 1 throttle\.defer must be an integer from 0 to 1/],
      ["1:s|1|0", ["k"], /task 1 singleton takes no numbers: 0 and 0/],
      [`1:b|1|${"9".repeat(20)}`, ["k"], /task 1 debounce\.maxWaitMs must be an integer from 1 to 31622400000/],
    ];
    const before = await snapshot(redis, queue);
    for (const [flows, after, message] of cases) {
      const call = store.evalScript(SCRIPTS.enqueue, keys, [String(NOW), "", flows, ...task, ...after]);
      await expect(call).rejects.toThrow(/LEASEQ_BAD_ARGUMENT/);
      await expect(call).rejects.toThrow(message);
    }
    // In a mixed batch the runs place each key: task 3's is the bad one.
    const two = ["b", "0", String(NOW), `1|${NOW}|t||{}`];
    const three = ["c", "0", String(NOW), `1|${NOW}|t||{}`];
    const mixed = store.evalScript(SCRIPTS.enqueue, keys, [
      String(NOW),
      "",
      "1:d|1000|0,1:-,1:d|1000|0",
      ...task,
      ...two,
      ...three,
      "fine",
      "a b",
    ]);
    await expect(mixed).rejects.toThrow(/task 3 dedupe key must be 1-128 characters of/);
    expect(await snapshot(redis, queue)).toEqual(before);
    expect(await flowFields(redis, queue)).toEqual({});
  });

  it("a task a debounce or a singleton replaced, sent again (an SQS message delivered twice), is a duplicate naming its replacer: the last payload stays the last", async () => {
    const queue = await fresh();
    const debounce = { key: "doc:1", delayMs: 5_000, maxWaitMs: 60_000 };
    await queue.enqueue([{ id: "v1", type: "t", payload: { v: 1 }, debounce }], { now: NOW });
    await queue.enqueue([{ id: "v2", type: "t", payload: { v: 2 }, debounce }], { now: NOW + 1_000 });
    // v1's message is delivered again: v1 was replaced, it does not replace v2 with its old payload.
    expect(await queue.enqueue([{ id: "v1", type: "t", payload: { v: 1 }, debounce }], { now: NOW + 2_000 })).toEqual([
      { id: "v1", status: "duplicate", state: undefined, existingId: "v2" },
    ]);
    expect(await queue.admin.inspect("v1")).toBeUndefined();
    expect(await queue.admin.inspect("v2")).toMatchObject({
      state: "scheduled",
      payload: '{"v":2}',
      dueAt: NOW + 6_000,
    });
    // A singleton's replaced task, and one a later task of its own call replaced (never written).
    const singleton = { key: "sync:1" };
    await queue.enqueue([{ id: "s1", type: "t", payload: { v: 1 }, singleton }], { now: NOW });
    await queue.enqueue(
      [
        { id: "s2", type: "t", payload: { v: 2 }, singleton },
        { id: "s3", type: "t", payload: { v: 3 }, singleton },
      ],
      { now: NOW + 1_000 },
    );
    expect(
      await queue.enqueue(
        [
          { id: "s1", type: "t", payload: { v: 1 }, singleton },
          { id: "s2", type: "t", payload: { v: 2 }, singleton },
        ],
        { now: NOW + 2_000 },
      ),
    ).toEqual([
      { id: "s1", status: "duplicate", state: undefined, existingId: "s2" },
      { id: "s2", status: "duplicate", state: undefined, existingId: "s3" },
    ]);
    expect(await queue.admin.inspect("s3")).toMatchObject({ state: "ready", payload: '{"v":3}' });
    // Remembered as a finished task's id is: for the DONE retention (24 h), then swept.
    const day = 86_400_000;
    expect((await flowFields(redis, queue))["!r:v1"]).toBe(`v2|${NOW + 1_000 + day}`);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 2_000);
    expect(await queue.admin.checkAll({ now: NOW + 1_000 + day, repair: true })).toEqual([]);
    expect(Object.keys(await flowFields(redis, queue)).filter((field) => field.startsWith("!r:"))).toEqual([]);
  });

  it("keeps each key's state in a field of the task hash, and the tick's sweep removes it once over, never as a task", async () => {
    const queue = await fresh();
    await queue.enqueue(
      [
        { id: "a", type: "t", dedupe: { key: "user:1", ttlMs: 10_000 } },
        { id: "b", type: "t", debounce: { key: "doc:1", delayMs: 1_000, maxWaitMs: 20_000 } },
        { id: "c", type: "t", throttle: { key: "api", perMs: 30_000 } },
      ],
      { now: NOW },
    );
    expect(await flowFields(redis, queue)).toEqual({
      "!d:user:1": `a|${NOW + 10_000}`,
      "!b:doc:1": `b|${NOW}|${NOW + 20_000}`,
      "!t:api": String(NOW + 30_000),
    });
    // No key of its own: the queue's keys are all there is.
    expect((await redis.keys(`leaseq:{${queue.name}}:*`)).every((key) => Object.values(queue.keys).includes(key))).toBe(
      true,
    );
    await expectClean(queue, NOW);
    const sweep = (now: number) => queue.admin.checkAll({ now, repair: true });
    expect(await sweep(NOW + 10_000)).toEqual([]);
    expect(Object.keys(await flowFields(redis, queue)).sort()).toEqual(["!b:doc:1", "!t:api"]);
    expect(await sweep(NOW + 20_000)).toEqual([]);
    expect(Object.keys(await flowFields(redis, queue))).toEqual(["!t:api"]);
    expect(await sweep(NOW + 30_000)).toEqual([]);
    expect(await flowFields(redis, queue)).toEqual({});
    // The tick sweeps too.
    await queue.enqueue([{ id: "d", type: "t", dedupe: { key: "user:2", ttlMs: 1_000 } }], { now: NOW + 30_000 });
    await queue.tick({ now: NOW + 31_000 });
    expect(await flowFields(redis, queue)).toEqual({});
    // An unreadable value is reported, and removed on repair.
    await redis.hset(queue.keys.task, "!d:odd", "no end");
    expect((await queue.admin.checkAll({ now: NOW + 31_000 })).map((problem) => problem.code)).toEqual(["flow_field"]);
    await sweep(NOW + 31_000);
    expect(await flowFields(redis, queue)).toEqual({});
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 31_000);
  });
});
