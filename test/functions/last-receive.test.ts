// A record that fails at its last receive (ApproximateReceiveCount = LEASEQ_MAX_RECEIVE_COUNT, the
// task queue's redrive policy) goes to the dead-letter queue with the reason it failed, sent by the
// intake, and is reported done (the redrive policy alone would move it there with no reason). The SQS
// stand-in here is not polled: each test reads what the intake sent to the dead-letter queue.
import { Logger } from "@aws-lambda-powertools/logger";
import type { SQSRecord } from "aws-lambda";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { MAX_MESSAGE_BYTES } from "../../functions/messages.js";
import { REDEPLOY_ADVICE } from "../../functions/policy-mismatch.js";
import { defineTasks, policyText } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { openLocalSqs } from "../helpers/local-sqs.js";
import { freePort } from "../helpers/redis-server.js";
import { adapters, redisUrl, uniqueQueueName } from "../helpers/stores.js";

const tcp = adapters[0];
const store = TcpStore.fromUrl(redisUrl());
let sqs: LocalSqs;
let fifo: LocalSqs;

beforeAll(async () => {
  ({ sqs } = await openLocalSqs());
  fifo = new LocalSqs(async () => undefined, { fifo: true, broker: sqs.broker, queueName: "last-receive" });
});
afterAll(async () => {
  await sqs.close();
  await store.close();
});
afterEach(() => {
  sqs.deadLetterQueue.purge();
  fifo.deadLetterQueue.purge();
});

const handler = () => {};
const job = { types: { job: { handler } } };

/** The intake of a fresh queue on the task queue whose redrive policy has maxReceiveCount 5. */
function intakeOf(env: Record<string, string> = {}, options: { fifo?: boolean } = {}) {
  const name = uniqueQueueName("lastrcv");
  const local = options.fifo ? fifo : sqs;
  const intake = createWorker({
    tasks: job,
    env: functionEnv(tcp, name, {
      LEASEQ_ROLE: "intake",
      LEASEQ_DLQ_URL: local.deadLetterQueueUrl,
      LEASEQ_SQS_ENDPOINT: sqs.endpoint,
      LEASEQ_MAX_RECEIVE_COUNT: "5",
      ...env,
    }),
    logger: new Logger({ serviceName: "intake", logLevel: "SILENT" }),
  });
  return { intake, queue: new Queue(store, { name }) };
}

/** A record SQS delivers for the `receiveCount`th time, in `group` when given (a FIFO queue's). */
function delivery(body: unknown, messageId: string, receiveCount: number, group?: string): SQSRecord {
  const record = sqsRecord(body, messageId);
  return {
    ...record,
    attributes: {
      ...record.attributes,
      ApproximateReceiveCount: String(receiveCount),
      ...(group === undefined ? {} : { MessageGroupId: group }),
    },
  };
}

const reasons = (local: LocalSqs) =>
  local.deadLetters.map((letter) => ({
    body: letter.body,
    reason: letter.messageAttributes.LeaseqReason?.StringValue,
  }));

