// The SQS stand-in kept in Redis, in one process: what a stand-in opened on the same prefix takes
// back, the keys it writes, the fixed port, and how it fails. The kill tests are sqs-kill.test.ts.
import { randomBytes } from "node:crypto";
import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { Redis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import {
  LocalSqs,
  type LocalSqsOpenOptions,
  queueKeys,
  queuesKey,
  RedisMessageStore,
} from "../../../dev/standins/sqs/index.js";
import { deleteMatching } from "../../helpers/redis-keys.js";
import { freePort } from "../../helpers/redis-server.js";
import { closeAfterTest, failure, sqsClient } from "./sqs-client.js";

const redis = new Redis(inject("redisUrl"));
const prefixes: string[] = [];

afterAll(async () => {
  for (const prefix of prefixes) await deleteMatching(redis, `${prefix}:*`);
  redis.disconnect();
});

/** A prefix no other test uses; its keys are deleted when the file ends. */
function uniquePrefix(): string {
  const prefix = `${inject("runPrefix")}-sqs-store-${randomBytes(4).toString("hex")}`;
  prefixes.push(prefix);
  return prefix;
}

/** A stand-in kept in Redis under `prefix`, closed after the test; its mapping is not started. */
async function open(prefix: string, options: Partial<LocalSqsOpenOptions> = {}): Promise<LocalSqs> {
  const sqs = await LocalSqs.open(async () => undefined, {
    queueName: "tasks",
    ...options,
    persistence: { redisUrl: inject("redisUrl"), prefix, ...options.persistence },
  });
  closeAfterTest(sqs);
  return sqs;
}

describe("the SQS stand-in kept in Redis", () => {
  it("gives a stand-in opened later on the same prefix every message, as it was", async () => {
    const prefix = uniquePrefix();
    const first = await open(prefix);
    const attributes = {
      kind: { DataType: "String", StringValue: "echo" },
      blob: { DataType: "Binary", BinaryValue: Buffer.from([0, 1, 255]) },
    };
    const sentMs = Date.now();
    const delayedId = first.send("later", { delaySeconds: 900, messageAttributes: attributes, now: sentMs });
    const nowId = first.send("now", { now: sentMs });
    await first.settled();
    const before = first.queue.all();
    await first.close();

    const second = await open(prefix);
    expect(second.queue.all()).toEqual(before);
    expect(second.queue.all().map((message) => message.messageId)).toEqual([delayedId, nowId]);
    // The delayed one keeps its due time: 15 minutes after it was sent.
    expect(second.stats()).toMatchObject({ visible: 1, delayed: 1 });
    expect(second.queue.all()[0].availableAtMs).toBe(sentMs + 900_000);
  });

  it("writes the documented keys, and deletes a message's records when it is deleted", async () => {
    const prefix = uniquePrefix();
    const sqs = await open(prefix, { queueName: "orders", fifo: true });
    const keys = queueKeys(prefix, "orders.fifo");
    const id = sqs.send("pay", { messageGroupId: "g", messageDeduplicationId: "d1" });
    await sqs.settled();
    expect((await redis.smembers(queuesKey(prefix))).sort()).toEqual(["orders-dlq.fifo", "orders.fifo"]);
    expect(await redis.hkeys(keys.messages)).toEqual([id]);
    expect(JSON.parse((await redis.hget(keys.deliveries, id)) ?? "")).toMatchObject({ receiveCount: 0 });
    expect(await redis.hkeys(keys.deduplication)).toEqual(["d1"]);
    expect(await redis.get(keys.sequence)).toBe("10000000000000000001");

    const [received] = sqs.queue.receive(1);
    await sqs.settled();
    expect(JSON.parse((await redis.hget(keys.deliveries, id)) ?? "")).toMatchObject({
      receiveCount: 1,
      availableAtMs: received.message.availableAtMs,
    });
    sqs.queue.delete(received.receiptHandle);
    await sqs.settled();
    expect(await redis.exists(keys.messages, keys.deliveries)).toBe(0);
    // The deduplication id stays its 5 minutes; the send after them deletes it.
    expect(await redis.hkeys(keys.deduplication)).toEqual(["d1"]);
    sqs.send("later", { messageGroupId: "g", messageDeduplicationId: "d2", now: Date.now() + 300_000 });
    await sqs.settled();
    expect(await redis.hkeys(keys.deduplication)).toEqual(["d2"]);
  });

  it("keeps SequenceNumbers growing across a restart, even with the queue empty", async () => {
    const prefix = uniquePrefix();
    const sendAndDelete = async (sqs: LocalSqs, body: string) => {
      sqs.send(body, { messageGroupId: "g", messageDeduplicationId: body });
      const [received] = sqs.queue.receive(1);
      sqs.queue.delete(received.receiptHandle);
      await sqs.settled();
      return BigInt(received.message.sequenceNumber ?? "0");
    };
    const first = await open(prefix, { fifo: true });
    const before = await sendAndDelete(first, "one");
    await first.close();
    const second = await open(prefix, { fifo: true });
    expect(second.queue.size).toBe(0);
    expect(await sendAndDelete(second, "two")).toBe(before + 1n);
  });

  it("restores the queues of every LocalSqs sharing the broker, as the stack's task and wake queues", async () => {
    const prefix = uniquePrefix();
    const task = await open(prefix);
    const wake = new LocalSqs(async () => undefined, { broker: task.broker, queueName: "wake" });
    closeAfterTest(wake);
    task.send("task");
    wake.send("wake-up");
    await wake.settled();
    await wake.close();
    await task.close();

    const task2 = await open(prefix);
    const wake2 = new LocalSqs(async () => undefined, { broker: task2.broker, queueName: "wake" });
    closeAfterTest(wake2);
    expect(task2.queue.all().map((message) => message.body)).toEqual(["task"]);
    expect(wake2.queue.all().map((message) => message.body)).toEqual(["wake-up"]);
  });

  it("listens on a fixed port again after a restart, with the same queue URLs; a taken port is refused", async () => {
    const prefix = uniquePrefix();
    const port = await freePort();
    const first = await open(prefix);
    await first.listen(port);
    const queueUrl = first.queueUrl;
    expect(queueUrl).toBe(`http://127.0.0.1:${port}/000000000000/tasks`);
    const client = sqsClient(first.endpoint);
    closeAfterTest(client);
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "across" }));
    await first.close();

    const second = await open(prefix);
    await second.listen(port);
    expect(second.queueUrl).toBe(queueUrl);
    const { Messages = [] } = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl }));
    expect(Messages.map((message) => message.Body)).toEqual(["across"]);
    await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: Messages[0].ReceiptHandle }));

    const other = new LocalSqs(async () => undefined, { queueName: "other" });
    closeAfterTest(other);
    await expect(other.listen(port)).rejects.toThrow(`cannot listen on 127.0.0.1:${port}: it is in use`);
  });

  it("answers a send it could not write to Redis with an error, and reports the failed write", async () => {
    const prefix = uniquePrefix();
    const errors: Error[] = [];
    const sqs = await open(prefix, {
      persistence: { redisUrl: inject("redisUrl"), prefix, onError: (error) => errors.push(error) },
    });
    await sqs.listen();
    // A string where the queue's hash belongs: the HSET of the message fails with WRONGTYPE.
    await redis.set(queueKeys(prefix, "tasks").messages, "not a hash");
    // One attempt: the SDK retries an InternalError, and each retry would be a new message in memory.
    const client = sqsClient(sqs.endpoint, { maxAttempts: 1 });
    closeAfterTest(client);
    const error = await failure(client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: "lost" })));
    expect((error as Error).message).toMatch(/a write to Redis \(keys under .*\) failed.*WRONGTYPE/);
    expect(errors.map((reported) => reported.message)).toEqual([
      (error as Error).message.replace(/^local SQS stand-in: /, ""),
    ]);
    await expect(sqs.settled()).resolves.toBeUndefined();
    await redis.del(queueKeys(prefix, "tasks").messages);
  });

  it("refuses to open on options it cannot use, naming every problem, or on a Redis it cannot reach", async () => {
    await expect(RedisMessageStore.connect({ redisUrl: "localhost:6379", prefix: "" })).rejects.toThrow(
      /redisUrl must be redis:\/\/host:port or rediss:\/\/host:port; got "localhost:6379"; prefix must be a non-empty string/,
    );
    const closed = await freePort();
    await expect(
      open(uniquePrefix(), { persistence: { redisUrl: `redis://127.0.0.1:${closed}`, prefix: "x" } }),
    ).rejects.toThrow(
      `cannot open the SQS stand-in's Redis store at redis://127.0.0.1:${closed}: connect ECONNREFUSED`,
    );
  });

  it("refuses to open on a record it cannot read, naming its key and field", async () => {
    const prefix = uniquePrefix();
    const first = await open(prefix);
    const id = first.send("fine");
    await first.close();
    await redis.hset(queueKeys(prefix, "tasks").messages, id, JSON.stringify({ position: 0, body: "x" }));
    await expect(open(prefix)).rejects.toThrow(
      `cannot restore SQS queue tasks from Redis: ${prefix}:tasks:messages field ${id} has no number sentMs`,
    );
  });
});
