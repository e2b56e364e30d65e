// The hostile input table of the hostile-input suite: each row is one call a careless or hostile
// caller could make, and the error it must get. Every payload carries SECRET, which must never
// appear in an error or a log line.
import type { FixedArgs } from "../../../shared/protocol/index.js";
import { Queue } from "../../../shared/queue.js";
import type { QueueSettings } from "../../../shared/settings.js";
import type { Store } from "../../../shared/store.js";
import type { TaskInput } from "../../../shared/types.js";
import { claimArgs } from "../../helpers/script-args.js";

export const SECRET = "PAYLOAD-SECRET-7d1e0c";
const NOW = 1_800_000_000_000;
const DAY_MS = 24 * 3600 * 1000;

export interface Context {
  queue: Queue;
  store: Store;
  /** A leased task of the queue and its token. */
  leased: { id: string; token: string };
}

export interface Row {
  what: string;
  call: (context: Context) => unknown;
  error: RegExp;
}

/**
 * Ids, groups and types no caller should be able to store: key syntax, separators, control and
 * non-ASCII characters, sizes. (":" and "@" are refused in types only: HOSTILE_TYPES.)
 */
export const HOSTILE_NAMES: unknown[] = [
  "a{b}",
  "{queue}",
  "a}b",
  "a b",
  " ",
  "a\nb",
  "a\r\nb",
  "a\tb",
  "a\u0000b",
  "a|b", // the task record's field separator
  "a*b",
  "a%b",
  "../etc/passwd",
  "é",
  "日本語",
  "💥",
  "a\u200bb", // zero-width space
  "",
  "x".repeat(129),
  null,
  undefined,
  42,
  {},
  ["a"],
  "a,b", // a group's slots, the paused types
  "#lease", // the task hash's own fields
];

/** Types take neither ":" (config fields "p:<type>") nor "@" (a type's own record "@<type>"). */
export const HOSTILE_TYPES: unknown[] = [...HOSTILE_NAMES, "a:b", "a@b", "@email"];

/** Ids: and none ending in ":" and a lower-case letter, which names a task's own field ("<id>:s"). */
const HOSTILE_IDS: unknown[] = [...HOSTILE_NAMES, "a:s", "user:42:x", "@:z"];

/** Ids and groups a user sends, which every path must take (docs/design.md "Ids and names"). */
export const USER_IDS = ["user:42", "sweep-2026-12-01T21:15:00Z", "nightly@2026-12-01T03:00:00Z", "@lead", "a:S"];
export const USER_GROUPS = ["tenant:1", "@email", "customer@eu:42", "a:s"];

const payload = (extra: object = {}) => ({ secret: SECRET, ...extra });
const task = (fields: Partial<TaskInput> & Record<string, unknown>): TaskInput =>
  ({ id: "ok-id", type: "t", payload: payload(), ...fields }) as TaskInput;
const enqueue = (fields: Partial<TaskInput> & Record<string, unknown>) => (c: Context) =>
  c.queue.enqueue([task(fields)], { now: NOW });

