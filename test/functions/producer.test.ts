// The producer refuses, before anything reaches SQS or Redis, what the worker would dead-letter:
// an undeclared type, a field a task does not have, a payload its type's schema rejects. On a FIFO
// queue it sends each group's tasks in messages of their own, with SQS's group and deduplication ids.
import { type SendMessageBatchCommand, type SendMessageBatchRequestEntry, SQSClient } from "@aws-sdk/client-sqs";
import * as v from "valibot";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { LocalSqs } from "../../dev/standins/sqs/index.js";
import { createProducer, fifoBodies } from "../../functions/producer.js";
import type { StandardSchemaV1 } from "../../functions/schema.js";
import { defineTasks, type Task } from "../../functions/tasks.js";
import { ConfigError, InvalidInputError } from "../../shared/errors.js";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { closeLocalSqs, openLocalSqs } from "../helpers/local-sqs.js";
import { adapters, redisUrl, storeFixture, uniqueQueueName } from "../helpers/stores.js";

/** A schema of no library: async, as the standard allows, refusing an odd `n`. */
const evenNumber: StandardSchemaV1<{ n: number }> = {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: async (value) => {
      const n = (value as { n?: unknown })?.n;
      return typeof n === "number" && n % 2 === 0
        ? { value: { n } }
        : { issues: [{ message: "must be an even number", path: [{ key: "n" }] }] };
    },
  },
};

const tasks = defineTasks({
  types: {
    email: { schema: z.object({ to: z.string(), cc: z.array(z.string()).optional() }), handler: () => {} },
    resize: { schema: v.object({ image: v.string(), width: v.pipe(v.number(), v.minValue(1)) }), handler: () => {} },
    even: { schema: evenNumber, handler: () => {} },
    echo: { handler: (_task: Task<{ text: string }>) => {} },
  },
  acceptTypes: ["report"],
});

let sqs: LocalSqs;
let client: SQSClient;
const store = TcpStore.fromUrl(redisUrl());

beforeAll(async () => {
  ({ sqs, client } = await openLocalSqs());
});
afterAll(async () => {
  await closeLocalSqs({ sqs, client });
  await store.close();
});
afterEach(() => {
  sqs.queue.purge();
});

/** What a refused call threw; fails the test when it did not throw. */
async function refusal(call: () => Promise<unknown>): Promise<Error> {
  const error = await call().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, "the call must be refused").toBeInstanceOf(Error);
  return error as Error;
}

