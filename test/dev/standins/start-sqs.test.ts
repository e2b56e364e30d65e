import { createHash } from "node:crypto";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { LocalSqs, SqsError } from "../../../dev/standins/sqs/index.js";

const until = async (condition: () => boolean, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

/** Runs the stand-in's event source mapping until `condition` holds, then stops it. */
async function runUntil(sqs: LocalSqs, condition: () => boolean): Promise<void> {
  sqs.start();
  try {
    await until(condition);
  } finally {
    await sqs.stop();
  }
}

describe("the local SQS stand-in", () => {
  it("delivers batches of at most batchSize records, then deletes what succeeded", async () => {
    const batches: string[][] = [];
    const sqs = new LocalSqs(
      async (event) => {
        batches.push(event.Records.map((record) => record.body));
        return { batchItemFailures: [] };
      },
      { batchSize: 3, concurrency: 1, pollMs: 5 },
    );
    for (let i = 0; i < 7; i++) sqs.send(`m${i}`);
    await runUntil(sqs, () => sqs.stats().deleted === 7);
    expect(batches).toEqual([["m0", "m1", "m2"], ["m3", "m4", "m5"], ["m6"]]);
    expect(sqs.stats()).toMatchObject({ visible: 0, inFlight: 0, redelivered: 0, deadLettered: 0, invocations: 3 });
  });

  it("redelivers records reported in batchItemFailures after the visibility timeout, with a higher receive count", async () => {
    const seen: Array<{ body: string; receiveCount: string; atMs: number; firstReceivedMs: number }> = [];
    const sqs = new LocalSqs(
      async (event: SQSEvent): Promise<SQSBatchResponse> => {
        for (const record of event.Records) {
          seen.push({
            body: record.body,
            receiveCount: record.attributes.ApproximateReceiveCount,
            atMs: Date.now(),
            firstReceivedMs: Number(record.attributes.ApproximateFirstReceiveTimestamp),
          });
        }
        const failures = event.Records.filter(
          (record) => record.body === "bad" && record.attributes.ApproximateReceiveCount === "1",
        );
        return { batchItemFailures: failures.map((record) => ({ itemIdentifier: record.messageId })) };
      },
      { visibilityTimeoutMs: 200, concurrency: 1, pollMs: 5 },
    );
    sqs.send("good");
    sqs.send("bad");
    await runUntil(sqs, () => sqs.stats().deleted === 2);
    expect(seen.map(({ body, receiveCount }) => [body, receiveCount])).toEqual([
      ["good", "1"],
      ["bad", "1"],
      ["bad", "2"],
    ]);
    // Received again no sooner than the visibility timeout after its first receive (the handler may
    // see a receive a moment after it: that lag is no part of the timeout).
    expect(seen[2].firstReceivedMs).toBe(seen[1].firstReceivedMs);
    expect(seen[2].atMs - seen[2].firstReceivedMs).toBeGreaterThanOrEqual(200);
    expect(sqs.stats().redelivered).toBe(1);
  });

  it("a handler that throws fails the whole batch; after maxReceiveCount the messages are dead-lettered", async () => {
    let calls = 0;
    const sqs = new LocalSqs(
      async () => {
        calls++;
        throw new Error("Redis unreachable");
      },
      { visibilityTimeoutMs: 20, maxReceiveCount: 3, concurrency: 2, pollMs: 5 },
    );
    sqs.send("a");
    sqs.send("b");
    await runUntil(sqs, () => sqs.deadLetters.length === 2);
    expect(sqs.deadLetters.map((message) => [message.body, message.receiveCount])).toEqual([
      ["a", 3],
      ["b", 3],
    ]);
    expect(calls).toBe(3);
    expect(sqs.stats()).toMatchObject({ visible: 0, deleted: 0, redelivered: 4, deadLettered: 2 });
  });

  it("builds records as Lambda receives them from SQS", async () => {
    let record: SQSEvent["Records"][number] | undefined;
    const sqs = new LocalSqs(
      async (event) => {
        record = event.Records[0];
      },
      { concurrency: 1, pollMs: 5, queueName: "q1" },
    );
    const id = sqs.send('{"tasks":[]}', { now: 1_700_000_000_000 });
    await runUntil(sqs, () => record !== undefined);
    expect(record).toMatchObject({
      messageId: id,
      body: '{"tasks":[]}',
      eventSource: "aws:sqs",
      eventSourceARN: "arn:aws:sqs:local:000000000000:q1",
      md5OfBody: createHash("md5").update('{"tasks":[]}').digest("hex"),
      attributes: { ApproximateReceiveCount: "1", SentTimestamp: "1700000000000" },
    });
  });

  it("passes message attributes into records in Lambda's shape, with their MD5", async () => {
    let record: SQSEvent["Records"][number] | undefined;
    const sqs = new LocalSqs(
      async (event) => {
        record = event.Records[0];
      },
      { concurrency: 1, pollMs: 5 },
    );
    sqs.send("x", {
      messageAttributes: {
        reason: { DataType: "String", StringValue: "invalid" },
        tries: { DataType: "Number", StringValue: "3" },
        blob: { DataType: "Binary", BinaryValue: Buffer.from([1, 2, 3]) },
      },
    });
    await runUntil(sqs, () => record !== undefined);
    expect(record?.messageAttributes).toEqual({
      reason: { stringValue: "invalid", stringListValues: [], binaryListValues: [], dataType: "String" },
      tries: { stringValue: "3", stringListValues: [], binaryListValues: [], dataType: "Number" },
      blob: { binaryValue: "AQID", stringListValues: [], binaryListValues: [], dataType: "Binary" },
    });
    expect(record?.md5OfMessageAttributes).toMatch(/^[0-9a-f]{32}$/);
  });

  it("holds a message sent with delaySeconds back until it is due", async () => {
    const delivered: Array<{ body: string; atMs: number }> = [];
    const sqs = new LocalSqs(
      async (event) => {
        for (const record of event.Records) delivered.push({ body: record.body, atMs: Date.now() });
      },
      { concurrency: 1, pollMs: 5 },
    );
    const sentAt = Date.now();
    sqs.send("later", { delaySeconds: 1 });
    sqs.send("now");
    sqs.start();
    await until(() => delivered.length === 1);
    expect(sqs.stats()).toMatchObject({ delayed: 1, visible: 0 });
    await until(() => delivered.length === 2);
    await sqs.stop();
    expect(delivered.map((entry) => entry.body)).toEqual(["now", "later"]);
    expect(delivered[1].atMs - sentAt).toBeGreaterThanOrEqual(1_000);
  });

  it("a batchItemFailures naming a message not in the batch fails the whole batch, as Lambda does", async () => {
    let calls = 0;
    const sqs = new LocalSqs(
      async () => {
        calls++;
        return { batchItemFailures: calls === 1 ? [{ itemIdentifier: "not-in-this-batch" }] : [] };
      },
      { visibilityTimeoutMs: 20, concurrency: 1, pollMs: 5 },
    );
    sqs.send("a");
    sqs.send("b");
    await runUntil(sqs, () => sqs.stats().deleted === 2);
    expect(calls).toBe(2);
    expect(sqs.stats().redelivered).toBe(2);
  });

  it("dead letters keep their attributes and say they were moved by the redrive policy", async () => {
    const sqs = new LocalSqs(
      async () => {
        throw new Error("always");
      },
      { visibilityTimeoutMs: 10, maxReceiveCount: 1, concurrency: 1, pollMs: 5, queueName: "jobs" },
    );
    const id = sqs.send("poison", { messageAttributes: { kind: { DataType: "String", StringValue: "p" } } });
    await runUntil(sqs, () => sqs.deadLetters.length === 1);
    expect(sqs.deadLetters[0]).toMatchObject({
      messageId: id,
      body: "poison",
      receiveCount: 1,
      deadLetteredBy: "redrive",
      sourceArn: "arn:aws:sqs:local:000000000000:jobs",
      messageAttributes: { kind: { DataType: "String", StringValue: "p" } },
    });
    expect(sqs.deadLetterQueue.arn).toBe("arn:aws:sqs:local:000000000000:jobs-dlq");
  });

  it("send() checks a message as SendMessage does", () => {
    const sqs = new LocalSqs(async () => undefined);
    const error = (run: () => unknown) => {
      try {
        run();
      } catch (thrown) {
        return thrown;
      }
      throw new Error("did not throw");
    };
    expect(error(() => sqs.send("x".repeat(262_145)))).toMatchObject({ name: "InvalidParameterValue" });
    expect(error(() => sqs.send("x", { delaySeconds: 901 }))).toBeInstanceOf(SqsError);
    expect(
      error(() => sqs.send("x", { messageAttributes: { "AWS.reserved": { DataType: "String", StringValue: "v" } } })),
    ).toMatchObject({ name: "InvalidParameterValue" });
    expect(error(() => sqs.send("nul \u0000 byte"))).toMatchObject({ name: "InvalidMessageContents" });
    expect(sqs.stats().visible).toBe(0);
  });

  it("has queue URLs once listening, and none after close()", async () => {
    const sqs = new LocalSqs(async () => undefined, { queueName: "q2" });
    expect(() => sqs.queueUrl).toThrow(/listen/);
    const { url } = await sqs.listen();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await sqs.listen()).toEqual({ url });
    expect(sqs.endpoint).toBe(url);
    expect(sqs.queueUrl).toBe(`${url}/000000000000/q2`);
    expect(sqs.deadLetterQueueUrl).toBe(`${url}/000000000000/q2-dlq`);
    await sqs.close();
    expect(() => sqs.deadLetterQueueUrl).toThrow(/listen/);
  });
});
