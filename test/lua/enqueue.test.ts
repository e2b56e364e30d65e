import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidInputError, ScriptArgumentError } from "../../shared/errors.js";
import { scriptKeys } from "../../shared/keys.js";
import type { Queue } from "../../shared/queue.js";
import { SCRIPTS } from "../../shared/scripts.js";
import type { Store } from "../../shared/store.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, openQueue, rawClient, snapshot } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("enqueue over $name", (adapter) => {
  const redis = rawClient();
  let store: Store;
  let queue: Queue;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ store, queue, close } = await openQueue(adapter));
  });
  afterAll(async () => {
    await close();
    redis.disconnect();
  });

  it("puts due tasks in READY and later ones in SCHEDULED, reporting each", async () => {
    const results = await queue.enqueue(
      [
        { id: "now-1", type: "email", payload: { to: "a@example.com" } },
        { id: "later-1", type: "email", delayMs: 60_000 },
        { id: "at-1", type: "email", runAt: new Date(NOW + 5_000) },
      ],
      { now: NOW },
    );
    expect(results).toEqual([
      { id: "now-1", status: "ok", state: "ready" },
      { id: "later-1", status: "ok", state: "scheduled" },
      { id: "at-1", status: "ok", state: "scheduled" },
    ]);
    expect(await redis.zscore(queue.keys.scheduled, "later-1")).toBe(String(NOW + 60_000));
    const info = await queue.admin.inspect("now-1");
    expect(info).toMatchObject({
      state: "ready",
      type: "email",
      priority: 0,
      attempts: 0,
      payload: '{"to":"a@example.com"}',
    });
    await assertConsistent(redis, queue);
  });

  it("reports a known id as a duplicate in any state, DONE included, and changes nothing", async () => {
    await queue.enqueue([{ id: "dup", type: "t", payload: { v: 1 } }], { now: NOW });
    const [claimed] = await queue.claim({ count: 1, now: NOW });
    await queue.claim({ count: 10, now: NOW }); // lease everything else too
    await queue.ack([claimed], { now: NOW });
    expect((await queue.admin.inspect(claimed.id))?.state).toBe("done");
    const before = await snapshot(redis, queue);
    const results = await queue.enqueue(
      [
        { id: claimed.id, type: "t", payload: { v: 2 } },
        { id: "later-1", type: "other", priority: -5 },
      ],
      { now: NOW + 1 },
    );
    expect(results.map((r) => r.status)).toEqual(["duplicate", "duplicate"]);
    expect(results[0].state).toBe("done");
    expect(await snapshot(redis, queue)).toEqual(before);
  });

  it("enqueues an id repeated inside one batch once", async () => {
    const results = await queue.enqueue(
      [
        { id: "twice", type: "t", payload: 1 },
        { id: "twice", type: "t", payload: 2 },
      ],
      { now: NOW },
    );
    expect(results.map((r) => r.status)).toEqual(["ok", "duplicate"]);
    expect((await queue.admin.inspect("twice"))?.payload).toBe("1");
  });

  const NEVER = Number.NaN;
  it.each([
    [
      "an id with a space",
      { id: "a b", type: "t" },
      /task 2: id must be 1-128 characters of A-Z a-z 0-9 _ \. - : @, got "a b"/,
    ],
    ["an id of 129 characters", { id: "x".repeat(129), type: "t" }, /id must be 1-128 characters/],
    ["an id with a hash tag", { id: "{x}", type: "t" }, /id must be .* got "\{x\}"/],
    ["an id with the record separator", { id: "a|b", type: "t" }, /id must be .* got "a\|b"/],
    ["an id with a comma (a group's slots)", { id: "a,b", type: "t" }, /id must be .* got "a,b"/],
    [
      "an id naming another id's state field",
      { id: "user:s", type: "t" },
      /task 2: id must not end in ":" and a lower-case letter .*, got "user:s"/,
    ],
    ["an id naming another id's reason field", { id: "a:x", type: "t" }, /must not end in ":" and a lower-case/],
    [
      "a group with a space",
      { id: "ok", type: "t", group: "a b" },
      /group must be 1-128 characters of .* : @, got "a b"/,
    ],
    ["a group with the record separator", { id: "ok", type: "t", group: "a|b" }, /group must be .* got "a\|b"/],
    ["a group of 129 characters", { id: "ok", type: "t", group: "g".repeat(129) }, /group must be 1-128 characters/],
    ["a type with a colon", { id: "ok", type: "a:b" }, /type must be 1-64 characters of A-Z a-z 0-9 _ \. -, got "a:b"/],
    ["a type with an at sign", { id: "ok", type: "@email" }, /type must be 1-64 characters .* got "@email"/],
    [
      "a fractional priority",
      { id: "ok", type: "t", priority: 1.5 },
      /priority must be an integer from -1000 to 1000, got 1.5/,
    ],
    [
      "priority NaN",
      { id: "ok", type: "t", priority: NEVER },
      /priority must be an integer from -1000 to 1000, got NaN/,
    ],
    ["priority out of range", { id: "ok", type: "t", priority: 1001 }, /priority .* got 1001/],
    ["a negative delay", { id: "ok", type: "t", delayMs: -1 }, /delayMs must be an integer from 0 to \d+, got -1/],
    ["runAt NaN", { id: "ok", type: "t", runAt: NEVER }, /runAt must be a time from 1970-01-01 to 9999-12-31/],
    [
      "runAt after 9999-12-31",
      { id: "ok", type: "t", runAt: Date.UTC(10000, 0, 1) },
      /runAt must be a time from 1970-01-01 to 9999-12-31T23:59:59.999Z/,
    ],
    ["runAt before 1970", { id: "ok", type: "t", runAt: -1 }, /runAt must be a time from 1970-01-01/],
    ["both delayMs and runAt", { id: "ok", type: "t", delayMs: 1, runAt: NOW }, /either delayMs or runAt, not both/],
    [
      "a payload over the cap",
      { id: "ok", type: "t", payload: "x".repeat(300 * 1024) },
      /payload is 307202 bytes as JSON; the cap is 262144 bytes/,
    ],
    ["a BigInt payload", { id: "ok", type: "t", payload: { n: 1n } }, /payload must be JSON-serializable/],
    [
      "a misspelled field, which would otherwise be dropped",
      { id: "ok", type: "t", paylod: { to: "a@example.com" } },
      /task 2 \(id ok\) has unknown field "paylod"; allowed: id, type, payload, priority, delayMs, runAt, group, dedupe, debounce, throttle, singleton$/,
    ],
    [
      "several unknown fields",
      { id: "ok", type: "t", delay: 5, Group: "g" },
      /unknown fields "delay", "Group"; allowed:/,
    ],
    [
      "a payload nested 100 deep",
      { id: "ok", type: "t", payload: JSON.parse(`${"[".repeat(100)}${"]".repeat(100)}`) },
      /nests 100 levels deep; at most 64/,
    ],
  ])("rejects %s, naming the field, and writes nothing", async (_, task, message) => {
    const before = await snapshot(redis, queue);
    const good = { id: "good-in-same-batch", type: "t" };
    const error = await queue.enqueue([good, task as never], { now: NOW }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toMatch(/^enqueue: task 2/);
    expect(await snapshot(redis, queue)).toEqual(before);
  });

  it("checkTasks answers what enqueue would refuse, unknown fields included, per task", () => {
    expect(
      queue.checkTasks(
        [{ id: "fine", type: "t", payload: { to: "a" } }, { id: "typo", type: "t", paylod: { to: "a" } } as never],
        { now: NOW },
      ),
    ).toEqual([
      undefined,
      'task 2 (id typo) has unknown field "paylod"; allowed: id, type, payload, priority, delayMs, runAt, group, dedupe, debounce, throttle, singleton',
    ]);
  });

  it.each([
    ["an empty batch", []],
    ["a batch of 1001", Array.from({ length: 1001 }, (_, i) => ({ id: `b${i}`, type: "t" }))],
  ])("rejects %s", async (_, tasks) => {
    await expect(queue.enqueue(tasks, { now: NOW })).rejects.toThrow(/enqueue: expected 1 to 1000 items, got/);
  });

  it("refuses, on a queue whose config declares its types, a type it does not declare, naming them, and writes nothing", async () => {
    const strict = await openQueue(adapter, {
      strictTypes: true,
      policies: {
        "send-email": { leaseMs: 30_000, maxAttempts: 5 },
        "resize-image": { leaseMs: 60_000, maxAttempts: 3 },
      },
    });
    try {
      const before = await snapshot(redis, strict.queue);
      const error = await strict.queue
        .enqueue(
          [
            { id: "fine", type: "send-email" },
            { id: "typo", type: "send-emial" },
          ],
          { now: NOW },
        )
        .catch((e: unknown) => e);
      expect(error, "the script refuses it: only the queue's config knows its types").toBeInstanceOf(
        ScriptArgumentError,
      );
      expect((error as Error).message).toMatch(
        /task 2 type "send-emial" is not declared for this queue; its types: resize-image, send-email$/,
      );
      expect(await snapshot(redis, strict.queue)).toEqual(before);
      expect(await strict.queue.enqueue([{ id: "fine", type: "send-email" }], { now: NOW })).toEqual([
        { id: "fine", status: "ok", state: "ready" },
      ]);
      // The queue of this block declares no types: any type goes, with the default policy.
      expect(await queue.enqueue([{ id: "any-type", type: "send-emial" }], { now: NOW })).toEqual([
        { id: "any-type", status: "ok", state: "ready" },
      ]);
    } finally {
      await strict.close();
    }
  });

  it("refuses malformed ARGV inside the script too, before any write", async () => {
    const before = await snapshot(redis, queue);
    const keys = scriptKeys(queue.keys);
    // The second task is bad: the first must not be written either.
    const args = [String(NOW), "", "", "fine", "0", "0", `1|${NOW}|t||{}`, "bad id", "0", "0", `1|${NOW}|t||{}`];
    const error = await store.evalScript(SCRIPTS.enqueue, keys, args).catch((e: unknown) => e);
    expect(String((error as Error).message)).toMatch(/LEASEQ_BAD_ARGUMENT enqueue: task 2 id must be 1-128 characters/);
    expect(await snapshot(redis, queue)).toEqual(before);
    await expect(
      queue.claim({ count: 0, now: NOW }),
      "the library maps codes to typed errors before sending",
    ).rejects.toBeInstanceOf(InvalidInputError);
    const viaScript = await store
      .evalScript(SCRIPTS.claim, scriptKeys(queue.keys), [String(NOW), "0", "1000", "c1", "0", "1"])
      .catch((e: unknown) => e);
    expect(String(viaScript)).toMatch(/count must be an integer from 1 to 1000, got "0"/);
    expect(ScriptArgumentError).toBeDefined();
  });
});
