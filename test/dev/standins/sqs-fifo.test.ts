import { createHash } from "node:crypto";
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type ReceiveMessageCommandInput,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SendMessageCommandInput,
} from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";
import { LocalSqs, type LocalSqsOptions, SqsBroker, SqsError } from "../../../dev/standins/sqs/index.js";
import { closeAfterTest, failure, sqsClient } from "./sqs-client.js";

/** A listening FIFO stand-in (`orders.fifo`, `orders-dlq.fifo`) and a real SQSClient pointed at it. */
async function openFifo(options: LocalSqsOptions = {}) {
  const sqs = new LocalSqs(async () => undefined, { queueName: "orders", fifo: true, ...options });
  const { url } = await sqs.listen();
  const client = sqsClient(url);
  closeAfterTest(sqs, client);
  const send = (input: Partial<SendMessageCommandInput>) =>
    client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: "m", ...input }));
  const receive = async (input: Partial<ReceiveMessageCommandInput> = {}, queueUrl = sqs.queueUrl) =>
    (
      await client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          MessageSystemAttributeNames: ["All"],
          ...input,
        }),
      )
    ).Messages ?? [];
  const remove = (message: Message) =>
    client.send(new DeleteMessageCommand({ QueueUrl: sqs.queueUrl, ReceiptHandle: message.ReceiptHandle }));
  const attributes = async (queueUrl = sqs.queueUrl) =>
    (await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["All"] }))).Attributes ??
    {};
  return { sqs, client, send, receive, remove, attributes };
}

const bodies = (messages: Message[]) => messages.map((message) => message.Body);

