import { SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { LocalSqs } from "../../../dev/standins/sqs/index.js";
import { closeAfterTest, sqsClient, until } from "./sqs-client.js";

const groupOf = (record: SQSRecord) => record.attributes.MessageGroupId ?? "";
const delivery = (record: SQSRecord) => `${record.body}#${record.attributes.ApproximateReceiveCount}`;

describe("the event source mapping over a FIFO queue", () => {
  it("with 4 pollers delivers 5 groups of 100 messages, each group in order, no group in two invocations at once", async () => {
    const delivered = new Map<string, number[]>();
    const active = new Set<string>();
    let overlaps = 0;
    let busiest = 0;
    let running = 0;
    const sqs = new LocalSqs(
      async (event: SQSEvent) => {
        const groups = new Set(event.Records.map(groupOf));
        for (const group of groups) {
          if (active.has(group)) overlaps++;
          active.add(group);
        }
        busiest = Math.max(busiest, ++running);
        // A little work, so the pollers' invocations overlap.
        await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 3));
        for (const record of event.Records) {
          const list = delivered.get(groupOf(record)) ?? [];
          list.push(Number(record.body.split(":")[1]));
          delivered.set(groupOf(record), list);
        }
        running--;
        for (const group of groups) active.delete(group);
        return { batchItemFailures: [] };
      },
      { queueName: "ordered", fifo: true, concurrency: 4, batchSize: 10, pollMs: 5 },
    );
    const client = sqsClient((await sqs.listen()).url);
    closeAfterTest(sqs, client);
    const groups = ["g0", "g1", "g2", "g3", "g4"];
    // Sent over the wire interleaved, 10 per batch: each group's messages are spread over the queue.
    for (let first = 0; first < 500; first += 10) {
      await client.send(
        new SendMessageBatchCommand({
          QueueUrl: sqs.queueUrl,
          Entries: Array.from({ length: 10 }, (_, offset) => {
            const n = first + offset;
            const group = groups[n % 5];
            const index = Math.floor(n / 5);
            return {
              Id: `m${n}`,
              MessageBody: `${group}:${index}`,
              MessageGroupId: group,
              MessageDeduplicationId: `${n}`,
            };
          }),
        }),
      );
    }
    sqs.start();
    await until(() => sqs.stats().deleted === 500, 20_000);
    await sqs.stop();
    for (const group of groups) {
      expect(delivered.get(group)).toEqual(Array.from({ length: 100 }, (_, index) => index));
    }
    expect(overlaps).toBe(0);
    expect(busiest).toBeGreaterThan(1);
    expect(sqs.stats()).toMatchObject({ redelivered: 0, visible: 0, notVisible: 0 });
  });

  it("keeps a failed record's later records of its group even when the handler reports only the failed one", async () => {
    const deliveries: string[] = [];
    const sqs = new LocalSqs(
      async (event): Promise<SQSBatchResponse> => {
        deliveries.push(...event.Records.map(delivery));
        const failed = event.Records.filter((record) => record.body === "a2" && delivery(record) === "a2#1");
        return { batchItemFailures: failed.map((record) => ({ itemIdentifier: record.messageId })) };
      },
      { fifo: true, visibilityTimeoutMs: 200, concurrency: 1, batchSize: 10, pollMs: 5 },
    );
    closeAfterTest(sqs);
    for (const body of ["a1", "a2", "a3", "a4", "b1", "b2"]) {
      sqs.send(body, { messageGroupId: body[0], messageDeduplicationId: body });
    }
    sqs.start();
    await until(() => sqs.stats().deleted === 6);
    await sqs.stop();
    // Group a's first batch: a1 done, a2 failed, a3 and a4 processed but kept; they come back after
    // a2, in order. Group b is not held back by a's failure.
    expect(deliveries).toEqual(["a1#1", "a2#1", "a3#1", "a4#1", "b1#1", "b2#1", "a2#2", "a3#2", "a4#2"]);
    expect(sqs.stats()).toMatchObject({ redelivered: 3, deadLettered: 0 });
  });

  it("builds records with the FIFO system attributes Lambda gives", async () => {
    const records: SQSRecord[] = [];
    const sqs = new LocalSqs(
      async (event) => {
        records.push(...event.Records);
      },
      { fifo: true, contentBasedDeduplication: true, concurrency: 1, pollMs: 5 },
    );
    closeAfterTest(sqs);
    sqs.send("explicit", { messageGroupId: "tenant-1", messageDeduplicationId: "d-1" });
    sqs.send("by content", { messageGroupId: "tenant-1" });
    sqs.start();
    await until(() => records.length === 2);
    await sqs.stop();
    expect(records[0].attributes).toMatchObject({
      MessageGroupId: "tenant-1",
      MessageDeduplicationId: "d-1",
      ApproximateReceiveCount: "1",
    });
    expect(records[1].attributes.MessageDeduplicationId).toMatch(/^[0-9a-f]{64}$/);
    const [first, second] = records.map((record) => BigInt(record.attributes.SequenceNumber ?? "0"));
    expect(second).toBeGreaterThan(first);
    expect(records[0].eventSourceARN).toBe("arn:aws:sqs:local:000000000000:leaseq-local.fifo");
  });

  it("a standard queue's records carry no FIFO attributes", async () => {
    const records: SQSRecord[] = [];
    const sqs = new LocalSqs(
      async (event) => {
        records.push(...event.Records);
      },
      { concurrency: 1, pollMs: 5 },
    );
    closeAfterTest(sqs);
    sqs.send("plain");
    sqs.start();
    await until(() => records.length === 1);
    await sqs.stop();
    expect(Object.keys(records[0].attributes).sort()).toEqual([
      "ApproximateFirstReceiveTimestamp",
      "ApproximateReceiveCount",
      "SenderId",
      "SentTimestamp",
    ]);
  });
});
