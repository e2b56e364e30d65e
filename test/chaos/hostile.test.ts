// Hostile input: every row of helpers/hostile-inputs.ts gets a clear error,
// leaves Redis exactly as it was (compared key by key with `snapshot`), and no error text or log
// line carries the Upstash token or a payload. The scripts refuse bad ARGV on their own too, the
// worker rejects bad SQS bodies record by record, and the local endpoint refuses requests that
// lack the token.
import { inspect as show } from "node:util";
import { Logger } from "@aws-lambda-powertools/logger";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createWorker } from "../../functions/worker.js";
import { CredentialsError, InvalidInputError, ScriptArgumentError, toQueueError } from "../../shared/errors.js";
import { scriptKeys } from "../../shared/keys.js";
import { Queue } from "../../shared/queue.js";
import { SCRIPTS } from "../../shared/scripts.js";
import type { Store } from "../../shared/store.js";
import { UpstashStore } from "../../shared/stores/upstash.js";
import { captureStdout, functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { taskFields } from "../helpers/invariants.js";
import { adapters, rawClient, snapshot, uniqueQueueName } from "../helpers/stores.js";
import { report } from "./helpers/chaos.js";
import { type Context, RAW_ROWS, rows, SECRET, USER_GROUPS, USER_IDS } from "./helpers/hostile-inputs.js";

const NOW = 1_800_000_000_000;
const tried: Record<string, number> = {};
const redis = rawClient();
afterAll(() => {
  redis.disconnect();
  report("hostile", { hostileInputsTried: Object.values(tried).reduce((a, b) => a + b, 0), byKind: tried });
});

/** Everything an error shows: message, string form, inspected form (cause and stack included). */
const everything = (error: unknown) => `${String(error)}\n${show(error, { depth: 10 })}`;

function assertNoLeak(text: string, where: string): void {
  expect(text, `${where}: a payload leaked`).not.toContain(SECRET);
  expect(text, `${where}: the Upstash token leaked`).not.toContain(inject("upstashToken"));
}

describe.each(adapters)("hostile input over $name", (adapter) => {
  let store: Store;
  let context: Context;
  beforeAll(async () => {
    store = await adapter.open();
    const queue = new Queue(store, { name: uniqueQueueName("hostile") });
    await queue.enqueue(
      ["held", "finished", "waiting"].map((id) => ({ id, type: "t", payload: { secret: SECRET } })),
      { now: NOW },
    );
    const [held, finished] = await queue.claim({ count: 2, now: NOW });
    await queue.ack([finished], { now: NOW });
    context = { queue, store, leased: { id: held.id, token: held.token } };
  });
  afterAll(() => store.close());

  const table = rows();
  it(`rejects each of ${table.length} hostile calls with a clear error, writes nothing, leaks nothing`, async () => {
    const before = await snapshot(redis, context.queue);
    for (const row of table) {
      const error = await (async () => row.call(context))().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, row.what).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message, row.what).toMatch(row.error);
      expect((error as Error).message.length, `${row.what}: a short message`).toBeLessThan(400);
      assertNoLeak(everything(error), row.what);
    }
    expect(await snapshot(redis, context.queue)).toEqual(before);
    tried[`queue-api-${adapter.name}`] = table.length;
  }, 60_000);

  it(`the scripts refuse ${RAW_ROWS.length} malformed ARGV lists themselves, writing nothing`, async () => {
    const k = context.queue.keys;
    const all = scriptKeys(k);
    const before = await snapshot(redis, context.queue);
    for (const row of RAW_ROWS) {
      const raw = await store.evalScript(SCRIPTS[row.script], all, row.args(context.leased.token)).then(
        () => undefined,
        (e: unknown) => e,
      );
      const error = toQueueError(row.script, raw);
      expect(error, row.what).toBeInstanceOf(ScriptArgumentError);
      expect(error.message, row.what).toMatch(row.error);
      assertNoLeak(everything(error), row.what);
    }
    expect(await snapshot(redis, context.queue)).toEqual(before);
    tried[`script-argv-${adapter.name}`] = RAW_ROWS.length;
  });

  it("the worker rejects hostile SQS bodies record by record, writes nothing, and logs no payload or secret", async () => {
    const name = uniqueQueueName("hostile-sqs");
    const queue = new Queue(store, { name });
    const before = await snapshot(redis, queue);
    const huge = "{".repeat(1024 * 1024); // 1 MiB, not JSON
    const bodies: Array<[string, unknown, RegExp]> = [
      ["not-json", `not json ${SECRET}`, /body is not JSON \(\d+ characters\)/],
      ["huge-not-json", `${huge}${SECRET}`, /body is not JSON \(1048597 characters\)/],
      ["null", "null", /body must be a JSON object/],
      ["array", [{ secret: SECRET }], /body must be a JSON object/],
      ["string", JSON.stringify(SECRET), /body must be a JSON object/],
      ["tasks-not-array", { tasks: { secret: SECRET } }, /"tasks" must be an array of 1 to 1000 tasks/],
      ["tasks-empty", { tasks: [] }, /"tasks" must be an array of 1 to 1000 tasks/],
      [
        "tasks-1001",
        { tasks: Array.from({ length: 1001 }, () => ({ type: "echo" })) },
        /"tasks" must be an array of 1 to 1000 tasks/,
      ],
      ["task-null", { tasks: [null] }, /tasks\[0\] must be an object/],
      ["task-array", { tasks: [[SECRET]] }, /tasks\[0\] must be an object/],
      ["unknown-field", { tasks: [{ type: "echo", payload: SECRET, priorty: 1 }] }, /unknown field "priorty"/],
      [
        "long-unknown-field",
        { tasks: [{ type: "echo", [`${"k".repeat(100)}${SECRET}`]: 1 }] },
        /unknown field "k{40}"/,
      ],
      ["bad-id", { tasks: [{ id: "a{b}", type: "echo", payload: SECRET }] }, /id must be 1-128 characters/],
      [
        "id-with-separator",
        { tasks: [{ id: "a|b", type: "echo", payload: SECRET }] },
        /tasks\[0\]: id must be 1-128 characters of A-Z a-z 0-9 _ \. - : @, got "a\|b"/,
      ],
      [
        "id-naming-a-state",
        { tasks: [{ id: "user:s", type: "echo", payload: SECRET }] },
        /tasks\[0\]: id must not end in ":" and a lower-case letter/,
      ],
      ["id-129", { tasks: [{ id: "x".repeat(129), type: "echo", payload: SECRET }] }, /id must be 1-128 characters/],
      [
        "group-with-space",
        { tasks: [{ type: "echo", group: "a b", payload: SECRET }] },
        /tasks\[0\] \(id group-with-space-0\): group must be 1-128 characters of A-Z a-z 0-9 _ \. - : @, got "a b"/,
      ],
      ["group-with-newline", { tasks: [{ type: "echo", group: "a\nb", payload: SECRET }] }, /group must be 1-128/],
      ["group-with-brace", { tasks: [{ type: "echo", group: "{q}", payload: SECRET }] }, /group must be 1-128/],
      ["envelope-typo", { task: [{ type: "echo", payload: SECRET }] }, /unknown top-level field "task"/],
      ["not-a-wake-up", { leaseq: SECRET }, /"leaseq" must be "wake"/],
      ["bad-type", { tasks: [{ type: "a b", payload: SECRET }] }, /type must be 1-64 characters/],
      ["bad-priority", { tasks: [{ type: "echo", priority: 1e9, payload: SECRET }] }, /priority must be an integer/],
      [
        "bad-runAt",
        { tasks: [{ type: "echo", runAt: "tomorrow", payload: SECRET }] },
        /runAt must be an ISO 8601 time/,
      ],
      [
        "after-9999-runAt",
        { tasks: [{ type: "echo", runAt: Date.UTC(10000, 0, 1), payload: SECRET }] },
        /runAt must be a time from 1970-01-01 to 9999-12-31/,
      ],
      ["bad-delay", { tasks: [{ type: "echo", delayMs: -5, payload: SECRET }] }, /delayMs must be an integer/],
      [
        "huge-payload",
        { tasks: [{ type: "echo", payload: { secret: SECRET, blob: "p".repeat(300 * 1024) } }] },
        /the cap is 262144 bytes/,
      ],
      [
        "deep-payload",
        { tasks: [{ type: "echo", payload: JSON.parse(`${"[".repeat(70)}"${SECRET}"${"]".repeat(70)}`) }] },
        /nests 70 levels deep/,
      ],
      [
        "two-bad-tasks",
        {
          tasks: [
            { id: "bad id", type: "echo", payload: SECRET },
            { type: "unknown-type", payload: SECRET },
          ],
        },
        /^tasks\[0\]: id must be 1-128 characters.*; tasks\[1\]: task type "unknown-type" is not declared by this worker; declared: echo$/,
      ],
    ];
    const handler = createWorker({
      env: functionEnv(adapter, name),
      tasks: { types: { echo: { handler: () => {} } } },
      logger: new Logger({ serviceName: "hostile" }),
    });
    const records = bodies.map(([messageId, body]) => sqsRecord(body, messageId));
    const { result, lines } = await captureStdout(() => handler(sqsEvent(...records), lambdaContext()));
    expect(result.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(bodies.map(([id]) => id));
    const log = JSON.parse(lines.find((line) => line.includes("worker invocation")) ?? "{}");
    const reasons = Object.fromEntries(
      (log.rejected as Array<{ messageId: string; reason: string }>).map((r) => [r.messageId, r.reason]),
    );
    for (const [messageId, , reason] of bodies) expect(reasons[messageId], messageId).toMatch(reason);
    const logged = lines.join("\n");
    assertNoLeak(logged, "worker log");
    expect(logged.length, "the log does not echo the bodies").toBeLessThan(20_000);
    // Nothing but the queue's config, which the worker's cold start writes from its own declaration,
    // and the format's guard against workers of format v0 (docs/storage.md): no task.
    const { config, task, scheduled, ...after } = await snapshot(redis, queue);
    // (A lease lasts the type's heartbeat: 30 s by default.)
    expect(config).toMatchObject({ v: "2", "p:echo": "30000,5" });
    expect(Object.keys(task as Record<string, string>)).toEqual(["#v0"]);
    expect(scheduled).toEqual(["#v0", "0"]);
    expect({ ...after, config: before.config, task: before.task, scheduled: before.scheduled }).toEqual(before);
    tried[`sqs-bodies-${adapter.name}`] = bodies.length;
  }, 60_000);

  it("takes the ids and groups users send, with ':' and '@', through SQS and the library, in order, the check clean", async () => {
    const name = uniqueQueueName("hostile-ids");
    const ran: Array<{ id: string; group: string | undefined }> = [];
    const run = (task: { id: string; group?: string }) => void ran.push({ id: task.id, group: task.group });
    const handler = createWorker({
      env: functionEnv(adapter, name),
      tasks: {
        types: { echo: { handler: run }, charge: { group: { ordered: true }, handler: run } },
      },
      logger: new Logger({ serviceName: "hostile" }),
    });
    const grouped = USER_GROUPS.flatMap((group) =>
      [1, 2, 3].map((n) => ({ id: `${group}-${n}`, type: "charge", group, payload: { n } })),
    );
    const plain = USER_IDS.map((id) => ({ id, type: "echo", payload: { secret: SECRET } }));
    const records = [sqsRecord({ tasks: grouped }, "grouped"), sqsRecord({ tasks: plain }, "plain")];
    const { result } = await captureStdout(() => handler(sqsEvent(...records), lambdaContext()));
    expect(result.batchItemFailures).toEqual([]);
    expect(ran.map((task) => task.id).sort()).toEqual([...grouped, ...plain].map((task) => task.id).sort());
    for (const group of USER_GROUPS)
      expect(
        ran.filter((task) => task.group === group).map((task) => task.id),
        `group ${group} in order`,
      ).toEqual([1, 2, 3].map((n) => `${group}-${n}`));
    const queue = new Queue(store, { name });
    const now = Date.now();
    for (const { id } of [...grouped, ...plain]) expect((await queue.admin.inspect(id))?.state, id).toBe("done");
    expect((await queue.admin.inspect("@email-1"))?.group).toBe("@email");
    const history = await queue.admin.history({ now, minutes: 5 });
    expect(history.done.reduce((a, b) => a + b, 0)).toBe(grouped.length + plain.length);
    // The library takes them as the SQS body did; an id already known is a duplicate.
    expect((await queue.enqueue([{ id: USER_IDS[0], type: "echo" }], { now })).map((r) => r.status)).toEqual([
      "duplicate",
    ]);
    expect(await queue.admin.checkAll({ now }), "leaseq check").toEqual([]);
    tried[`user-ids-${adapter.name}`] = grouped.length + plain.length;
  }, 60_000);
});

