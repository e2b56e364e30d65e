// The SQS stand-in kept in Redis, killed with SIGKILL in the middle of its work and started again on
// the same prefix and port: no message a producer was told was sent is lost, none comes back after
// it was deleted, and a client keeps its queue URL across the restart.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import {
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  type ReceiveMessageCommandInput,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, inject, it } from "vitest";
import { deleteMatching } from "../../helpers/redis-keys.js";
import { freePort } from "../../helpers/redis-server.js";
import type { ChildSettings } from "./sqs-child.js";
import { closeAfterTest, sqsClient } from "./sqs-client.js";

const CHILD = fileURLToPath(new URL("./sqs-child.ts", import.meta.url));
const prefixes: string[] = [];
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const child of children) child.kill("SIGKILL");
  children.clear();
});

afterAll(async () => {
  const redis = new Redis(inject("redisUrl"));
  try {
    for (const prefix of prefixes) await deleteMatching(redis, `${prefix}:*`);
  } finally {
    redis.disconnect();
  }
});

/** A prefix no other test uses; its keys are deleted when the file ends. */
function uniquePrefix(): string {
  const prefix = `${inject("runPrefix")}-sqs-kill-${randomBytes(4).toString("hex")}`;
  prefixes.push(prefix);
  return prefix;
}

interface Child {
  queueUrl: string;
  deadLetterQueueUrl: string;
  /** The message ids its hanging handler was invoked with so far. */
  invoked: string[];
  /** SIGKILL, and wait until it is gone. */
  kill(): Promise<void>;
}

/** Starts the stand-in in a child process and waits until it listens. */
async function startChild(settings: Omit<ChildSettings, "redisUrl">): Promise<Child> {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD], {
    env: { ...process.env, SQS_CHILD: JSON.stringify({ ...settings, redisUrl: inject("redisUrl") }) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const invoked: string[] = [];
  const exited = once(child, "exit");
  const ready = new Promise<string[]>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      const [word, ...rest] = line.split(" ");
      if (word === "ready") resolve(rest);
      if (word === "invoked") invoked.push(rest[0]);
    });
    exited.then(() => reject(new Error(`the child stand-in exited before it listened: ${stderr}`)));
  });
  const [queueUrl, deadLetterQueueUrl] = await ready;
  return {
    queueUrl,
    deadLetterQueueUrl,
    invoked,
    kill: async () => {
      child.kill("SIGKILL");
      await exited;
      children.delete(child);
    },
  };
}

/** Receives until the queue gives nothing, deleting each message unless `keep`; returns them all. */
async function drain(client: SQSClient, queueUrl: string, keep = false): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const { Messages = [] } = await client.send(receiveAll(queueUrl));
    if (Messages.length === 0) return all;
    all.push(...Messages);
    if (keep) continue;
    const Entries = Messages.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle }));
    const { Failed = [] } = await client.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries }));
    expect(Failed).toEqual([]);
  }
}

const receiveAll = (queueUrl: string, input: Partial<ReceiveMessageCommandInput> = {}) =>
  new ReceiveMessageCommand({
    QueueUrl: queueUrl,
    MaxNumberOfMessages: 10,
    MessageSystemAttributeNames: ["All"],
    VisibilityTimeout: 300,
    ...input,
  });

/** The settings a test gives its stand-in: the rest (Redis, prefix, port) are the same on every start. */
type StandInSettings = Omit<ChildSettings, "redisUrl" | "prefix" | "port">;

/**
 * Starts the stand-in with `settings` on a prefix and port of its own, with a client of it (closed
 * after the test); `restart` starts it again on the same prefix and port, with `changes` if any.
 */
async function standIn(settings: StandInSettings) {
  const prefix = uniquePrefix();
  const port = await freePort();
  const first = await startChild({ prefix, port, ...settings });
  const client = sqsClient(new URL(first.queueUrl).origin);
  closeAfterTest(client);
  const restart = (changes: Partial<StandInSettings> = {}) => startChild({ prefix, port, ...settings, ...changes });
  return { first, client, restart };
}

const bodies = (messages: Message[]) => messages.map((message) => message.Body);
const receiveCounts = (messages: Message[]) =>
  Object.fromEntries(messages.map((message) => [message.Body, message.Attributes?.ApproximateReceiveCount]));