describe("a FIFO queue of the local SQS stand-in, called by @aws-sdk/client-sqs", () => {
  it("is named <name>.fifo with a FIFO dead-letter queue, and says so in its attributes", async () => {
    const { sqs, attributes } = await openFifo();
    expect(sqs.queueUrl).toMatch(/\/000000000000\/orders\.fifo$/);
    expect(sqs.deadLetterQueueUrl).toMatch(/\/000000000000\/orders-dlq\.fifo$/);
    expect(await attributes()).toMatchObject({
      FifoQueue: "true",
      ContentBasedDeduplication: "false",
      DeduplicationScope: "queue",
      QueueArn: "arn:aws:sqs:local:000000000000:orders.fifo",
    });
    expect(JSON.parse((await attributes()).RedrivePolicy ?? "{}").deadLetterTargetArn).toBe(
      "arn:aws:sqs:local:000000000000:orders-dlq.fifo",
    );
    expect((await attributes(sqs.deadLetterQueueUrl)).FifoQueue).toBe("true");
  });

  it("answers sends with growing sequence numbers, and concurrent receivers get each group in send order", async () => {
    const { sqs, client, receive, remove } = await openFifo({ visibilityTimeoutMs: 30_000 });
    const groups = ["a", "b", "c"];
    const sequenceNumbers: bigint[] = [];
    for (let round = 0; round < 10; round++) {
      const reply = await client.send(
        new SendMessageBatchCommand({
          QueueUrl: sqs.queueUrl,
          Entries: groups.map((group) => ({
            Id: group,
            MessageBody: `${group}${round}`,
            MessageGroupId: group,
            MessageDeduplicationId: `${group}-${round}`,
          })),
        }),
      );
      for (const entry of reply.Successful ?? []) {
        expect(entry.SequenceNumber).toMatch(/^\d{20}$/);
        sequenceNumbers.push(BigInt(entry.SequenceNumber ?? ""));
      }
    }
    expect(sequenceNumbers).toHaveLength(30);
    expect(sequenceNumbers.every((number, n) => n === 0 || number > sequenceNumbers[n - 1])).toBe(true);

    // Five receivers at once, each taking a while over what it got, then recording and deleting it
    // before its next receive: a message handed out while an earlier one of its group is being
    // processed would be recorded out of order.
    const received = new Map<string, string[]>(groups.map((group) => [group, []]));
    let total = 0;
    const receiver = async (max: number) => {
      while (total < 30) {
        const messages = await receive({ MaxNumberOfMessages: max, WaitTimeSeconds: 1 });
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
        for (const message of messages) {
          received.get(message.Attributes?.MessageGroupId ?? "")?.push(message.Body ?? "");
        }
        total += messages.length;
        await Promise.all(messages.map(remove));
      }
    };
    await Promise.all([1, 2, 3, 5, 10].map(receiver));
    for (const group of groups) {
      expect(received.get(group)).toEqual(Array.from({ length: 10 }, (_, round) => `${group}${round}`));
    }
  });

  it("hands out no later message of a group while one of it is in flight; a delete wakes a long poll for the next", async () => {
    const { sqs, client, send, receive, remove } = await openFifo();
    await send({ MessageBody: "a1", MessageGroupId: "a", MessageDeduplicationId: "a1" });
    await send({ MessageBody: "a2", MessageGroupId: "a", MessageDeduplicationId: "a2" });
    await send({ MessageBody: "b1", MessageGroupId: "b", MessageDeduplicationId: "b1" });
    const [a1] = await receive({ MaxNumberOfMessages: 1 });
    expect(a1.Body).toBe("a1");
    expect(bodies(await receive())).toEqual(["b1"]);
    expect(await receive()).toEqual([]);

    // a1 visible again: the next receive gives it and a2 after it, several of one group in order.
    await client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: sqs.queueUrl,
        ReceiptHandle: a1.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const again = await receive();
    expect(again.map((message) => [message.Body, message.Attributes?.ApproximateReceiveCount])).toEqual([
      ["a1", "2"],
      ["a2", "1"],
    ]);
    // a1 visible again while a2 is in flight: the group still gives nothing, or a1 could overtake a2.
    await client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: sqs.queueUrl,
        ReceiptHandle: again[0].ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    expect(await receive()).toEqual([]);
    await send({ MessageBody: "a3", MessageGroupId: "a", MessageDeduplicationId: "a3" });
    await remove(again[0]);
    // a2 is still in flight, so a3 waits; deleting a2 ends the long poll with a3.
    const polling = receive({ WaitTimeSeconds: 10 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await remove(again[1]);
    expect(bodies(await polling)).toEqual(["a3"]);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("accepts a deduplication id seen in the last 5 minutes with the first message's id, and stores nothing", async () => {
    const { sqs, send, receive, remove, attributes } = await openFifo();
    const first = await send({ MessageBody: "pay 10", MessageGroupId: "g", MessageDeduplicationId: "order-1" });
    const repeat = await send({ MessageBody: "pay 10", MessageGroupId: "g", MessageDeduplicationId: "order-1" });
    expect(repeat).toMatchObject({ MessageId: first.MessageId, SequenceNumber: first.SequenceNumber });
    expect((await attributes()).ApproximateNumberOfMessages).toBe("1");
    // Received and deleted, the id is still remembered, as SQS keeps it for the interval.
    await remove((await receive())[0]);
    const afterDelete = await send({
      MessageBody: "other body",
      MessageGroupId: "g",
      MessageDeduplicationId: "order-1",
    });
    expect(afterDelete.MessageId).toBe(first.MessageId);
    expect((await attributes()).ApproximateNumberOfMessages).toBe("0");

    // Travel in time with the in-process send's `now` rather than wait 5 minutes.
    const past = Date.now() - 10 * 60_000;
    const old = sqs.send("early", { messageGroupId: "t", messageDeduplicationId: "timed", now: past });
    const within = sqs.send("early", { messageGroupId: "t", messageDeduplicationId: "timed", now: past + 299_999 });
    expect(within).toBe(old);
    const after = sqs.send("early", { messageGroupId: "t", messageDeduplicationId: "timed", now: past + 300_000 });
    expect(after).not.toBe(old);
    // Over the wire now, 10 minutes after the first: a new message again.
    const fresh = await send({ MessageBody: "early", MessageGroupId: "t", MessageDeduplicationId: "timed" });
    expect([old, after]).not.toContain(fresh.MessageId);
    expect(bodies(await receive())).toEqual(["early", "early", "early"]);
  });

  it("with content-based deduplication, deduplicates by the SHA-256 of the body; an explicit id overrides it", async () => {
    const { send, receive, attributes } = await openFifo({ contentBasedDeduplication: true });
    expect((await attributes()).ContentBasedDeduplication).toBe("true");
    const first = await send({ MessageBody: "same", MessageGroupId: "g" });
    expect((await send({ MessageBody: "same", MessageGroupId: "other-group" })).MessageId).toBe(first.MessageId);
    const explicit = await send({ MessageBody: "same", MessageGroupId: "g", MessageDeduplicationId: "own" });
    expect(explicit.MessageId).not.toBe(first.MessageId);
    await send({ MessageBody: "different", MessageGroupId: "g" });
    const messages = await receive();
    expect(messages.map((message) => [message.Body, message.Attributes?.MessageDeduplicationId])).toEqual([
      ["same", createHash("sha256").update("same").digest("hex")],
      ["same", "own"],
      ["different", createHash("sha256").update("different").digest("hex")],
    ]);
  });

  it("refuses a send without MessageGroupId or deduplication id, with DelaySeconds, or with ids SQS does not allow", async () => {
    const { sqs, client, send, attributes } = await openFifo();
    const noGroup = await failure(send({ MessageDeduplicationId: "d" }));
    expect(noGroup).toMatchObject({ name: "MissingParameter" });
    expect(noGroup.message).toBe("The request must contain the parameter MessageGroupId.");
    const noDeduplication = await failure(send({ MessageGroupId: "g" }));
    expect(noDeduplication.name).toBe("InvalidParameterValue");
    expect(noDeduplication.message).toContain("ContentBasedDeduplication enabled or MessageDeduplicationId provided");
    const delayed = await failure(send({ MessageGroupId: "g", MessageDeduplicationId: "d", DelaySeconds: 5 }));
    expect(delayed.name).toBe("InvalidParameterValue");
    expect(delayed.message).toContain("parameter DelaySeconds is invalid");
    const badGroup = await failure(send({ MessageGroupId: "no spaces", MessageDeduplicationId: "d" }));
    expect(badGroup.message).toContain("MessageGroupId can only include alphanumeric and punctuation characters");
    const longId = await failure(send({ MessageGroupId: "g", MessageDeduplicationId: "x".repeat(129) }));
    expect(longId.name).toBe("InvalidParameterValue");
    expect((await attributes()).ApproximateNumberOfMessages).toBe("0");
    // DelaySeconds 0 is accepted, as SQS does; so are 128 characters of punctuation.
    await send({
      MessageGroupId: "!#$%&()*+,-./:;<=>?@[]^_`{|}~".padEnd(128, "z"),
      MessageDeduplicationId: "d",
      DelaySeconds: 0,
    });

    const batch = await client.send(
      new SendMessageBatchCommand({
        QueueUrl: sqs.queueUrl,
        Entries: [
          { Id: "ok", MessageBody: "x", MessageGroupId: "g", MessageDeduplicationId: "batch-ok" },
          { Id: "no-group", MessageBody: "y", MessageDeduplicationId: "batch-no-group" },
        ],
      }),
    );
    expect(batch.Successful?.map((entry) => entry.Id)).toEqual(["ok"]);
    expect(batch.Failed).toEqual([expect.objectContaining({ Id: "no-group", Code: "MissingParameter" })]);
    expect(() => sqs.send("x", { messageDeduplicationId: "d" })).toThrow(SqsError);
    expect(() => sqs.send("x", { messageGroupId: "g", messageDeduplicationId: "e", delaySeconds: 1 })).toThrow(
      /DelaySeconds/,
    );
  });

  it("a standard queue still refuses MessageGroupId and MessageDeduplicationId", async () => {
    const sqs = new LocalSqs(async () => undefined, { queueName: "plain" });
    const client = sqsClient((await sqs.listen()).url);
    closeAfterTest(sqs, client);
    for (const member of [{ MessageGroupId: "g" }, { MessageDeduplicationId: "d" }]) {
      const refused = await failure(
        client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: "m", ...member })),
      );
      expect(refused).toMatchObject({ name: "InvalidParameterValue" });
      expect(refused.message).toContain("not valid for this queue type");
    }
    expect(() => sqs.send("m", { messageGroupId: "g" })).toThrow(/not valid for this queue type/);
    const plain = await client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: "m" }));
    expect(plain.SequenceNumber).toBeUndefined();
    const attributes = await client.send(
      new GetQueueAttributesCommand({ QueueUrl: sqs.queueUrl, AttributeNames: ["All"] }),
    );
    expect(attributes.Attributes?.FifoQueue).toBeUndefined();
    const [message] =
      (await client.send(new ReceiveMessageCommand({ QueueUrl: sqs.queueUrl, MessageSystemAttributeNames: ["All"] })))
        .Messages ?? [];
    expect(message.Attributes?.MessageGroupId).toBeUndefined();
  });

  it("gives the FIFO system attributes a receive asks for", async () => {
    const { send, receive } = await openFifo();
    const sent = await send({ MessageBody: "m", MessageGroupId: "tenant-7", MessageDeduplicationId: "m-1" });
    const [message] = await receive({
      MessageSystemAttributeNames: ["MessageGroupId", "SequenceNumber"],
      VisibilityTimeout: 0,
    });
    expect(message.Attributes).toEqual({ MessageGroupId: "tenant-7", SequenceNumber: sent.SequenceNumber });
    const [all] = await receive();
    expect(all.Attributes).toMatchObject({
      MessageGroupId: "tenant-7",
      MessageDeduplicationId: "m-1",
      SequenceNumber: sent.SequenceNumber,
      ApproximateReceiveCount: "2",
    });
  });

  it("moves a group's head to the FIFO dead-letter queue after maxReceiveCount; the next of its group follows", async () => {
    const { sqs, send, receive } = await openFifo({ maxReceiveCount: 1 });
    await send({ MessageBody: "poison", MessageGroupId: "g", MessageDeduplicationId: "1" });
    await send({ MessageBody: "next", MessageGroupId: "g", MessageDeduplicationId: "2" });
    expect(bodies(await receive({ MaxNumberOfMessages: 1, VisibilityTimeout: 0 }))).toEqual(["poison"]);
    expect(bodies(await receive({ MaxNumberOfMessages: 1 }))).toEqual(["next"]);
    const [dead] = await receive({}, sqs.deadLetterQueueUrl);
    expect(dead).toMatchObject({
      Body: "poison",
      Attributes: {
        MessageGroupId: "g",
        MessageDeduplicationId: "1",
        DeadLetterQueueSourceArn: "arn:aws:sqs:local:000000000000:orders.fifo",
      },
    });
    expect(dead.Attributes?.SequenceNumber).toMatch(/^\d{20}$/);
  });
});