describe("a record at its last receive whose invocation fails", () => {
  it("goes to the dead-letter queue with the cold start's ConfigError, its tasks given the ids they would have had; an earlier receive fails as before", async () => {
    const deployed = defineTasks({ types: { job: { leaseMs: 30_000, handler } } });
    const { intake } = intakeOf({ LEASEQ_TASKS: policyText(deployed) });
    const reply = await intake(
      sqsEvent(delivery({ tasks: [{ type: "job" }] }, "m-last", 5), delivery({ tasks: [{ type: "job" }] }, "m-3rd", 3)),
      lambdaContext(),
    );
    expect(reply.batchItemFailures).toEqual([{ itemIdentifier: "m-3rd" }]);
    expect(reasons(sqs)).toEqual([
      {
        body: '{"tasks":[{"id":"m-last-0","type":"job"}]}',
        reason: `the function failed at this message's last receive (received 5 times, the redrive policy's maxReceiveCount 5): ConfigError: invalid configuration:\n- task type "job": timeoutMs: the worker declares 60000 (runs until the invocation ends), the construct was given 30000 (runs until the invocation ends)\n- ${REDEPLOY_ADVICE}`,
      },
    ]);
  });

  it("goes there with Redis's host, port and variable when Redis is out of reach, never its password", async () => {
    const port = await freePort();
    const { intake } = intakeOf({ REDIS_URL: `redis://:s3cr3t-pw@127.0.0.1:${port}` });
    const reply = await intake(sqsEvent(delivery({ tasks: [{ id: "a", type: "job" }] }, "m1", 5)), lambdaContext());
    expect(reply.batchItemFailures).toEqual([]);
    expect(reasons(sqs)).toEqual([
      {
        body: '{"tasks":[{"id":"a","type":"job"}]}',
        reason: `the function failed at this message's last receive (received 5 times, the redrive policy's maxReceiveCount 5): UnreachableError: configure: Redis unreachable at 127.0.0.1:${port} (from REDIS_URL): connection refused (nothing listens on that port); check that Redis is running there, that REDIS_URL names its host and port (rediss:// for TLS), and that this machine may connect to it (firewall, security group, VPC)`,
      },
    ]);
  });

  it("fails the invocation as before when no record is at its last receive, or the dead-letter queue cannot take them", async () => {
    const port = await freePort();
    const down = { REDIS_URL: `redis://127.0.0.1:${port}` };
    const early = intakeOf(down).intake;
    await expect(early(sqsEvent(delivery({ tasks: [{ type: "job" }] }, "m1", 4)), lambdaContext())).rejects.toThrow(
      /^configure: Redis unreachable at /,
    );
    const noDlq = intakeOf({ ...down, LEASEQ_DLQ_URL: `${sqs.queueUrl}-missing` }).intake;
    await expect(noDlq(sqsEvent(delivery({ tasks: [{ type: "job" }] }, "m1", 5)), lambdaContext())).rejects.toThrow(
      /^configure: Redis unreachable at /,
    );
    const unset = intakeOf({ ...down, LEASEQ_MAX_RECEIVE_COUNT: "" }).intake;
    await expect(unset(sqsEvent(delivery({ tasks: [{ type: "job" }] }, "m1", 5)), lambdaContext())).rejects.toThrow(
      /^configure: Redis unreachable at /,
    );
    expect(sqs.deadLetters).toEqual([]);
  });
});

describe("on a FIFO task queue, a record at its last receive", () => {
  // Not JSON, and so large that with its dead letter's attributes SQS would refuse it: the intake
  // cannot dead-letter it, so it must come again (or, at its last receive, the redrive policy takes it).
  const undeliverable = "x".repeat(MAX_MESSAGE_BYTES - 10);

  it("held behind an earlier record of its group is dead-lettered saying so, and enqueues nothing", async () => {
    const { intake, queue } = intakeOf({}, { fifo: true });
    const reply = await intake(
      sqsEvent(
        delivery(undeliverable, "m1", 2, "g1"),
        delivery({ tasks: [{ type: "job" }] }, "m2", 5, "g1"),
        delivery({ tasks: [{ id: "g2-first", type: "job" }] }, "m3", 5, "g2"),
      ),
      lambdaContext(),
    );
    expect(reply.batchItemFailures).toEqual([{ itemIdentifier: "m1" }]);
    expect(reasons(fifo)).toEqual([
      {
        body: '{"tasks":[{"id":"m2-0","type":"job"}]}',
        reason:
          "held behind message m1 of its message group, which SQS delivers again, at its last receive (received 5 times, the redrive policy's maxReceiveCount 5); none of its tasks was enqueued",
      },
    ]);
    expect(await queue.admin.inspect("m2-0")).toBeUndefined();
    expect((await queue.admin.inspect("g2-first"))?.state).toBe("ready");
  });

  it("that fails holds none of its group: the redrive policy takes it, and the records after it are enqueued", async () => {
    const { intake, queue } = intakeOf({}, { fifo: true });
    const reply = await intake(
      sqsEvent(
        delivery(undeliverable, "m1", 5, "g1"),
        delivery({ tasks: [{ id: "g1-next", type: "job" }] }, "m2", 5, "g1"),
      ),
      lambdaContext(),
    );
    expect(reply.batchItemFailures).toEqual([{ itemIdentifier: "m1" }]);
    expect((await queue.admin.inspect("g1-next"))?.state).toBe("ready");
    expect(fifo.deadLetters).toEqual([]);
  });
});
