// The intake (docs/lambda.md "The intake"): the worker's bundle in the intake role puts the task
// queue's tasks in Redis and wakes a worker, and never runs a task. The SQS stand-in here is not
// polled: each test reads what the intake sent to the wake queue and the dead-letter queue.
import { Logger } from "@aws-lambda-powertools/logger";
import type { SQSRecord } from "aws-lambda";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LocalSqs } from "../../dev/standins/sqs/index.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { closeLocalSqs, openLocalSqs } from "../helpers/local-sqs.js";
import { adapters, redisUrl, uniqueQueueName } from "../helpers/stores.js";

const tcp = adapters[0];
let sqs: LocalSqs;
const store = TcpStore.fromUrl(redisUrl());

beforeAll(async () => ({ sqs } = await openLocalSqs()));
afterAll(async () => {
  await closeLocalSqs({ sqs });
  await store.close();
});
afterEach(() => {
  sqs.queue.purge();
  sqs.deadLetterQueue.purge();
});

/** The wake-ups sent since the last purge, as the delay SQS holds each back (ms). */
function wakeDelays(): number[] {
  return sqs.queue
    .all()
    .filter((message) => message.body === '{"leaseq":"wake"}')
    .map((message) => message.availableAtMs - message.sentMs);
}

function setup(extraEnv: Record<string, string> = {}) {
  const name = uniqueQueueName("intake");
  const runs: string[] = [];
  const intake = createWorker({
    tasks: { types: { job: { handler: (task) => void runs.push(task.id) } } },
    env: functionEnv(tcp, name, {
      LEASEQ_ROLE: "intake",
      LEASEQ_WAKE_QUEUE_URL: sqs.queueUrl,
      LEASEQ_DLQ_URL: sqs.deadLetterQueueUrl,
      LEASEQ_SQS_ENDPOINT: sqs.endpoint,
      ...extraEnv,
    }),
    logger: new Logger({ serviceName: "intake", logLevel: "SILENT" }),
  });
  return { queue: new Queue(store, { name }), intake, runs };
}

/** A record of a FIFO task queue: its message group rides in its attributes. */
function fifoRecord(body: unknown, messageId: string, group: string): SQSRecord {
  const record = sqsRecord(body, messageId);
  return { ...record, attributes: { ...record.attributes, MessageGroupId: group } };
}

const jobs = (...ids: string[]) => ({ tasks: ids.map((id) => ({ id, type: "job" })) });

describe("the intake", () => {
  it("puts every task of the batch in Redis and sends one wake-up, running none of them; a misspelled type goes to the dead-letter queue with the declared types", async () => {
    const { queue, intake, runs } = setup();
    const reply = await intake(
      sqsEvent(sqsRecord(jobs("a", "b"), "m1"), sqsRecord({ tasks: [{ id: "t", type: "jbo" }] }, "m2")),
      lambdaContext(),
    );
    expect(reply.batchItemFailures).toEqual([]);
    for (const id of ["a", "b"]) expect((await queue.admin.inspect(id))?.state).toBe("ready");
    expect(await queue.admin.inspect("t")).toBeUndefined();
    expect(runs).toEqual([]);
    expect(wakeDelays()).toEqual([0]);
    expect(sqs.deadLetters.map((letter) => letter.messageAttributes.LeaseqReason?.StringValue)).toEqual([
      'tasks[0]: task type "jbo" is not declared by this worker; declared: job',
    ]);
  });

  it("sends no wake-up while a worker drains, unless the batch brings more ready tasks than one claim takes", async () => {
    const { queue, intake } = setup({ LEASEQ_CLAIM_BATCH: "20" });
    await intake(sqsEvent(sqsRecord(jobs("first"))), lambdaContext());
    expect(wakeDelays()).toEqual([0]);
    sqs.queue.purge();
    // A worker claims: it drains, and will see what comes next.
    await queue.claim({ count: 1, now: Date.now(), maxLeaseMs: 60_000 });
    await intake(sqsEvent(sqsRecord(jobs("x1", "x2"))), lambdaContext());
    expect(wakeDelays()).toEqual([]);
    // A burst: another worker is worth starting.
    const burst = Array.from({ length: 20 }, (_, i) => `burst-${i}`);
    await intake(sqsEvent(sqsRecord(jobs(...burst))), lambdaContext());
    expect(wakeDelays()).toEqual([0]);
    expect((await queue.stats({ now: Date.now() })).ready).toBe(22);
  });

  it("passes a wake-up sent to the task queue on to the wake queue", async () => {
    const { intake } = setup();
    await intake(sqsEvent(sqsRecord({ leaseq: "wake" })), lambdaContext());
    expect(wakeDelays()).toEqual([0]);
  });

  it("wakes a worker when delayed tasks fall due, not before", async () => {
    const { intake } = setup();
    await intake(sqsEvent(sqsRecord({ tasks: [{ id: "d", type: "job", delayMs: 30_000 }] })), lambdaContext());
    const [delay] = wakeDelays();
    expect(delay).toBeGreaterThanOrEqual(29_000);
    expect(delay).toBeLessThanOrEqual(30_000);
  });

  it("on a FIFO queue, a record that must come again holds the later records of its group, in order; other groups go on", async () => {
    // The dead-letter queue cannot be reached, so an invalid record must be delivered again.
    const { queue, intake } = setup({ LEASEQ_DLQ_URL: `${sqs.queueUrl}-missing` });
    const reply = await intake(
      sqsEvent(
        fifoRecord({ tasks: [{ id: "g1-bad", type: "jbo" }] }, "m1", "g1"),
        fifoRecord(jobs("g1-next"), "m2", "g1"),
        fifoRecord(jobs("g2-first"), "m3", "g2"),
        fifoRecord(jobs("g1-last"), "m4", "g1"),
      ),
      lambdaContext(),
    );
    expect(reply.batchItemFailures).toEqual([
      { itemIdentifier: "m1" },
      { itemIdentifier: "m2" },
      { itemIdentifier: "m4" },
    ]);
    expect(await queue.admin.inspect("g1-next")).toBeUndefined();
    expect(await queue.admin.inspect("g1-last")).toBeUndefined();
    expect((await queue.admin.inspect("g2-first"))?.state).toBe("ready");
  });
});
