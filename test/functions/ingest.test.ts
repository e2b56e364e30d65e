// Strict ingestion: what is not a valid task list or a wake-up goes to the dead-letter queue at
// once with its reason (the worker sends it there); within a message only the invalid tasks do.
import { Logger } from "@aws-lambda-powertools/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalSqs } from "../../dev/standins/sqs/index.js";
import type { TaskDefinitions } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import { captureStdout, functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { taskFields } from "../helpers/invariants.js";
import { closeLocalSqs, openLocalSqs } from "../helpers/local-sqs.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const SECRET = "s3cr3t-payload-never-logged";

/** A type "sync" whose tasks are debounced per document by default (`flow`), its key `doc:<doc>`. */
const debouncedDocs = (delayMs: number, maxWaitMs: number) =>
  ({
    types: {
      sync: {
        leaseMs: 5_000,
        handler: () => {},
        flow: { debounce: { key: (payload: { doc: string }) => `doc:${payload.doc}`, delayMs, maxWaitMs } },
      },
    },
  }) as TaskDefinitions;
const echo = { types: { echo: { leaseMs: 5_000, handler: () => {} }, email: { leaseMs: 5_000, handler: () => {} } } };

describe.each(adapters)("ingest over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);
  let sqs: LocalSqs;
  beforeAll(async () => ({ sqs } = await openLocalSqs()));
  afterAll(() => closeLocalSqs({ sqs }));

  async function setup(extraEnv: Record<string, string> = {}, tasks: TaskDefinitions = echo) {
    const name = uniqueQueueName("ingest");
    const store = await open();
    const worker = createWorker({
      tasks,
      env: functionEnv(adapter, name, {
        LEASEQ_DLQ_URL: sqs.deadLetterQueueUrl,
        LEASEQ_SQS_ENDPOINT: sqs.endpoint,
        ...extraEnv,
      }),
      logger: new Logger({ serviceName: "ingest" }),
    });
    const run = async (...records: ReturnType<typeof sqsRecord>[]) => {
      const before = sqs.deadLetters.length;
      const { result, lines } = await captureStdout(() => worker(sqsEvent(...records), lambdaContext()));
      const log = JSON.parse(lines.find((line) => line.includes("worker invocation")) ?? "{}");
      return { result, log, lines, letters: sqs.deadLetters.slice(before) };
    };
    return { queue: new Queue(store, { name }), run };
  }

  const reasonOf = (letter: LocalSqs["deadLetters"][number]) => letter.messageAttributes.LeaseqReason?.StringValue;

  it("dead-letters every body that is neither a task list nor a wake-up, with its reason, and enqueues nothing", async () => {
    const { queue, run } = await setup();
    const bodies: Array<[string, unknown, string]> = [
      ["typo-task", { task: [{ type: "echo", payload: SECRET }] }, 'unknown top-level field "task"'],
      ["typo-Tasks", { Tasks: [{ type: "echo", payload: SECRET }] }, 'unknown top-level field "Tasks"'],
      [
        "extra-field",
        { tasks: [{ type: "echo" }], priority: 1 },
        'unknown top-level field "priority": the body is {"tasks": [...]}, or a wake-up is exactly {} or {"leaseq": "wake"}',
      ],
      ["bad-wake", { leaseq: "drain" }, '"leaseq" must be "wake"'],
      ["array", [{ type: "echo" }], "body must be a JSON object"],
      ["number", 42, "body must be a JSON object"],
      ["string", JSON.stringify(SECRET), "body must be a JSON object"],
      ["not-json", `{"tasks": [${SECRET}`, "body is not JSON"],
    ];
    const { result, log, lines, letters } = await run(...bodies.map(([id, body]) => sqsRecord(body, id)));
    expect(result.batchItemFailures).toEqual([]);
    expect(letters.map((letter) => letter.messageAttributes.LeaseqSourceMessageId?.StringValue)).toEqual(
      bodies.map(([id]) => id),
    );
    for (const [i, [, body, reason]] of bodies.entries()) {
      expect(reasonOf(letters[i])).toContain(reason);
      // Dead-lettered as sent, so nothing is lost and it can be fixed and redriven.
      expect(letters[i].body).toBe(typeof body === "string" ? body : JSON.stringify(body));
      expect(letters[i].deadLetteredBy).toBe("sent");
    }
    expect(log).toMatchObject({ enqueued: 0, claimed: 0 });
    expect(log.rejected).toHaveLength(bodies.length);
    expect(lines.join("\n")).not.toContain(SECRET);
    expect(await taskFields(redis, queue)).toEqual([]);
  });

  it('takes exactly {} and {"leaseq": "wake"} as wake-ups: nothing enqueued, nothing dead-lettered', async () => {
    const { queue, run } = await setup();
    await queue.enqueue([{ id: "waiting", type: "echo" }], { now: Date.now() });
    const { result, letters, log } = await run(sqsRecord({}), sqsRecord({ leaseq: "wake" }));
    expect(result.batchItemFailures).toEqual([]);
    expect(letters).toEqual([]);
    expect(log).toMatchObject({ enqueued: 0, claimed: 1, done: 1 });
  });

  it('takes a task\'s "group" from the SQS body; the handler sees it, and an ordered group runs in order', async () => {
    const name = uniqueQueueName("ingest-group");
    const store = await open();
    const ran: string[] = [];
    const worker = createWorker({
      tasks: {
        types: {
          charge: {
            leaseMs: 5_000,
            group: { ordered: true },
            handler: (task) => {
              ran.push(`${task.group}:${(task.payload as { n: number }).n}`);
            },
          },
        },
      },
      env: functionEnv(adapter, name, { LEASEQ_CLAIM_BATCH: "10" }),
      logger: new Logger({ serviceName: "ingest", logLevel: "SILENT" }),
    });
    const tasks = [1, 2, 3].flatMap((n) =>
      ["alice", "bob"].map((group) => ({ type: "charge", group, payload: { n } })),
    );
    const { result } = await captureStdout(() => worker(sqsEvent(sqsRecord({ tasks }, "grouped")), lambdaContext()));
    expect(result.batchItemFailures).toEqual([]);
    const queue = new Queue(store, { name });
    expect(await queue.admin.inspect("grouped-0")).toMatchObject({ group: "alice" });
    // One worker, one group each claim at a time: every group's tasks ran, in order.
    expect(ran.filter((run) => run.startsWith("alice"))).toEqual(["alice:1", "alice:2", "alice:3"]);
    expect(ran.filter((run) => run.startsWith("bob"))).toEqual(["bob:1", "bob:2", "bob:3"]);
    expect((await queue.stats({ now: Date.now() })).done).toBe(6);
  });

  it("rejects a misspelled task field and a type the worker does not declare, listing what is allowed", async () => {
    const { queue, run } = await setup();
    const { letters, result } = await run(
      sqsRecord({ tasks: [{ type: "echo", paylod: { to: SECRET } }] }, "typo-field"),
      sqsRecord({ tasks: [{ type: "sms", payload: SECRET }] }, "unknown-type"),
    );
    expect(result.batchItemFailures).toEqual([]);
    expect(letters.map(reasonOf)).toEqual([
      'tasks[0] has unknown field "paylod"; allowed: id, type, payload, priority, delayMs, runAt, group, dedupe, debounce, throttle, singleton',
      'tasks[0]: task type "sms" is not declared by this worker; declared: echo, email',
    ]);
    expect(await queue.stats({ now: Date.now() })).toMatchObject({ ready: 0, done: 0, failed: 0 });
  });

  it("takes flow control from the body, applies a type's default to the tasks without one, and dead-letters a hostile key", async () => {
    const { queue, run } = await setup({}, debouncedDocs(600_000, 900_000));
    const { letters, result } = await run(
      sqsRecord({ tasks: [{ id: "s1", type: "sync", payload: { doc: "7" } }] }, "first"),
      sqsRecord(
        {
          tasks: [
            { id: "s2", type: "sync", payload: { doc: "7", v: 2 } },
            { id: "s3", type: "sync", payload: { doc: "8" }, throttle: { key: "t", perMs: 600_000, onLimit: "defer" } },
            { id: "s4", type: "sync", payload: { doc: "8" }, dedupe: { key: "a{b}", ttlMs: 1_000 } },
            { id: "s5", type: "sync", payload: { doc: "x y" } },
          ],
        },
        "second",
      ),
    );
    expect(result.batchItemFailures).toEqual([]);
    expect(letters.map(reasonOf)).toEqual([
      'tasks[2] (id s4): dedupe.key must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "a{b}"; tasks[3] (id s5): debounce.key must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "doc:x y"',
    ]);
    // The type's debounce: s2 replaced s1, with the last payload.
    expect(await queue.admin.inspect("s1")).toBeUndefined();
    expect(await queue.admin.inspect("s2")).toMatchObject({ state: "scheduled", payload: '{"doc":"7","v":2}' });
    // The body's own throttle, not the type's debounce: the period was free, so s3 ran at once.
    expect((await queue.admin.inspect("s3"))?.state).toMatch(/^(ready|leased|done)$/);
  });

  it("a type's default singleton and a body's own: the later task replaces the one waiting", async () => {
    const docs = {
      types: {
        sync: {
          leaseMs: 5_000,
          handler: () => {},
          flow: { singleton: { key: (payload: { doc: string }) => `doc:${payload.doc}` } },
        },
      },
    };
    const { queue, run } = await setup({}, docs as TaskDefinitions);
    const { letters, result } = await run(
      sqsRecord({ tasks: [{ id: "s1", type: "sync", payload: { doc: "7" } }] }, "first"),
      sqsRecord({ tasks: [{ id: "s2", type: "sync", payload: { doc: "7", v: 2 } }] }, "second"),
      sqsRecord({ tasks: [{ id: "s3", type: "sync", payload: {}, singleton: { key: "own" }, group: "g" }] }, "third"),
    );
    expect(result.batchItemFailures).toEqual([]);
    expect(letters.map(reasonOf)).toEqual([
      'tasks[0] (id s3): a singleton task runs in a lane of its own (one at a time per singleton.key); leave out group, got "g"',
    ]);
    // Both were ingested before the drain: s2 replaced s1, and ran with the last payload.
    expect(await queue.admin.inspect("s1")).toBeUndefined();
    expect(await queue.admin.inspect("s2")).toMatchObject({ group: "@@s:doc:7" });
  });

  it("a message delivered again does not bring back a debounced payload a later message replaced", async () => {
    const { queue, run } = await setup({}, debouncedDocs(60_000, 600_000));
    const first = sqsRecord({ tasks: [{ type: "sync", payload: { doc: "7", v: 1 } }] }, "first");
    const second = sqsRecord({ tasks: [{ type: "sync", payload: { doc: "7", v: 2 } }] }, "second");
    await run(first, second);
    // SQS delivers the first message again (at least once): its task is the one the second replaced.
    const { log } = await run(first);
    expect(log).toMatchObject({ enqueued: 0, duplicates: 1 });
    const waiting = await queue.admin.list("scheduled");
    expect(waiting).toHaveLength(1);
    expect((await queue.admin.inspect(waiting[0].id))?.payload).toBe('{"doc":"7","v":2}');
  });

  it("enqueues the 997 valid tasks of a 1,000-task message once and dead-letters the 3 invalid ones with their indexes", async () => {
    const { queue, run } = await setup();
    const tasks: unknown[] = Array.from({ length: 1000 }, (_, i) => ({
      type: "echo",
      payload: { n: i, secret: SECRET },
    }));
    tasks[10] = { type: "echo", priority: "high" };
    tasks[500] = { type: "fax" };
    tasks[999] = { id: "bad id", type: "echo" };
    const record = sqsRecord({ tasks }, "big-message");
    const first = await run(record);
    expect(first.result.batchItemFailures).toEqual([]);
    expect(first.log).toMatchObject({ enqueued: 997, duplicates: 0 });
    expect(first.letters).toHaveLength(1);
    const [letter] = first.letters;
    expect(JSON.parse(letter.body)).toEqual({ tasks: [tasks[10], tasks[500], tasks[999]] });
    expect(letter.messageAttributes.LeaseqTaskIndexes?.StringValue).toBe("10,500,999");
    expect(letter.messageAttributes.LeaseqSourceMessageId?.StringValue).toBe("big-message");
    expect(reasonOf(letter)).toBe(
      [
        'tasks[10] (id big-message-10): priority must be an integer from -1000 to 1000, got "high"',
        'tasks[500]: task type "fax" is not declared by this worker; declared: echo, email',
        'tasks[999]: id must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "bad id"',
      ].join("; "),
    );
    expect(first.lines.join("\n")).not.toContain(SECRET);
    expect(await queue.stats({ now: Date.now() })).toMatchObject({ done: 997, ready: 0, failed: 0 });

    // SQS delivers the same message again: the valid ones are known already, nothing runs twice.
    const again = await run(record);
    expect(again.log).toMatchObject({ enqueued: 0, duplicates: 997, claimed: 0 });
    expect(await taskFields(redis, queue)).toHaveLength(997);
  });

  it("enqueues and runs tasks whose ids and groups hold ':' and '@', and dead-letters only the still-invalid ones", async () => {
    const { queue, run } = await setup();
    const tasks: unknown[] = [
      { id: "user:42", type: "echo" },
      { id: "sweep-2026-12-01T21:15:00Z", type: "echo", payload: { secret: SECRET } },
      { id: "nightly@2026-12-01T03:00:00Z", type: "email", group: "@email" },
      { type: "email", group: "tenant:1" },
      { id: "a|b", type: "echo" },
      { id: "user:s", type: "echo" },
      { type: "echo", group: "a b" },
      { type: "echo", group: "{g}" },
      { id: "x".repeat(129), type: "echo" },
      { type: "echo", group: "line\nbreak" },
    ];
    const first = await run(sqsRecord({ tasks }, "with-colons"));
    expect(first.result.batchItemFailures).toEqual([]);
    expect(first.log).toMatchObject({ enqueued: 4, duplicates: 0, done: 4 });
    for (const id of ["user:42", "sweep-2026-12-01T21:15:00Z", "nightly@2026-12-01T03:00:00Z", "with-colons-3"])
      expect((await queue.admin.inspect(id))?.state, id).toBe("done");
    expect((await queue.admin.inspect("with-colons-3"))?.group).toBe("tenant:1");
    expect((await queue.admin.inspect("nightly@2026-12-01T03:00:00Z"))?.group).toBe("@email");
    const [letter] = first.letters;
    expect(letter.messageAttributes.LeaseqTaskIndexes?.StringValue).toBe("4,5,6,7,8,9");
    const reason = reasonOf(letter) ?? "";
    expect(reason.split("; ")).toEqual([
      'tasks[4]: id must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "a|b"',
      'tasks[5]: id must not end in ":" and a lower-case letter (the task hash names a task\'s own fields so: "<id>:s" its state), got "user:s"',
      'tasks[6] (id with-colons-6): group must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "a b"',
      'tasks[7] (id with-colons-7): group must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "{g}"',
      expect.stringMatching(/^tasks\[8\]: id must be 1-128 characters of A-Z a-z 0-9 _ \. - : @, got "x+\.\.\.$/),
      'tasks[9] (id with-colons-9): group must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "line\\nbreak"',
    ]);
    expect(first.lines.join("\n")).not.toContain(SECRET);
    const again = await run(sqsRecord({ tasks }, "with-colons"));
    expect(again.log).toMatchObject({ enqueued: 0, duplicates: 4, claimed: 0 });
  });

  it("logs the tasks a throttle key's period dropped as throttled, beside enqueued and duplicates", async () => {
    const { queue, run } = await setup();
    const throttle = { key: "tenant-7", perMs: 60_000 };
    const first = await run(
      sqsRecord({ tasks: [{ id: "t1", type: "echo", throttle }] }, "throttle-1"),
      sqsRecord({ tasks: [{ id: "t2", type: "echo", throttle }] }, "throttle-2"),
      sqsRecord({ tasks: [{ id: "t1", type: "echo" }] }, "throttle-3"),
    );
    expect(first.log).toMatchObject({ enqueued: 1, duplicates: 1, throttled: 1 });
    expect(await queue.admin.inspect("t2")).toBeUndefined();
  });

  it("reports a record in batchItemFailures when the dead-letter queue cannot take it, so it is never lost", async () => {
    const { run } = await setup({ LEASEQ_DLQ_URL: `${sqs.endpoint}/000000000000/no-such-queue` });
    const { result, log } = await run(sqsRecord({ task: [] }, "typo"));
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: "typo" }]);
    expect(log.rejected[0].reason).toMatch(/not dead-lettered: .*SQS will deliver it again/);
  });

  it("fails the whole batch when Redis cannot be reached, so SQS delivers every record again", async () => {
    const down =
      adapter.name === "upstash"
        ? { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", UPSTASH_REDIS_REST_TOKEN: "t" }
        : { REDIS_URL: "redis://127.0.0.1:9" };
    const worker = createWorker({
      tasks: echo,
      env: {
        LEASEQ_QUEUE: uniqueQueueName("down"),
        ...down,
        LEASEQ_DLQ_URL: sqs.deadLetterQueueUrl,
        LEASEQ_SQS_ENDPOINT: sqs.endpoint,
      },
      logger: new Logger({ serviceName: "ingest", logLevel: "SILENT" }),
    });
    // The cold start's first call (writing the queue's config) already fails: nothing is acknowledged.
    await expect(worker(sqsEvent(sqsRecord({ tasks: [{ type: "echo" }] })), lambdaContext())).rejects.toThrow(
      /^configure: .*unreachable/,
    );
  });
});