describe("creating FIFO queues on a broker", () => {
  it("takes a name ending in .fifo as FIFO and refuses mixed kinds, naming every problem at once", () => {
    const broker = new SqsBroker();
    expect(broker.createQueue("jobs.fifo").settings.fifo).toBe(true);
    expect(broker.createQueue("jobs").settings.fifo).toBe(false);
    const standardDeadLetters = broker.createQueue("standard-dlq");
    const redrivePolicy = { deadLetterTargetArn: standardDeadLetters.arn, maxReceiveCount: 3 };
    expect(() => broker.createQueue("orders.fifo", { redrivePolicy })).toThrow(
      'cannot create SQS queue "orders.fifo": the dead-letter queue of a FIFO queue must be FIFO too; standard-dlq is standard',
    );
    expect(() => broker.createQueue("orders", { fifo: true })).toThrow(/followed by \.fifo/);
    expect(() => broker.createQueue("orders.fifo", { fifo: false, contentBasedDeduplication: true })).toThrow(
      /a standard queue's name .*; contentBasedDeduplication is for FIFO queues only/,
    );
    expect(() => broker.createQueue(`${"x".repeat(76)}.fifo`)).toThrow(/1 to 75 letters/);
    expect(() => broker.createQueue("jobs.fifo")).toThrow(/a queue of that name exists/);
  });

  it("LocalSqs adds .fifo to the names it is given, and refuses a .fifo name with fifo: false", () => {
    const sqs = new LocalSqs(async () => undefined, { queueName: "jobs", fifo: true });
    expect([sqs.queue.name, sqs.deadLetterQueue.name]).toEqual(["jobs.fifo", "jobs-dlq.fifo"]);
    const named = new LocalSqs(async () => undefined, { queueName: "work.fifo", deadLetterQueueName: "graveyard" });
    expect([named.queue.name, named.deadLetterQueue.name]).toEqual(["work.fifo", "graveyard.fifo"]);
    expect(new LocalSqs(async () => undefined, { fifo: true }).queue.name).toBe("leaseq-local.fifo");
    expect(() => new LocalSqs(async () => undefined, { queueName: "work.fifo", fifo: false })).toThrow(
      /a standard queue's name/,
    );
  });
});
