import {
  BatchEntryIdsNotDistinct,
  BatchRequestTooLong,
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListMessageMoveTasksCommand,
  ListQueuesCommand,
  PurgeQueueCommand,
  QueueDoesNotExist,
  ReceiptHandleIsInvalid,
  ReceiveMessageCommand,
  type ReceiveMessageCommandInput,
  ResourceNotFoundException,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
  TooManyEntriesInBatchRequest,
  UnsupportedOperation,
} from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { LocalSqs, type LocalSqsOptions } from "../../../dev/standins/sqs/index.js";

const opened: Array<{ sqs: LocalSqs; client: SQSClient }> = [];
afterEach(async () => {
  for (const { sqs, client } of opened.splice(0)) {
    client.destroy();
    await sqs.close();
  }
});

/** A listening stand-in with a real SQSClient pointed at it, as a user's producer would be. */
async function open(
  options: LocalSqsOptions = {},
  handler: (event: SQSEvent) => Promise<SQSBatchResponse | undefined> = async () => undefined,
) {
  const sqs = new LocalSqs(handler, { queueName: "orders", ...options });
  const { url } = await sqs.listen();
  const client = new SQSClient({
    endpoint: url,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  opened.push({ sqs, client });
  const receive = (input: Partial<ReceiveMessageCommandInput> = {}, queueUrl = sqs.queueUrl) =>
    client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, ...input }));
  const attributes = async (queueUrl = sqs.queueUrl) =>
    (await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["All"] }))).Attributes ??
    {};
  return { sqs, client, url, receive, attributes };
}

