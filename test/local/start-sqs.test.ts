import { createHash } from "node:crypto";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { LocalSqs } from "../../local/sqs.js";

const until = async (condition: () => boolean, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

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
    sqs.start();
    await until(() => sqs.stats().deleted === 7);
    await sqs.stop();
    expect(batches).toEqual([["m0", "m1", "m2"], ["m3", "m4", "m5"], ["m6"]]);
    expect(sqs.stats()).toMatchObject({ visible: 0, inFlight: 0, redelivered: 0, deadLettered: 0, invocations: 3 });
  });

  it("redelivers records reported in batchItemFailures after the visibility timeout, with a higher receive count", async () => {
    const seen: Array<{ body: string; receiveCount: string; atMs: number }> = [];
    const sqs = new LocalSqs(
      async (event: SQSEvent): Promise<SQSBatchResponse> => {
        for (const record of event.Records) {
          seen.push({ body: record.body, receiveCount: record.attributes.ApproximateReceiveCount, atMs: Date.now() });
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
    sqs.start();
    await until(() => sqs.stats().deleted === 2);
    await sqs.stop();
    expect(seen.map(({ body, receiveCount }) => [body, receiveCount])).toEqual([
      ["good", "1"],
      ["bad", "1"],
      ["bad", "2"],
    ]);
    expect(seen[2].atMs - seen[1].atMs).toBeGreaterThanOrEqual(190);
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
    sqs.start();
    await until(() => sqs.deadLetters.length === 2);
    await sqs.stop();
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
    const id = sqs.send('{"tasks":[]}', 1_700_000_000_000);
    sqs.start();
    await until(() => record !== undefined);
    await sqs.stop();
    expect(record).toMatchObject({
      messageId: id,
      body: '{"tasks":[]}',
      eventSource: "aws:sqs",
      eventSourceARN: "arn:aws:sqs:local:000000000000:q1",
      md5OfBody: createHash("md5").update('{"tasks":[]}').digest("hex"),
      attributes: { ApproximateReceiveCount: "1", SentTimestamp: "1700000000000" },
    });
  });
});