describe("a producer given the task declaration", () => {
  it("sends the declared types, accepted ones included, with the payloads their schemas take", async () => {
    const producer = createProducer({ queueUrl: sqs.queueUrl, client, tasks });
    const sent = await producer.send([
      { id: "e1", type: "email", payload: { to: "a@example.com" } },
      { id: "r1", type: "resize", payload: { image: "cat.png", width: 64 }, group: "cats" },
      { id: "n1", type: "even", payload: { n: 4 }, priority: -1 },
      { id: "x1", type: "echo", payload: { text: "hi" } },
      { id: "p1", type: "report", payload: [1, 2] },
    ]);
    expect(sent).toEqual({ ids: ["e1", "r1", "n1", "x1", "p1"], messages: 1 });
    const [message] = sqs.queue.all();
    expect(JSON.parse(message.body).tasks.map((task: { id: string }) => task.id)).toEqual([
      "e1",
      "r1",
      "n1",
      "x1",
      "p1",
    ]);
  });

  it("refuses a misspelled type, naming it and the declared ones, and sends nothing of the call", async () => {
    const producer = createProducer({ queueUrl: sqs.queueUrl, client, tasks });
    const error = await refusal(() =>
      producer.send([
        { type: "email", payload: { to: "a@example.com" } },
        { type: "resiez", payload: { image: "cat.png", width: 64 } } as never,
      ]),
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toBe(
      'send: nothing sent, 1 problem: tasks[1]: task type "resiez" is not declared; declared: email, resize, even, echo, report',
    );
    expect(sqs.queue.all()).toHaveLength(0);
  });

  it("refuses payloads their schemas reject (zod, valibot, an async one), naming the task, type, field and why", async () => {
    const producer = createProducer({ queueUrl: sqs.queueUrl, client, tasks });
    const error = await refusal(() =>
      producer.send([
        { type: "email", payload: { to: 42 } } as never,
        { type: "email", payload: { to: "fine@example.com" } },
        { type: "resize", payload: { image: "cat.png", width: 0 } },
        { type: "even", payload: { n: 3 } },
        { type: "email", payload: { to: "a@example.com", cc: ["b", 7] } } as never,
      ]),
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    const problems = error.message.replace(/^send: nothing sent, 4 problems: /, "").split("; ");
    expect(problems[0]).toMatch(/^tasks\[0\] \(type "email"\): payload\.to: .*expected string/);
    expect(problems[1]).toMatch(/^tasks\[2\] \(type "resize"\): payload\.width: .*1/);
    expect(problems[2]).toBe('tasks[3] (type "even"): payload.n: must be an even number');
    expect(problems[3]).toMatch(/^tasks\[4\] \(type "email"\): payload\.cc\[1\]: .*expected string/);
    expect(sqs.queue.all()).toHaveLength(0);
  });

  it("refuses a field a task does not have, naming it and the allowed ones", async () => {
    const producer = createProducer({ queueUrl: sqs.queueUrl, client, tasks });
    const error = await refusal(() =>
      producer.send([{ type: "echo", paylod: { text: "hi" } } as never, { type: "report", delay: 5 } as never]),
    );
    expect(error.message).toContain(
      'tasks[0] has unknown field "paylod"; allowed: id, type, payload, priority, delayMs, runAt, group, dedupe, debounce, throttle, singleton',
    );
    expect(error.message).toContain('tasks[1] has unknown field "delay"');
    expect(sqs.queue.all()).toHaveLength(0);
  });

  it("checks producer.enqueue the same way: nothing reaches Redis, no wake-up is sent", async () => {
    const queue = new Queue(store, { name: uniqueQueueName("producer") });
    const producer = createProducer({ queueUrl: sqs.queueUrl, client, tasks });
    const error = await refusal(() =>
      producer.enqueue(queue, [
        { id: "ok", type: "email", payload: { to: "a@example.com" } },
        { id: "bad", type: "resize", payload: { image: "cat.png", width: -1 } },
      ]),
    );
    expect(error.message).toMatch(/^enqueue: nothing sent, 1 problem: tasks\[1\] \(type "resize"\): payload\.width: /);
    expect(await queue.admin.inspect("ok")).toBeUndefined();
    expect(sqs.queue.all()).toHaveLength(0);

    const done = await producer.enqueue(queue, [{ id: "ok", type: "email", payload: { to: "a@example.com" } }]);
    expect(done.results).toEqual([{ id: "ok", status: "ok", state: "ready" }]);
  });
});

describe("a producer without a declaration", () => {
  it("takes any type, and still refuses an unknown field before sending", async () => {
    const producer = createProducer({ queueUrl: sqs.queueUrl, client });
    await producer.send([{ id: "any", type: "anything", payload: 1 }]);
    expect(sqs.queue.all()).toHaveLength(1);
    sqs.queue.purge();
    const error = await refusal(() => producer.send([{ type: "thumbnail", paylod: {} } as never]));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toContain('tasks[0] has unknown field "paylod"; allowed:');
    expect(sqs.queue.all()).toHaveLength(0);
  });
});

/** An SQS client that records what it is asked to send; the stand-in has no FIFO queues. */
function recordingClient() {
  const entries: Array<SendMessageBatchRequestEntry & { QueueUrl: string }> = [];
  const client = {
    async send(command: SendMessageBatchCommand) {
      for (const entry of command.input.Entries ?? [])
        entries.push({ ...entry, QueueUrl: String(command.input.QueueUrl) });
      return { Successful: [], Failed: [] };
    },
  } as unknown as SQSClient;
  return { client, entries };
}

describe("a producer for a FIFO queue", () => {
  const fifoUrl = "https://sqs.us-east-1.amazonaws.com/123456789012/intake.fifo";

  it("never mixes groups in a message, keeps each group's order, and gives ungrouped tasks message groups of their own", async () => {
    const { client: recorder, entries } = recordingClient();
    const producer = createProducer({ queueUrl: fifoUrl, client: recorder, tasks });
    const sent = [
      { id: "a1", type: "report" as const, group: "alice" },
      { id: "u1", type: "report" as const },
      { id: "b1", type: "report" as const, group: "bob" },
      { id: "a2", type: "report" as const, group: "alice" },
      { id: "u2", type: "report" as const },
      { id: "b2", type: "report" as const, group: "bob" },
    ];
    await producer.send(sent);
    const messages = entries.map((entry) => ({
      group: entry.MessageGroupId,
      ids: JSON.parse(String(entry.MessageBody)).tasks.map((task: { id: string }) => task.id),
      dedupe: entry.MessageDeduplicationId,
      delay: entry.DelaySeconds,
    }));
    expect(messages.map(({ group, ids }) => ({ group, ids }))).toEqual([
      { group: "alice", ids: ["a1", "a2"] },
      { group: "u1", ids: ["u1", "u2"] },
      { group: "bob", ids: ["b1", "b2"] },
    ]);
    for (const message of messages) {
      expect(message.dedupe).toMatch(/^[0-9a-f]{64}$/);
      expect(message.delay).toBeUndefined();
    }
    expect(new Set(messages.map((message) => message.dedupe)).size).toBe(3);

    // The same tasks again: the same deduplication ids, so SQS drops the resend.
    entries.length = 0;
    await producer.send(sent);
    expect(entries.map((entry) => entry.MessageDeduplicationId)).toEqual(messages.map((message) => message.dedupe));
  });

  it("splits a large group over several messages, in order", () => {
    const many = Array.from({ length: 2500 }, (_, i) => ({ id: `t${i}`, type: "report", group: "g" }));
    const bodies = fifoBodies(many);
    expect(bodies.map((body) => body.ids.length)).toEqual([1000, 1000, 500]);
    expect(bodies.flatMap((body) => body.ids)).toEqual(many.map((task) => task.id));
    expect(new Set(bodies.map((body) => body.messageGroupId))).toEqual(new Set(["g"]));
  });

  it("puts ungrouped tasks of one flow key in one message group, in their send order; other ungrouped tasks each in a group of their own", () => {
    const debounce = { key: "doc-9", delayMs: 1_000, maxWaitMs: 10_000 };
    const bodies = fifoBodies([
      { id: "d1", type: "report", debounce, payload: { v: 1 } },
      { id: "x1", type: "report" },
      { id: "s1", type: "report", singleton: { key: "nightly" } },
      { id: "d2", type: "report", debounce, payload: { v: 2 } },
      { id: "g1", type: "report", group: "alice", debounce },
    ]);
    const groupOf = new Map(bodies.flatMap((body) => body.ids.map((id) => [id, body.messageGroupId])));
    expect(groupOf.get("d1")).toBe("flow:debounce:doc-9");
    expect(groupOf.get("d2")).toBe("flow:debounce:doc-9");
    expect(bodies.find((body) => body.ids.includes("d1"))?.ids).toEqual(["d1", "d2"]);
    expect(groupOf.get("s1")).toBe("flow:singleton:nightly");
    expect(groupOf.get("x1")).toBe("x1");
    // A task with a group keeps its group's order.
    expect(groupOf.get("g1")).toBe("alice");
    const long = fifoBodies([{ id: "l", type: "report", dedupe: { key: "k".repeat(128), ttlMs: 1_000 } }]);
    expect(long[0].messageGroupId).toMatch(/^flow:dedupe:k+-[0-9a-f]{16}$/);
    expect(long[0].messageGroupId?.length).toBe(128);
  });

  it("refuses wake-ups to a FIFO queue, naming wakeQueueUrl, before enqueuing anything", async () => {
    const { client: recorder, entries } = recordingClient();
    const queue = new Queue(store, { name: uniqueQueueName("producer-fifo") });
    const producer = createProducer({ queueUrl: fifoUrl, client: recorder, tasks });
    const woken = await refusal(() => producer.wake());
    expect(woken).toBeInstanceOf(ConfigError);
    expect(woken.message).toContain(`wakeQueueUrl (not given: queueUrl) ${fifoUrl} is a FIFO queue`);
    const enqueued = await refusal(() => producer.enqueue(queue, [{ id: "t1", type: "report" }]));
    expect(enqueued).toBeInstanceOf(ConfigError);
    expect(await queue.admin.inspect("t1")).toBeUndefined();
    expect(entries).toHaveLength(0);
  });

  it("sends the wake-ups of enqueue to wakeQueueUrl, a standard queue", async () => {
    const queue = new Queue(store, { name: uniqueQueueName("producer-wake") });
    const producer = createProducer({ queueUrl: fifoUrl, wakeQueueUrl: sqs.queueUrl, client, tasks });
    const { wakeAtMs } = await producer.enqueue(queue, [{ id: "t1", type: "report" }]);
    expect(wakeAtMs).toBeDefined();
    expect(sqs.queue.all().map((message) => message.body)).toEqual(['{"leaseq":"wake"}']);
  });
});

// Once the tasks are in Redis, the call succeeds: a wake-up that cannot be sent is said, not thrown
// (a retry would only find the tasks duplicates). It throws only when nothing was written.
describe.each(adapters)("a direct enqueue whose wake-up fails, over $name", (adapter) => {
  const { open } = storeFixture(adapter);

  it("succeeds with the results and says the wake-up failed; nothing is written when Redis refuses", async () => {
    const queue = new Queue(await open(), { name: uniqueQueueName("wake-fails") });
    // Nothing listens on this port: every SQS call is refused.
    const dead = new SQSClient({
      endpoint: "http://127.0.0.1:9",
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      maxAttempts: 1,
    });
    try {
      const producer = createProducer({ queueUrl: "http://127.0.0.1:9/000000000000/tasks", client: dead, tasks });
      const result = await producer.enqueue(queue, [{ id: "in-1", type: "report" }]);
      expect(result.results).toEqual([{ id: "in-1", status: "ok", state: "ready" }]);
      expect(result.wakeAtMs).toBeDefined();
      expect(result.wakeError).toMatch(/ECONNREFUSED|connect/);
      expect(await queue.admin.inspect("in-1")).toMatchObject({ state: "ready" });
      // The caller's retry, as it would after an error: the task is known, nothing twice.
      const again = await producer.enqueue(queue, [{ id: "in-1", type: "report" }]);
      expect(again.results).toEqual([{ id: "in-1", status: "duplicate", state: "ready" }]);
      // A call refused before anything is written throws, typed; and so does one Redis cannot take.
      const capped = new Queue(await open(), { name: queue.name, settings: { maxPayloadBytes: 10 } });
      await expect(
        producer.enqueue(capped, [{ id: "in-2", type: "report", payload: "x".repeat(50) }]),
      ).rejects.toBeInstanceOf(InvalidInputError);
      const deadStore = TcpStore.fromUrl("redis://127.0.0.1:9");
      const unreachable = new Queue(deadStore, { name: queue.name });
      await expect(producer.enqueue(unreachable, [{ id: "in-3", type: "report" }])).rejects.toThrow(/unreachable/);
      await deadStore.close();
      for (const id of ["in-2", "in-3"]) expect(await queue.admin.inspect(id)).toBeUndefined();
    } finally {
      dead.destroy();
      await queue.admin.drop({ confirm: queue.name });
    }
  });
});