/** Receives until `predicate` holds, up to a generous deadline, so slow machines do not fail. */
async function receiveUntil<T>(attempt: () => Promise<T>, predicate: (value: T) => boolean, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await attempt();
    if (predicate(value)) return value;
    if (Date.now() > deadline) throw new Error("not received in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable("succeeded"),
    (error) => error,
  );

describe("the local SQS endpoint, called by @aws-sdk/client-sqs", () => {
  it("answers GetQueueUrl and ListQueues with the source queue and its dead-letter queue", async () => {
    const { sqs, client, url } = await open();
    const source = await client.send(new GetQueueUrlCommand({ QueueName: "orders" }));
    const dlq = await client.send(new GetQueueUrlCommand({ QueueName: "orders-dlq" }));
    expect(source.QueueUrl).toBe(`${url}/000000000000/orders`);
    expect(dlq.QueueUrl).toBe(`${url}/000000000000/orders-dlq`);
    expect([sqs.queueUrl, sqs.deadLetterQueueUrl]).toEqual([source.QueueUrl, dlq.QueueUrl]);
    const listed = await client.send(new ListQueuesCommand({ QueueNamePrefix: "orders" }));
    expect(listed.QueueUrls?.sort()).toEqual([source.QueueUrl, dlq.QueueUrl]);
  });

  it("an unknown queue raises the SDK's QueueDoesNotExist", async () => {
    const { client, url } = await open();
    const byName = await failure(client.send(new GetQueueUrlCommand({ QueueName: "nope" })));
    expect(byName).toBeInstanceOf(QueueDoesNotExist);
    expect(byName).toMatchObject({ name: "QueueDoesNotExist", message: "The specified queue does not exist." });
    const byUrl = await failure(
      client.send(new SendMessageCommand({ QueueUrl: `${url}/000000000000/nope`, MessageBody: "x" })),
    );
    expect(byUrl).toBeInstanceOf(QueueDoesNotExist);
    expect(byUrl.$metadata.httpStatusCode).toBe(400);
  });

  it("round-trips a message with String, Number and Binary attributes; the SDK accepts the MD5s", async () => {
    const { client, sqs, receive } = await open();
    const body = '{"tasks":[{"id":"naïve-☃"}]}';
    const MessageAttributes = {
      attribName1: { DataType: "String", StringValue: "attribValue 1" },
      customNumberTypeAttrib: { DataType: "Number.float", StringValue: "4563442423554324324264524243.32543234" },
      binaryAttribute: { DataType: "Binary", BinaryValue: new TextEncoder().encode("Hello binary world!") },
    };
    const sent = await client.send(
      new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: body, MessageAttributes }),
    );
    // The digest SQS's documented algorithm gives for these attributes (a published test vector).
    expect(sent.MD5OfMessageAttributes).toBe("c932db14a896c663f83c260297d594ff");
    const { Messages } = await receive({ MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["All"] });
    expect(Messages).toHaveLength(1);
    const [message] = Messages ?? [];
    expect(message).toMatchObject({
      MessageId: sent.MessageId,
      Body: body,
      MD5OfBody: sent.MD5OfMessageBody,
      MD5OfMessageAttributes: "c932db14a896c663f83c260297d594ff",
      Attributes: { ApproximateReceiveCount: "1", SenderId: "000000000000" },
    });
    expect(Math.abs(Number(message.Attributes?.SentTimestamp) - Date.now())).toBeLessThan(10_000);
    expect(message.MessageAttributes?.attribName1).toEqual(MessageAttributes.attribName1);
    expect(message.MessageAttributes?.customNumberTypeAttrib).toEqual(MessageAttributes.customNumberTypeAttrib);
    expect(new TextDecoder().decode(message.MessageAttributes?.binaryAttribute.BinaryValue)).toBe(
      "Hello binary world!",
    );
  });

  it("returns only the attributes a receive asks for, and none unasked", async () => {
    const { client, sqs, receive } = await open({ visibilityTimeoutMs: 0 });
    await client.send(
      new SendMessageCommand({
        QueueUrl: sqs.queueUrl,
        MessageBody: "m",
        MessageAttributes: {
          "leaseq.reason": { DataType: "String", StringValue: "invalid" },
          "leaseq.task": { DataType: "String", StringValue: "t1" },
          other: { DataType: "Number", StringValue: "7" },
        },
      }),
    );
    const plain = (await receive()).Messages?.[0];
    expect(plain?.MessageAttributes).toBeUndefined();
    expect(plain?.Attributes).toBeUndefined();
    const prefixed = (await receive({ MessageAttributeNames: ["leaseq.*"] })).Messages?.[0];
    expect(Object.keys(prefixed?.MessageAttributes ?? {}).sort()).toEqual(["leaseq.reason", "leaseq.task"]);
  });

  it("accepts a message of exactly 262,144 bytes and rejects one byte more, attributes counted", async () => {
    const { client, sqs } = await open();
    const full = await client.send(
      new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: "x".repeat(262_144) }),
    );
    expect(full.MessageId).toBeDefined();
    // name "a" + type "String" + value "b" = 8 bytes on top of the body.
    const over = await failure(
      client.send(
        new SendMessageCommand({
          QueueUrl: sqs.queueUrl,
          MessageBody: "x".repeat(262_144 - 7),
          MessageAttributes: { a: { DataType: "String", StringValue: "b" } },
        }),
      ),
    );
    expect(over.name).toBe("InvalidParameterValue");
    expect(over.message).toContain("Message must be shorter than 262144 bytes");
  });

  it("SendMessageBatch reports a rejected entry in Failed and sends the others", async () => {
    const { client, sqs, receive } = await open();
    const reply = await client.send(
      new SendMessageBatchCommand({
        QueueUrl: sqs.queueUrl,
        Entries: [
          { Id: "ok-1", MessageBody: "one" },
          { Id: "late", MessageBody: "too late", DelaySeconds: 901 },
          { Id: "ok-2", MessageBody: "two" },
        ],
      }),
    );
    expect(reply.Successful?.map((entry) => entry.Id)).toEqual(["ok-1", "ok-2"]);
    expect(reply.Failed).toEqual([
      expect.objectContaining({ Id: "late", SenderFault: true, Code: "InvalidParameterValue" }),
    ]);
    const bodies = (await receive()).Messages?.map((message) => message.Body);
    expect(bodies).toEqual(["one", "two"]);
  });

  it("SendMessageBatch rejects the whole batch for 11 entries, repeated ids, or one entry over the size limit", async () => {
    const { client, sqs, attributes } = await open();
    const batch = (Entries: Array<{ Id: string; MessageBody: string }>) =>
      failure(client.send(new SendMessageBatchCommand({ QueueUrl: sqs.queueUrl, Entries })));
    const eleven = Array.from({ length: 11 }, (_, n) => ({ Id: `m${n}`, MessageBody: "x" }));
    expect(await batch(eleven)).toBeInstanceOf(TooManyEntriesInBatchRequest);
    expect(
      await batch([
        { Id: "a", MessageBody: "x" },
        { Id: "a", MessageBody: "y" },
      ]),
    ).toBeInstanceOf(BatchEntryIdsNotDistinct);
    // AWS limits the request's total to the message size, so one oversized entry fails the batch.
    const oversized = await batch([
      { Id: "small", MessageBody: "x" },
      { Id: "big", MessageBody: "y".repeat(262_145) },
    ]);
    expect(oversized).toBeInstanceOf(BatchRequestTooLong);
    expect(oversized.message).toContain("You have sent 262146 bytes");
    expect((await attributes()).ApproximateNumberOfMessages).toBe("0");
  });

  it("hides a delayed message until its DelaySeconds pass", async () => {
    const { client, sqs, receive, attributes } = await open();
    const sentAt = Date.now();
    await client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: "later", DelaySeconds: 1 }));
    expect((await receive()).Messages).toBeUndefined();
    expect(await attributes()).toMatchObject({
      ApproximateNumberOfMessagesDelayed: "1",
      ApproximateNumberOfMessages: "0",
    });
    const later = await receiveUntil(receive, (reply) => (reply.Messages?.length ?? 0) > 0);
    expect(later.Messages?.[0].Body).toBe("later");
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(1_000);
  });

  it("long polling returns as soon as a message arrives", async () => {
    const { client, sqs, receive } = await open();
    const started = Date.now();
    const polling = receive({ WaitTimeSeconds: 20 });
    setTimeout(() => sqs.send("wake"), 100);
    const reply = await polling;
    expect(reply.Messages?.[0].Body).toBe("wake");
    expect(Date.now() - started).toBeLessThan(10_000);
    // An invalid wait is refused as SQS does.
    expect((await failure(receive({ WaitTimeSeconds: 21 }))).name).toBe("InvalidParameterValue");
    expect(
      (await failure(client.send(new ReceiveMessageCommand({ QueueUrl: sqs.queueUrl, MaxNumberOfMessages: 11 })))).name,
    ).toBe("InvalidParameterValue");
  });

  it("a long poll the client abandons receives nothing, so the message is not lost in flight", async () => {
    const { client, sqs, receive } = await open();
    const abandon = new AbortController();
    const polling = client.send(new ReceiveMessageCommand({ QueueUrl: sqs.queueUrl, WaitTimeSeconds: 20 }), {
      abortSignal: abandon.signal,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    abandon.abort();
    await expect(polling).rejects.toThrow();
    // Give the server a moment to see the connection close before the message arrives.
    await new Promise((resolve) => setTimeout(resolve, 100));
    sqs.send("kept");
    const reply = await receive({ MessageSystemAttributeNames: ["ApproximateReceiveCount"] });
    expect(reply.Messages?.map((message) => [message.Body, message.Attributes?.ApproximateReceiveCount])).toEqual([
      ["kept", "1"],
    ]);
  });

  it("a received message stays hidden for its visibility timeout; ChangeMessageVisibility ends it early", async () => {
    const { client, sqs, receive, attributes } = await open();
    sqs.send("job");
    const first = (await receive({ VisibilityTimeout: 30 })).Messages?.[0];
    expect((await receive()).Messages).toBeUndefined();
    expect(await attributes()).toMatchObject({ ApproximateNumberOfMessagesNotVisible: "1", VisibilityTimeout: "30" });
    await client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: sqs.queueUrl,
        ReceiptHandle: first?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const again = (await receive({ VisibilityTimeout: 1, MessageSystemAttributeNames: ["ApproximateReceiveCount"] }))
      .Messages?.[0];
    expect(again).toMatchObject({ MessageId: first?.MessageId, Attributes: { ApproximateReceiveCount: "2" } });
    expect(again?.ReceiptHandle).not.toBe(first?.ReceiptHandle);
    // With a 1 s timeout and no delete, it comes back by itself.
    const third = await receiveUntil(
      () => receive({ MessageSystemAttributeNames: ["ApproximateReceiveCount"] }),
      (reply) => (reply.Messages?.length ?? 0) > 0,
    );
    expect(third.Messages?.[0].Attributes?.ApproximateReceiveCount).toBe("3");
  });

  it("a stale receipt handle: DeleteMessage succeeds but leaves the message; ChangeMessageVisibility says it expired", async () => {
    const { client, sqs, receive, attributes } = await open();
    sqs.send("job");
    const stale = (await receive({ VisibilityTimeout: 0 })).Messages?.[0].ReceiptHandle;
    const current = (await receive({ VisibilityTimeout: 30 })).Messages?.[0].ReceiptHandle;
    await client.send(new DeleteMessageCommand({ QueueUrl: sqs.queueUrl, ReceiptHandle: stale }));
    expect((await attributes()).ApproximateNumberOfMessagesNotVisible).toBe("1");
    const expired = await failure(
      client.send(
        new ChangeMessageVisibilityCommand({ QueueUrl: sqs.queueUrl, ReceiptHandle: stale, VisibilityTimeout: 5 }),
      ),
    );
    expect(expired).toMatchObject({ name: "InvalidParameterValue" });
    expect(expired.message).toContain("The receipt handle has expired");
    await client.send(new DeleteMessageCommand({ QueueUrl: sqs.queueUrl, ReceiptHandle: current }));
    expect(await attributes()).toMatchObject({
      ApproximateNumberOfMessages: "0",
      ApproximateNumberOfMessagesNotVisible: "0",
    });
    // Deleting again is harmless, as on SQS; a handle that was never issued is not.
    await client.send(new DeleteMessageCommand({ QueueUrl: sqs.queueUrl, ReceiptHandle: current }));
    const invalid = await failure(
      client.send(new DeleteMessageCommand({ QueueUrl: sqs.queueUrl, ReceiptHandle: "junk" })),
    );
    expect(invalid).toBeInstanceOf(ReceiptHandleIsInvalid);
  });

  it("moves a message received maxReceiveCount times to the dead-letter queue on the next receive", async () => {
    const { sqs, receive, attributes } = await open({ maxReceiveCount: 2 });
    const id = sqs.send("poison", { messageAttributes: { kind: { DataType: "String", StringValue: "bad" } } });
    expect((await receive({ VisibilityTimeout: 0 })).Messages?.[0].MessageId).toBe(id);
    expect((await receive({ VisibilityTimeout: 0 })).Messages?.[0].MessageId).toBe(id);
    expect((await receive({ VisibilityTimeout: 0 })).Messages).toBeUndefined();
    expect(JSON.parse((await attributes()).RedrivePolicy ?? "{}")).toEqual({
      deadLetterTargetArn: "arn:aws:sqs:local:000000000000:orders-dlq",
      maxReceiveCount: 2,
    });
    const dead = (
      await receive(
        { MessageSystemAttributeNames: ["All"], MessageAttributeNames: ["All"], VisibilityTimeout: 0 },
        sqs.deadLetterQueueUrl,
      )
    ).Messages?.[0];
    expect(dead).toMatchObject({
      MessageId: id,
      Body: "poison",
      MessageAttributes: { kind: { StringValue: "bad" } },
      Attributes: { DeadLetterQueueSourceArn: "arn:aws:sqs:local:000000000000:orders" },
    });
    expect(sqs.deadLetters).toEqual([
      expect.objectContaining({ messageId: id, deadLetteredBy: "redrive", receiveCount: 3 }),
    ]);
  });

  it("StartMessageMoveTask moves every dead letter back to its source queue", async () => {
    const { client, sqs, receive, attributes } = await open({ maxReceiveCount: 1 });
    sqs.send("a");
    await receive({ VisibilityTimeout: 0 });
    await receive({ VisibilityTimeout: 0 }); // moves "a" to the DLQ
    await client.send(
      new SendMessageCommand({
        QueueUrl: sqs.deadLetterQueueUrl,
        MessageBody: "b",
        MessageAttributes: { "leaseq-reason": { DataType: "String", StringValue: "invalid-task" } },
      }),
    );
    expect(sqs.deadLetters.map((letter) => [letter.body, letter.deadLetteredBy])).toEqual([
      ["a", "redrive"],
      ["b", "sent"],
    ]);
    const dlqArn = (await attributes(sqs.deadLetterQueueUrl)).QueueArn;
    const started = await client.send(new StartMessageMoveTaskCommand({ SourceArn: dlqArn }));
    expect(started.TaskHandle).toBeTruthy();
    const tasks = await client.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn }));
    expect(tasks.Results?.[0]).toMatchObject({
      Status: "COMPLETED",
      ApproximateNumberOfMessagesMoved: 2,
      ApproximateNumberOfMessagesToMove: 2,
    });
    expect(sqs.deadLetters).toEqual([]);
    const back = await receive({
      MessageSystemAttributeNames: ["ApproximateReceiveCount"],
      MessageAttributeNames: ["All"],
    });
    expect(back.Messages?.map((message) => [message.Body, message.Attributes?.ApproximateReceiveCount])).toEqual([
      ["a", "1"],
      ["b", "1"],
    ]);
    expect(back.Messages?.[1].MessageAttributes?.["leaseq-reason"].StringValue).toBe("invalid-task");
  });

  it("StartMessageMoveTask refuses an unknown source and a queue that is not a dead-letter queue", async () => {
    const { client, sqs } = await open();
    const unknown = await failure(
      client.send(new StartMessageMoveTaskCommand({ SourceArn: "arn:aws:sqs:local:000000000000:nope" })),
    );
    expect(unknown).toBeInstanceOf(ResourceNotFoundException);
    const notDlq = await failure(
      client.send(new StartMessageMoveTaskCommand({ SourceArn: "arn:aws:sqs:local:000000000000:orders" })),
    );
    expect(notDlq.name).toBe("InvalidParameterValue");
    expect(sqs.stats().visible).toBe(0);
  });

  it("PurgeQueue empties the queue, once a minute as on AWS", async () => {
    const { client, sqs, attributes } = await open();
    sqs.send("a");
    sqs.send("b", { delaySeconds: 600 });
    await client.send(new PurgeQueueCommand({ QueueUrl: sqs.queueUrl }));
    expect(await attributes()).toMatchObject({
      ApproximateNumberOfMessages: "0",
      ApproximateNumberOfMessagesDelayed: "0",
    });
    const again = await failure(client.send(new PurgeQueueCommand({ QueueUrl: sqs.queueUrl })));
    expect(again.name).toBe("PurgeQueueInProgress");
  });

  it("GetQueueAttributes reports the queue's settings and refuses an unknown attribute", async () => {
    const { client, sqs, attributes } = await open({ visibilityTimeoutMs: 45_000 });
    expect(await attributes()).toMatchObject({
      QueueArn: "arn:aws:sqs:local:000000000000:orders",
      VisibilityTimeout: "45",
      DelaySeconds: "0",
      MaximumMessageSize: "262144",
    });
    const unknown = await failure(
      client.send(new GetQueueAttributesCommand({ QueueUrl: sqs.queueUrl, AttributeNames: ["Colour" as "All"] })),
    );
    expect(unknown.name).toBe("InvalidAttributeName");
    // A valid attribute the queue does not set is left out rather than refused.
    const policy = await client.send(
      new GetQueueAttributesCommand({ QueueUrl: sqs.queueUrl, AttributeNames: ["Policy"] }),
    );
    expect(policy.Attributes).toBeUndefined();
  });

  it("an operation it does not serve names itself and the supported ones; unsigned or non-JSON requests are refused", async () => {
    const { client, url } = await open();
    const { CreateQueueCommand } = await import("@aws-sdk/client-sqs");
    const unsupported = await failure(client.send(new CreateQueueCommand({ QueueName: "new" })));
    expect(unsupported).toBeInstanceOf(UnsupportedOperation);
    expect(unsupported.message).toMatch(
      /CreateQueue is not supported; it supports .*ReceiveMessage.*StartMessageMoveTask/,
    );
    const unknown = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": "AmazonSQS.Frobnicate",
        authorization: "AWS4-HMAC-SHA256 Credential=local/20240101/us-east-1/sqs/aws4_request",
      },
      body: "{}",
    });
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get("x-amzn-query-error")).toBe("UnknownOperation;Sender");
    expect(((await unknown.json()) as { message: string }).message).toContain(
      'unknown operation "AmazonSQS.Frobnicate"',
    );
    const unsigned = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-amz-json-1.0", "x-amz-target": "AmazonSQS.ListQueues" },
      body: "{}",
    });
    expect(unsigned.status).toBe(403);
    const query = await fetch(url, { method: "POST", body: new URLSearchParams({ Action: "ListQueues" }) });
    expect(((await query.json()) as { message: string }).message).toContain("speaks the SQS JSON protocol only");
  });

  it("the event source mapping invokes the handler with Lambda records and honours batchItemFailures", async () => {
    const seen: Array<{ body: string; count: string; reason: unknown }> = [];
    const { client, sqs } = await open({ visibilityTimeoutMs: 200, concurrency: 1, pollMs: 5 }, async (event) => {
      for (const record of event.Records) {
        seen.push({
          body: record.body,
          count: record.attributes.ApproximateReceiveCount,
          reason: record.messageAttributes["leaseq-reason"],
        });
      }
      const retry = event.Records.filter(
        (record) => record.body === "retry" && record.attributes.ApproximateReceiveCount === "1",
      );
      return { batchItemFailures: retry.map((record) => ({ itemIdentifier: record.messageId })) };
    });
    await client.send(
      new SendMessageBatchCommand({
        QueueUrl: sqs.queueUrl,
        Entries: [
          {
            Id: "a",
            MessageBody: "done",
            MessageAttributes: { "leaseq-reason": { DataType: "String", StringValue: "x" } },
          },
          { Id: "b", MessageBody: "retry" },
        ],
      }),
    );
    sqs.send("in-process");
    sqs.start();
    await receiveUntil(
      async () => sqs.stats(),
      (stats) => stats.deleted === 3,
    );
    await sqs.stop();
    expect(seen.map(({ body, count }) => [body, count])).toEqual([
      ["done", "1"],
      ["retry", "1"],
      ["in-process", "1"],
      ["retry", "2"],
    ]);
    expect(seen[0].reason).toEqual({
      stringValue: "x",
      stringListValues: [],
      binaryListValues: [],
      dataType: "String",
    });
    expect(sqs.stats()).toMatchObject({ visible: 0, notVisible: 0, redelivered: 1, deadLettered: 0 });
  });

  it("close() ends a pending long poll with no messages and stops listening", async () => {
    const { sqs, receive, url } = await open();
    const polling = receive({ WaitTimeSeconds: 20 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await sqs.close();
    expect((await polling).Messages).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(5_000);
    await expect(fetch(url, { method: "POST" })).rejects.toThrow();
  });
});