function nested(depth: number): unknown {
  let value: unknown = SECRET;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

function circular(): unknown {
  const value: Record<string, unknown> = { secret: SECRET };
  value.self = value;
  return value;
}

const newQueue = (store: Store, settings: QueueSettings) => new Queue(store, { name: "q", settings });

export function rows(): Row[] {
  const list: Row[] = [];
  for (const name of HOSTILE_TYPES) {
    const shown = JSON.stringify(name) ?? String(name);
    list.push({
      what: `enqueue type ${shown}`,
      call: enqueue({ type: name as string }),
      error: /enqueue: task 1 \(id ok-id\): type must be 1-64 characters of A-Z a-z 0-9 _ \. -, got/,
    });
  }
  for (const name of HOSTILE_NAMES) {
    if (name === undefined) continue; // no group
    const shown = JSON.stringify(name) ?? String(name);
    list.push({
      what: `enqueue group ${shown}`,
      call: enqueue({ group: name as string }),
      error: /enqueue: task 1 \(id ok-id\): group must be 1-128 characters of A-Z a-z 0-9 _ \. - : @, got/,
    });
    list.push({
      what: `find group ${shown}`,
      call: (c) => c.queue.admin.find("ready", { group: name as string }),
      error: /find: group must be 1-128 characters/,
    });
  }
  for (const name of HOSTILE_IDS) {
    const shown = JSON.stringify(name) ?? String(name);
    list.push({
      what: `enqueue id ${shown}`,
      call: enqueue({ id: name as string }),
      error:
        /enqueue: task 1: id must (be 1-128 characters of A-Z a-z 0-9 _ \. - : @|not end in ":" and a lower-case letter)/,
    });
    list.push({
      what: `settle id ${shown}`,
      call: (c) => c.queue.settle([{ id: name as string, token: c.leased.token, outcome: "ack" }], { now: NOW }),
      error: /settle: item 1: id must (be|not end)/,
    });
    list.push({
      what: `inspect id ${shown}`,
      call: (c) => c.queue.admin.inspect(name as string),
      error: /inspect: id must (be|not end)/,
    });
    list.push({
      what: `requeue id ${shown}`,
      call: (c) => c.queue.admin.requeue([name as string], { now: NOW }),
      error: /requeue: id 1: id must (be|not end)/,
    });
  }
  list.push({ what: "type of 65 characters", call: enqueue({ type: "t".repeat(65) }), error: /type must be 1-64/ });

  // Payloads.
  const cap = 256 * 1024;
  list.push(
    {
      what: "payload one byte over the 256 KiB cap",
      call: enqueue({ payload: "x".repeat(cap - 1) }), // 2 quotes + cap - 1 = cap + 1 bytes
      error: /payload is 262145 bytes as JSON; the cap is 262144 bytes/,
    },
    {
      what: "payload of 5 MiB",
      call: enqueue({ payload: { secret: SECRET, blob: "y".repeat(5 * 1024 * 1024) } }),
      error: /the cap is 262144 bytes/,
    },
    {
      what: "payload over a queue's own smaller cap",
      call: (c) =>
        newQueue(c.store, { maxPayloadBytes: 64 }).enqueue([task({ payload: payload({ pad: "z".repeat(64) }) })], {
          now: NOW,
        }),
      error: /the cap is 64 bytes/,
    },
    {
      what: "payload with a cycle",
      call: enqueue({ payload: circular() }),
      error: /payload must be JSON-serializable/,
    },
    {
      what: "payload with a BigInt",
      call: enqueue({ payload: { secret: SECRET, n: 10n } }),
      error: /payload must be JSON-serializable/,
    },
    {
      what: "payload that is a function",
      call: enqueue({ payload: () => SECRET }),
      error: /payload must be a JSON value/,
    },
    {
      what: "payload that is a symbol",
      call: enqueue({ payload: Symbol(SECRET) }),
      error: /payload must be a JSON value/,
    },
    {
      what: "payload whose toJSON throws",
      call: enqueue({
        payload: {
          toJSON() {
            throw new Error("cannot serialize");
          },
        },
      }),
      error: /payload must be JSON-serializable \(cannot serialize\)/,
    },
    {
      what: "payload nested 65 deep",
      call: enqueue({ payload: nested(65) }),
      error: /payload nests 65 levels deep; at most 64/,
    },
    {
      what: "payload nested 100000 deep",
      call: enqueue({ payload: nested(100_000) }),
      error: /payload (must be JSON-serializable|nests 100000 levels deep)/,
    },
  );

  // Priorities.
  for (const priority of [
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    1001,
    -1001,
    1.5,
    2 ** 53,
    "1",
    true,
  ]) {
    list.push({
      what: `priority ${String(priority)}`,
      call: enqueue({ priority: priority as number }),
      error: /priority must be an integer from -1000 to 1000, got/,
    });
  }

  // Due times.
  for (const delayMs of [Number.NaN, -1, Number.POSITIVE_INFINITY, 253_402_300_800_000 - NOW, 1.5, "10"]) {
    list.push({
      what: `delayMs ${String(delayMs)}`,
      call: enqueue({ delayMs: delayMs as number }),
      error: /delayMs must be an integer from 0 to \d+, got/,
    });
  }
  for (const [label, runAt] of [
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["before 1970 (-1)", -1],
    ["after 9999-12-31", 253_402_300_800_000],
    ["far future (year 275760)", 8.64e15],
    ["an invalid Date", new Date("not a date")],
    ["a string", "tomorrow"],
  ] as const) {
    list.push({
      what: `runAt ${label}`,
      call: enqueue({ runAt: runAt as number }),
      error: /runAt must be a time from 1970-01-01 to 9999-12-31T23:59:59.999Z/,
    });
  }
  list.push({
    what: "both delayMs and runAt",
    call: enqueue({ delayMs: 5, runAt: NOW + 5 }),
    error: /give either delayMs or runAt, not both/,
  });
  for (const now of [Number.NaN, -1, 2 ** 53, "now", undefined, 1.5]) {
    list.push({
      what: `now ${String(now)}`,
      call: (c) => c.queue.claim({ count: 1, now: now as number }),
      error: /claim: now \(ms since epoch\) must be an integer/,
    });
  }

  // Batches.
  const many = (n: number) => Array.from({ length: n }, (_, i) => task({ id: `m${i}` }));
  for (const [label, tasks] of [
    ["0 tasks", []],
    ["1001 tasks", many(1001)],
    ["null", null],
    ["an object", { tasks: many(2) }],
    ["a string", "tasks"],
  ] as const) {
    list.push({
      what: `enqueue batch of ${label}`,
      call: (c) => c.queue.enqueue(tasks as unknown as TaskInput[], { now: NOW }),
      error: /enqueue: expected 1 to 1000 items, got/,
    });
  }
  list.push(
    {
      what: "enqueue batch holding null",
      call: (c) => c.queue.enqueue([null as unknown as TaskInput], { now: NOW }),
      error: /task 1 must be an object, got null/,
    },
    {
      what: "settle batch of 0",
      call: (c) => c.queue.settle([], { now: NOW }),
      error: /settle: expected 1 to 1000 items, got 0 items/,
    },
    {
      what: "settle batch of 1001",
      call: (c) =>
        c.queue.ack(
          Array.from({ length: 1001 }, () => c.leased),
          { now: NOW },
        ),
      error: /settle: expected 1 to 1000 items, got 1001 items/,
    },
    {
      what: "extend batch of 0",
      call: (c) => c.queue.extend([], { now: NOW }),
      error: /extend: expected 1 to 1000 items/,
    },
    {
      what: "release batch of 0",
      call: (c) => c.queue.release([], { now: NOW }),
      error: /release: expected 1 to 1000 items/,
    },
    {
      what: "requeue batch of 1001",
      call: (c) =>
        c.queue.admin.requeue(
          Array.from({ length: 1001 }, (_, i) => `r${i}`),
          { now: NOW },
        ),
      error: /requeue: expected 1 to 1000 items, got 1001 items/,
    },
  );
  for (const count of [0, 1001, Number.NaN, 1.5, "5", -1]) {
    list.push({
      what: `claim count ${String(count)}`,
      call: (c) => c.queue.claim({ count: count as number, now: NOW }),
      error: /claim: count must be an integer from 1 to 1000, got/,
    });
  }

  // Settle, extend and release items.
  list.push(
    {
      what: 'settle outcome "done"',
      call: (c) => c.queue.settle([{ ...c.leased, outcome: "done" as "ack" }], { now: NOW }),
      error: /outcome must be "ack", "retry" or "fail", got "done"/,
    },
    {
      what: "settle token 42",
      call: (c) => c.queue.settle([{ id: c.leased.id, token: 42 as unknown as string, outcome: "ack" }], { now: NOW }),
      error: /token must be a string, got 42/,
    },
    {
      what: "settle retryAtMs NaN",
      call: (c) =>
        c.queue.settle([{ ...c.leased, outcome: "retry", retryAtMs: Number.NaN, error: SECRET }], { now: NOW }),
      error: /retryAtMs must be an integer/,
    },
    {
      what: "extend leaseMs 0",
      call: (c) => c.queue.extend([{ ...c.leased, leaseMs: 0 }], { now: NOW }),
      error: /leaseMs must be an integer from 1 to 86400000, got 0/,
    },
    {
      what: "extend leaseMs NaN",
      call: (c) => c.queue.extend([{ ...c.leased, leaseMs: Number.NaN }], { now: NOW }),
      error: /leaseMs must be an integer/,
    },
    {
      what: "extend leaseMs over 24 h",
      call: (c) => c.queue.extend([{ ...c.leased, leaseMs: DAY_MS + 1 }], { now: NOW }),
      error: /leaseMs must be an integer from 1 to 86400000/,
    },
    {
      what: "extend empty token",
      call: (c) => c.queue.extend([{ id: c.leased.id, token: "", leaseMs: 1_000 }], { now: NOW }),
      error: /token must be the string a claim returned/,
    },
    {
      what: "release token of 65 characters",
      call: (c) => c.queue.release([{ id: c.leased.id, token: "1".repeat(65) }], { now: NOW }),
      error: /token must be the string a claim returned/,
    },
    {
      what: "release token that is an object",
      call: (c) => c.queue.release([{ id: c.leased.id, token: {} as string }], { now: NOW }),
      error: /token must be the string a claim returned, got a value of type object/,
    },
    {
      what: 'list state "all"',
      call: (c) => c.queue.admin.list("all" as "ready"),
      error: /list: state must be one of ready, scheduled, leased, done, failed, corrupt, got "all"/,
    },
    {
      what: "list limit 0",
      call: (c) => c.queue.admin.list("ready", { limit: 0 }),
      error: /list: limit must be an integer from 1 to 1000, got 0/,
    },
    {
      what: "reclaim limit 0",
      call: (c) => c.queue.reclaim({ now: NOW, limit: 0 }),
      error: /reclaim: limit must be an integer from 1 to 10000/,
    },
    {
      what: "trim limit 10001",
      call: (c) => c.queue.trim({ now: NOW, limit: 10_001 }),
      error: /trim: limit must be an integer from 1 to 10000/,
    },
  );

  // Queue options.
  for (const name of ["a{b}", "", "x".repeat(65), "a b", "é", "a\nb"]) {
    list.push({
      what: `queue name ${JSON.stringify(name)}`,
      call: (c) => new Queue(c.store, { name }),
      error: /queue name must be 1-64 characters of A-Z a-z 0-9 _ \. -, got/,
    });
  }
  list.push(
    {
      what: 'policy type "a{b}"',
      call: (c) => newQueue(c.store, { policies: { "a{b}": { leaseMs: 1_000, maxAttempts: 1 } } }),
      error: /new Queue: policy type must be 1-64 characters/,
    },
    {
      what: "policy leaseMs 0",
      call: (c) => newQueue(c.store, { policies: { t: { leaseMs: 0, maxAttempts: 1 } } }),
      error: /policy "t": leaseMs must be an integer from 1 to 86400000, got 0/,
    },
    {
      what: "policy maxAttempts NaN",
      call: (c) => newQueue(c.store, { defaultPolicy: { leaseMs: 1_000, maxAttempts: Number.NaN } }),
      error: /defaultPolicy: maxAttempts must be an integer from 1 to 1000, got NaN/,
    },
    {
      what: "maxPayloadBytes 0",
      call: (c) => newQueue(c.store, { maxPayloadBytes: 0 }),
      error: /maxPayloadBytes must be an integer/,
    },
    {
      what: "clockSkewMs -1",
      call: (c) => newQueue(c.store, { clockSkewMs: -1 }),
      error: /clockSkewMs must be an integer from 0 to 3600000/,
    },
  );
  return list;
}

/** Raw script calls with ARGV the TypeScript layer would never send: the scripts' own second line of defence. */
export interface RawRow {
  what: string;
  script:
    | "enqueue"
    | "claim"
    | "settle"
    | "extend"
    | "release"
    | "reclaim"
    | "trim"
    | "requeue"
    | "amend"
    | "repair"
    | "cancel"
    | "inspect"
    | "configure"
    | "delete"
    | "skip"
    | "check";
  args: (token: string) => string[];
  error: RegExp;
}

const body = (payloadText: string, type = "t", group = "") => `1|${NOW}|${type}|${group}|${payloadText}`;
const ok = ["ok-id", "0", String(NOW), body(JSON.stringify(payload()))];
/** A claim with one argument a caller should never send (named, with its value), and the error naming it. */
const BAD_CLAIMS: Array<[what: string, given: Partial<FixedArgs<"claim">>, error: RegExp]> = [
  ['now "soon"', { now: "soon" }, /^claim: now must be/],
  ["count 0", { count: "0" }, /count must be/],
  ["repeat 2", { repeat: "2" }, /repeat must be/],
  ['id "a|b"', { claimId: "a|b" }, /claimId must be 1-64 characters/],
  ["for a type list with a bad type", { types: "ok,a b" }, /types must be 1-64 characters/],
  ["busy 2", { busy: "2" }, /busy must be an integer from 0 to 1/],
  ["room without its count", { room: "ok" }, /room must be "<type>:<n>" entries/],
  ["room of a bad type", { room: "a b:1" }, /room must be 1-64 characters/],
];
export const RAW_ROWS: RawRow[] = [
  ...["a{b}", "a|b", "a b", "a\nb", "a,b", "é", "💥", "", "x".repeat(129)].map(
    (id): RawRow => ({
      what: `enqueue id ${JSON.stringify(id)}`,
      script: "enqueue",
      args: () => [String(NOW), "", "", id, ...ok.slice(1)],
      error: /^enqueue: task 1 id must be 1-128 characters of A-Z a-z 0-9 _ \. - : @$/,
    }),
  ),
  ...["held:s", "a:x", "user:42:q"].map(
    (id): RawRow => ({
      what: `enqueue id ${JSON.stringify(id)}, a task's own field`,
      script: "enqueue",
      args: () => [String(NOW), "", "", id, ...ok.slice(1)],
      error: /^enqueue: task 1 id must not end in ":" and a lower-case letter/,
    }),
  ),
  ...["a|b", "a b", "held:s"].map(
    (id): RawRow => ({
      what: `inspect id ${JSON.stringify(id)}`,
      script: "inspect",
      args: () => [id],
      error: /^inspect: id must (be 1-128|not end in)/,
    }),
  ),
  ...(["cancel", "requeue", "repair"] as const).map(
    (script): RawRow => ({
      what: `${script} id "held:s" (the state of "held")`,
      script,
      args: () => [String(NOW), "held:s"],
      error: new RegExp(`^${script}: id 1 must not end in ":" and a lower-case letter`),
    }),
  ),
  {
    what: 'delete id "held:x"',
    script: "delete",
    args: () => [String(NOW), "", "held:x"],
    error: /^delete: id 1 must not end in ":"/,
  },
  ...["nan", "inf", "-inf", "1e400", "0x7fffffffffffffff", "1.5", "", "1001", "-1001"].map(
    (priority): RawRow => ({
      what: `enqueue priority "${priority}"`,
      script: "enqueue",
      args: () => [String(NOW), "", "", "ok-id", priority, String(NOW), body(JSON.stringify(payload()))],
      error: /^enqueue: task 1 priority must be an integer from -1000 to 1000/,
    }),
  ),
  {
    what: "enqueue runAtMs -1",
    script: "enqueue",
    args: () => [String(NOW), "", "", "ok-id", "0", "-1", body("{}")],
    error: /runAtMs must be an integer/,
  },
  {
    what: "enqueue runAtMs after 9999-12-31",
    script: "enqueue",
    args: () => [String(NOW), "", "", "ok-id", "0", "253402300800000", body("{}")],
    error: /runAtMs must be an integer from 0 to 253402300799999/,
  },
  ...[
    "",
    "{}",
    "2|0|t||{}",
    "1|x|t||{}",
    "1|0||||{}",
    "1|0|a b||{}",
    "1|0|a:b||{}",
    "1|0|@t||{}",
    "1|0|t|a b|{}",
    "1|0|t|a{b}|{}",
    "1|0|t|a,b|{}",
    "1|0|t|a\nb|{}",
    `1|0|t|${"g".repeat(129)}|{}`,
  ].map(
    (text): RawRow => ({
      what: `enqueue body ${JSON.stringify(text.slice(0, 30))}`,
      script: "enqueue",
      args: () => [String(NOW), "", "", "ok-id", "0", String(NOW), text],
      error:
        /^enqueue: task 1 (body must be "1\|<enqueuedAtMs>\|<type>\|<group>\|<trace>\|<payload>"|type must be|group must be)/,
    }),
  ),
  {
    what: "enqueue with a short group",
    script: "enqueue",
    args: () => [String(NOW), "", "", "ok-id", "0", String(NOW)],
    error: /expected groups of 4 arguments from ARGV\[4\], got 3 arguments/,
  },
  {
    what: "enqueue with a valid task then a bad one (no partial write)",
    script: "enqueue",
    args: () => [String(NOW), "", "", ...ok, "bad{id}", ...ok.slice(1)],
    error: /task 2 id must be/,
  },
  ...BAD_CLAIMS.map(
    ([what, given, error]): RawRow => ({
      what: `claim ${what}`,
      script: "claim",
      args: () => claimArgs(NOW, given),
      error,
    }),
  ),
  {
    what: 'settle outcome "finish"',
    script: "settle",
    args: (token) => [String(NOW), "held", token, "finish", "0", ""],
    error: /item 1 outcome must be "ack", "done", "retry" or "fail", got "finish"/,
  },
  {
    what: 'settle outcome "done" without its result',
    script: "settle",
    args: (token) => [String(NOW), "held", token, "done"],
    error: /item 1 \(done\) needs 0 and its result/,
  },
  {
    what: 'settle id "a|b"',
    script: "settle",
    args: (token) => [String(NOW), "a|b", token, "ack"],
    error: /item 1 id must be/,
  },
  {
    what: "settle a good item then a bad one (no partial write)",
    script: "settle",
    args: (token) => [String(NOW), "held", token, "ack", "held", token, "retry", "x", ""],
    error: /item 2 retryAtMs must be an integer/,
  },
  {
    what: "extend leaseMs 0",
    script: "extend",
    args: (token) => [String(NOW), "held", token, "0", ""],
    error: /item 1 leaseMs must be an integer from 1 to 86400000/,
  },
  {
    what: "extend progress of 4097 bytes",
    script: "extend",
    args: (token) => [String(NOW), "held", token, "1000", "p".repeat(4097)],
    error: /item 1 progress is 4097 bytes; at most 4096/,
  },
  {
    what: "release with an odd group",
    script: "release",
    args: () => [String(NOW), "held"],
    error: /expected groups of 2/,
  },
  { what: "reclaim limit 0", script: "reclaim", args: () => [String(NOW), "0"], error: /limit must be/ },
  {
    what: "trim retention -2",
    script: "trim",
    args: () => [String(NOW), "10", "-2", "0"],
    error: /doneRetentionMs must be/,
  },
  { what: 'requeue id ""', script: "requeue", args: () => [String(NOW), ""], error: /id 1 must be/ },
  {
    what: "amend id ending :s",
    script: "amend",
    args: () => [String(NOW), "held:s", "{}", ""],
    error: /id must not end/,
  },
  {
    what: "amend a payload over the cap",
    script: "amend",
    args: () => [String(NOW), "held", `"${"x".repeat(300_000)}"`, ""],
    error: /payload is 300002 bytes; the cap is 262144/,
  },
  {
    what: "amend with a note of 201 bytes",
    script: "amend",
    args: () => [String(NOW), "held", "{}", "n".repeat(201)],
    error: /note must be at most 200 bytes, got 201/,
  },
  { what: "inspect id with a newline", script: "inspect", args: () => ["a\nb"], error: /id must be/ },
  {
    what: "configure an unknown setting",
    script: "configure",
    args: () => ["abc123", String(NOW), "sneaky", "1"],
    error: /unknown setting "sneaky"/,
  },
  {
    what: "configure a policy out of range",
    script: "configure",
    args: () => ["abc123", String(NOW), "p:t", "0,5"],
    error: /p:t must be "<leaseMs 1\.\.86400000>,<maxAttempts 1\.\.1000>"/,
  },
  {
    what: "enqueue with a call id that is not one",
    script: "enqueue",
    args: () => [String(NOW), "a b", "0", ...ok],
    error: /callId must be 0-64 characters/,
  },
  {
    what: "skip id with a brace",
    script: "skip",
    args: () => [String(NOW), "a{b}"],
    error: /id 1 must be/,
  },
  {
    what: "delete only tasks in state leased",
    script: "delete",
    args: () => [String(NOW), "leased", "held"],
    error: /state must be "" \(any\) or one of ready, scheduled, done, failed, corrupt/,
  },
  {
    what: "check from a cursor no step returned",
    script: "check",
    args: () => [String(NOW), "x{y}", "10", "0"],
    error: /cursor must be "" or a cursor a previous step returned/,
  },
  {
    what: "check 1001 records a step",
    script: "check",
    args: () => [String(NOW), "", "1001", "0"],
    error: /count must be an integer from 1 to 1000/,
  },
];