describe("the SQS stand-in kept in Redis, killed and started again", () => {
  it("loses none of 100 messages acknowledged before a SIGKILL, and gives none twice once deleted", async () => {
    const { first, client, restart } = await standIn({ queueName: "tasks" });
    const sent = Array.from({ length: 100 }, (_, index) => `m${index}`);
    await Promise.all(
      sent.map((body) => client.send(new SendMessageCommand({ QueueUrl: first.queueUrl, MessageBody: body }))),
    );
    await first.kill();

    const second = await restart();
    expect(second.queueUrl).toBe(first.queueUrl);
    const received = await drain(client, second.queueUrl);
    expect(bodies(received).sort()).toEqual([...sent].sort());
    await second.kill();

    const third = await restart();
    expect(await drain(client, third.queueUrl)).toEqual([]);
  });

  it("makes messages in flight at the kill visible again at once, and does not bring a deleted one back", async () => {
    const { first, client, restart } = await standIn({ queueName: "tasks" });
    for (const body of ["a", "b", "c", "d", "e"]) {
      await client.send(new SendMessageCommand({ QueueUrl: first.queueUrl, MessageBody: body }));
    }
    // a, b, c in flight for 300 s; a deleted; d, e never received; then the kill.
    const { Messages = [] } = await client.send(receiveAll(first.queueUrl, { MaxNumberOfMessages: 3 }));
    expect(bodies(Messages)).toEqual(["a", "b", "c"]);
    await client.send(new DeleteMessageCommand({ QueueUrl: first.queueUrl, ReceiptHandle: Messages[0].ReceiptHandle }));
    await first.kill();

    const second = await restart();
    const received = await drain(client, second.queueUrl, true);
    expect(bodies(received)).toEqual(["b", "c", "d", "e"]);
    expect(receiveCounts(received)).toEqual({ b: "2", c: "2", d: "1", e: "1" });
  });

  it("gives back the records a mapping's invocation held when the process was killed", async () => {
    const { first, client, restart } = await standIn({ queueName: "intake", hang: true });
    // One batch, so its three messages arrive together and the one poller takes them in one invocation.
    const Entries = ["x", "y", "z"].map((body) => ({ Id: body, MessageBody: body }));
    const { Successful = [] } = await client.send(new SendMessageBatchCommand({ QueueUrl: first.queueUrl, Entries }));
    const ids = Successful.map((entry) => entry.MessageId);
    const deadline = Date.now() + 10_000;
    while (first.invoked.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(first.invoked.sort()).toEqual([...ids].sort());
    await first.kill();

    const second = await restart({ hang: false });
    const received = await drain(client, second.queueUrl, true);
    expect(received.map((message) => message.MessageId).sort()).toEqual([...ids].sort());
    expect(new Set(received.map((message) => message.Attributes?.ApproximateReceiveCount))).toEqual(new Set(["2"]));
  });

  it("keeps FIFO order within each group, the sequence numbers and the deduplication window", async () => {
    const { first, client, restart } = await standIn({ queueName: "orders", fifo: true });
    const send = (body: string, group: string) =>
      client.send(
        new SendMessageCommand({
          QueueUrl: first.queueUrl,
          MessageBody: body,
          MessageGroupId: group,
          MessageDeduplicationId: body,
        }),
      );
    const firstSends = [];
    for (let index = 1; index <= 4; index++) {
      firstSends.push(await send(`a${index}`, "a"));
      firstSends.push(await send(`b${index}`, "b"));
    }
    // a1 and a2 in flight at the kill: group a must still start with them.
    const { Messages = [] } = await client.send(receiveAll(first.queueUrl, { MaxNumberOfMessages: 2 }));
    expect(bodies(Messages)).toEqual(["a1", "a2"]);
    await first.kill();

    const second = await restart();
    const repeat = await send("b1", "b");
    expect(repeat).toMatchObject({ MessageId: firstSends[1].MessageId, SequenceNumber: firstSends[1].SequenceNumber });
    const later = await send("a5", "a");
    const highest = BigInt(firstSends[firstSends.length - 1].SequenceNumber ?? "0");
    expect(BigInt(later.SequenceNumber ?? "0")).toBeGreaterThan(highest);

    const received = await drain(client, second.queueUrl);
    const inGroup = (group: string) =>
      received.filter((message) => message.Attributes?.MessageGroupId === group).map((message) => message.Body);
    expect(inGroup("a")).toEqual(["a1", "a2", "a3", "a4", "a5"]);
    expect(inGroup("b")).toEqual(["b1", "b2", "b3", "b4"]);
    const sequence = received.map((message) => BigInt(message.Attributes?.SequenceNumber ?? "0"));
    for (const group of ["a", "b"]) {
      const numbers = sequence.filter((_, index) => received[index].Attributes?.MessageGroupId === group);
      expect([...numbers].sort((x, y) => (x < y ? -1 : 1))).toEqual(numbers);
    }
  });

  it("keeps a message the redrive policy moved to the dead-letter queue there", async () => {
    const { first, client, restart } = await standIn({ queueName: "jobs", maxReceiveCount: 1 });
    const { MessageId } = await client.send(
      new SendMessageCommand({ QueueUrl: first.queueUrl, MessageBody: "poison" }),
    );
    // Received once and visible again at once; the next receive moves it instead of handing it out.
    expect(bodies((await client.send(receiveAll(first.queueUrl, { VisibilityTimeout: 0 }))).Messages ?? [])).toEqual([
      "poison",
    ]);
    expect((await client.send(receiveAll(first.queueUrl))).Messages).toBeUndefined();
    await first.kill();

    const second = await restart();
    expect(await drain(client, second.queueUrl, true)).toEqual([]);
    const deadLetters = await drain(client, second.deadLetterQueueUrl, true);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({
      MessageId,
      Body: "poison",
      Attributes: {
        ApproximateReceiveCount: "2",
        DeadLetterQueueSourceArn: "arn:aws:sqs:local:000000000000:jobs",
      },
    });
  });
});
