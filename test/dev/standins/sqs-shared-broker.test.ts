import { GetQueueUrlCommand, ListQueuesCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";
import { LocalSqs } from "../../../dev/standins/sqs/index.js";
import { closeAfterTest, recordingHandler, sqsClient, until } from "./sqs-client.js";

describe("several LocalSqs on one broker", () => {
  it("are reached through the first one's endpoint, each queue polled by its own mapping", async () => {
    const emails = recordingHandler();
    const payments = recordingHandler();
    const first = new LocalSqs(emails.handler, { queueName: "emails", concurrency: 1, pollMs: 5 });
    const second = new LocalSqs(payments.handler, {
      queueName: "payments",
      fifo: true,
      broker: first.broker,
      concurrency: 2,
      batchSize: 1,
      pollMs: 5,
    });
    closeAfterTest(first);
    closeAfterTest(second);
    expect(() => second.endpoint).toThrow(/listen/);
    const { url } = await first.listen();
    expect(second.endpoint).toBe(url);
    expect(second.queueUrl).toBe(`${url}/000000000000/payments.fifo`);
    expect(second.deadLetterQueueUrl).toBe(`${url}/000000000000/payments-dlq.fifo`);

    const client = sqsClient(url);
    closeAfterTest(client);
    const listed = await client.send(new ListQueuesCommand({}));
    expect(listed.QueueUrls?.map((queueUrl) => queueUrl.slice(url.length))).toEqual([
      "/000000000000/emails-dlq",
      "/000000000000/emails",
      "/000000000000/payments-dlq.fifo",
      "/000000000000/payments.fifo",
    ]);
    await client.send(new SendMessageCommand({ QueueUrl: first.queueUrl, MessageBody: "welcome" }));
    for (const body of ["charge", "refund"]) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: second.queueUrl,
          MessageBody: body,
          MessageGroupId: "card-1",
          MessageDeduplicationId: body,
        }),
      );
    }
    first.start();
    second.start();
    await until(() => first.stats().deleted === 1 && second.stats().deleted === 2);
    expect(emails.batches).toEqual([["welcome"]]);
    expect(payments.batches).toEqual([["charge"], ["refund"]]);
    expect(first.stats()).toMatchObject({ invocations: 1, deleted: 1 });
    expect(second.stats()).toMatchObject({ invocations: 2, deleted: 2 });

    // Closing the one without a server stops its mapping only; the endpoint still serves both queues.
    await second.close();
    await client.send(new SendMessageCommand({ QueueUrl: first.queueUrl, MessageBody: "again" }));
    await client.send(
      new SendMessageCommand({
        QueueUrl: second.queueUrl,
        MessageBody: "later",
        MessageGroupId: "card-1",
        MessageDeduplicationId: "later",
      }),
    );
    await until(() => first.stats().deleted === 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(second.stats()).toMatchObject({ visible: 1, invocations: 2 });
    // Closing the one that serves the endpoint closes it for both.
    await first.close();
    expect(() => second.endpoint).toThrow(/listen/);
    await expect(fetch(url, { method: "POST" })).rejects.toThrow();
  });

  it("refuses a second LocalSqs whose queue name is taken on the broker, naming the name", () => {
    const first = new LocalSqs(async () => undefined, { queueName: "jobs" });
    expect(() => new LocalSqs(async () => undefined, { queueName: "jobs", broker: first.broker })).toThrow(
      /cannot create SQS queue "jobs-dlq": a queue of that name exists on this broker/,
    );
  });

  it("a LocalSqs that listens itself answers at its own endpoint; either server serves every queue", async () => {
    const first = new LocalSqs(async () => undefined, { queueName: "one" });
    const second = new LocalSqs(async () => undefined, { queueName: "two", broker: first.broker });
    closeAfterTest(first);
    closeAfterTest(second);
    const { url: firstUrl } = await first.listen();
    const { url: secondUrl } = await second.listen();
    expect(secondUrl).not.toBe(firstUrl);
    expect(second.queueUrl).toBe(`${secondUrl}/000000000000/two`);
    expect(first.queueUrl).toBe(`${firstUrl}/000000000000/one`);
    const client = sqsClient(secondUrl);
    closeAfterTest(client);
    const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName: "one" }));
    expect(QueueUrl).toBe(`${secondUrl}/000000000000/one`);
    await first.close();
    await client.send(new SendMessageCommand({ QueueUrl: second.queueUrl, MessageBody: "still served" }));
    expect(second.stats().visible).toBe(1);
    expect(second.endpoint).toBe(secondUrl);
  });
});