describe("the local Upstash endpoint without the token", () => {
  it("refuses every request without the right bearer token, and runs none of them", async () => {
    const url = inject("upstashUrl");
    const token = inject("upstashToken");
    const key = `hostile:${uniqueQueueName("auth")}`;
    const attempts: Array<Record<string, string>> = [
      {},
      { Authorization: "" },
      { Authorization: "Bearer" },
      { Authorization: "Bearer " },
      { Authorization: `Bearer ${token.slice(0, -1)}` },
      { Authorization: `Bearer ${token}x` },
      { Authorization: `bearer ${token}` },
      { Authorization: `Basic ${token}` },
      { Authorization: token },
      { Authorization: `Bearer ${token.toUpperCase()}` },
    ];
    for (const headers of attempts) {
      for (const [path, body] of [
        ["/", ["SET", key, SECRET]],
        ["/pipeline", [["SET", key, SECRET]]],
        ["/multi-exec", [["SET", key, SECRET]]],
        [`/?_token=${token}`, ["SET", key, SECRET]],
      ] as const) {
        const response = await fetch(`${url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
        expect(response.status, `${path} with ${JSON.stringify(headers)}`).toBe(401);
        const text = await response.text();
        expect(JSON.parse(text)).toEqual({ error: expect.stringMatching(/^Unauthorized/) });
        assertNoLeak(text, "401 body");
      }
    }
    expect(await redis.exists(key)).toBe(0);
    tried["endpoint-without-token"] = attempts.length * 4;
  });

  it("a store with a wrong token gets a CredentialsError that names neither token, and writes nothing", async () => {
    const wrong = "wrong-token-3f9a";
    const store = new UpstashStore({
      url: inject("upstashUrl"),
      token: wrong,
      retry: { retries: 0, backoffMs: () => 0 },
    });
    const queue = new Queue(store, { name: uniqueQueueName("hostile-auth") });
    const error = await queue
      .enqueue([{ id: "a", type: "t", payload: { secret: SECRET } }], { now: NOW })
      .catch((e) => e);
    expect(error).toBeInstanceOf(CredentialsError);
    expect(error.message).toMatch(/^enqueue: Upstash rejected the REST token \(401 Unauthorized\)/);
    assertNoLeak(everything(error), "wrong token");
    expect(everything(error)).not.toContain(wrong);
    expect(await taskFields(redis, queue)).toEqual([]);
    tried["wrong-token"] = 1;
  });
});
