// The Lambda functions on a partitioned queue (docs/partitions.md): LEASEQ_PARTITIONS=3 over two
// redis-servers (REDIS_URL lists both: partition k on server k mod 2). The intake routes each task to
// its partition and wakes each partition it filled, naming it; a worker woken for a partition drains
// it first, then the others; the reclaimer ticks every partition, sums their figures, publishes each
// one's, and names partitions in its wake-ups and drain invocations; the producer wakes per partition.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LocalSqs } from "../../dev/standins/sqs/index.js";
import { startUpstashEndpoint } from "../../dev/standins/upstash/index.js";
import { readConfig } from "../../functions/config.js";
import { createProducer } from "../../functions/producer.js";
import { createReclaimer } from "../../functions/reclaimer.js";
import { defineTasks } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import type { ConfigError } from "../../shared/errors.js";
import { PartitionedQueue } from "../../shared/partitioned-queue.js";
import type { Store } from "../../shared/store.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import type { TaskInput } from "../../shared/types.js";
import { captureStdout, lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from "../helpers/events.js";
import { recordingLambdaApi } from "../helpers/lambda-api.js";
import { closeLocalSqs, openLocalSqs } from "../helpers/local-sqs.js";
import { type StartedRedis, startRedisServer } from "../helpers/redis-server.js";
import { redisUrl, uniqueQueueName } from "../helpers/stores.js";

const silent = (serviceName: string) => new Logger({ serviceName, logLevel: "SILENT" });
let sqs: LocalSqs;
let client: SQSClient;
let second: StartedRedis;
let stores: Store[];
const names: string[] = [];

beforeAll(async () => {
  ({ sqs, client } = await openLocalSqs());
  second = await startRedisServer();
  stores = [TcpStore.fromUrl(redisUrl()), TcpStore.fromUrl(second.url)];
  process.env.POWERTOOLS_METRICS_DISABLED = "true";
});
afterAll(async () => {
  // Each queue's partitions dropped, on both servers.
  for (const name of names) {
    for (const queue of new PartitionedQueue(stores, { name, partitions: 3 }).partitions) {
      await queue.admin.drop({ confirm: queue.name });
    }
  }
  for (const store of stores) await store.close();
  await second.stop();
  await closeLocalSqs({ sqs, client });
});
afterEach(() => {
  sqs.queue.purge();
});

/** The wake-ups sent since the last purge: the partition each names (undefined: none) and its delay. */
function wakes() {
  return sqs.queue
    .all()
    .filter((message) => message.body === '{"leaseq":"wake"}')
    .map((message) => ({
      partition:
        message.attributes.leaseqPartition === undefined
          ? undefined
          : Number(message.attributes.leaseqPartition.StringValue),
      delayMs: message.availableAtMs - message.sentMs,
    }));
}

/** A wake-up record naming `partition`, as the event source mapping delivers the producer's message. */
function wakeRecord(partition: number) {
  const record = sqsRecord({ leaseq: "wake" });
  record.eventSourceARN = `arn:aws:sqs:us-east-1:000000000000:${sqs.queueUrl.slice(sqs.queueUrl.lastIndexOf("/") + 1)}`;
  record.messageAttributes = { leaseqPartition: { dataType: "Number", stringValue: String(partition) } };
  return record;
}

function setup(extra: Record<string, string> = {}) {
  const name = uniqueQueueName("lp");
  names.push(name);
  const ran: Array<{ id: string; at: number }> = [];
  const tasks = defineTasks({
    concurrency: 4,
    types: {
      job: {
        handler: async (task) => {
          ran.push({ id: task.id, at: Date.now() });
        },
      },
    },
  });
  const env = {
    LEASEQ_QUEUE: name,
    LEASEQ_CLOCK_SKEW_MS: "0",
    REDIS_URL: `${redisUrl()},${second.url}`,
    LEASEQ_PARTITIONS: "3",
    LEASEQ_QUEUE_URL: sqs.queueUrl,
    LEASEQ_SQS_ENDPOINT: sqs.endpoint,
    LEASEQ_CLAIM_BATCH: "4",
    LEASEQ_LINGER_MS: "0",
    ...extra,
  };
  const queue = new PartitionedQueue(stores, { name, partitions: 3 });
  return { name, env, tasks, ran, queue };
}

const someTasks = (n: number): TaskInput[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `t${i}`,
    type: "job",
    ...(i % 3 === 0 ? {} : { group: `g${i % 7}` }),
  }));

describe("the functions on a queue of 3 partitions over two redis-servers", () => {
  it("the intake puts each task in its partition, on its server, and wakes each partition it filled, naming it", async () => {
    const { env, tasks, queue } = setup({ LEASEQ_ROLE: "intake" });
    const intake = createWorker({ tasks, env, logger: silent("intake") });
    try {
      const sent = someTasks(30);
      const { batchItemFailures } = await intake(sqsEvent(sqsRecord({ tasks: sent })), lambdaContext());
      expect(batchItemFailures).toEqual([]);
      for (const task of sent) {
        const home = queue.partitionFor(task);
        for (const [k, partition] of queue.partitions.entries()) {
          expect((await partition.admin.inspect(task.id))?.state, `${task.id} in partition ${k}`).toBe(
            k === home ? "ready" : undefined,
          );
        }
      }
      const ready = (await queue.stats({ now: Date.now() })).partitions.map((figures) => figures.ready);
      expect(ready.reduce((a, b) => a + b)).toBe(30);
      expect(ready.every((count) => count > 0)).toBe(true);
      // Partition 1's keys are on the second server, partitions 0 and 2's on the first.
      const servers = [new Redis(redisUrl()), new Redis(second.url)];
      try {
        for (const [k, partition] of queue.partitions.entries()) {
          expect(await servers[k % 2].exists(partition.keys.ready), `partition ${k}`).toBe(1);
          expect(await servers[(k + 1) % 2].exists(partition.keys.ready), `partition ${k}`).toBe(0);
        }
      } finally {
        for (const server of servers) server.disconnect();
      }
      // 30 ready tasks, more than a claim takes: every partition that got tasks is woken now, by name.
      expect(wakes().sort((a, b) => (a.partition ?? 0) - (b.partition ?? 0))).toEqual([
        { partition: 0, delayMs: 0 },
        { partition: 1, delayMs: 0 },
        { partition: 2, delayMs: 0 },
      ]);
    } finally {
      await intake.close();
    }
  });

  it("a worker woken for partition 2 drains it first, then the others, every task once", async () => {
    const { env, tasks, queue, ran } = setup();
    const sent = someTasks(24);
    await queue.enqueue(sent, { now: Date.now() });
    const worker = createWorker({ tasks, env, logger: silent("worker") });
    try {
      await worker(sqsEvent(wakeRecord(2)), lambdaContext());
      expect(ran.map((run) => run.id).sort()).toEqual(sent.map((task) => task.id).sort());
      // The first claim went to the partition the wake-up named.
      const first = ran
        .slice(0, 4)
        .map((run) => queue.partitionFor(sent.find((task) => task.id === run.id) as TaskInput));
      expect(first[0]).toBe(2);
      const totals = (await queue.stats({ now: Date.now() })).total;
      expect(totals).toMatchObject({ ready: 0, leased: 0, done: 24 });
      // A partition it left with work that came ready there meanwhile (a group's next task) was
      // handed back to wake-ups, which name it; the drain then took that work too.
      for (const wake of wakes()) expect(wake.partition).toBeTypeOf("number");
    } finally {
      await worker.close();
    }
  });

  it("a wake-up or drain invocation naming a partition the queue does not have drains all the same (never fails the invocation)", async () => {
    const { env, tasks, queue, ran } = setup();
    await queue.enqueue(someTasks(9), { now: Date.now() });
    const worker = createWorker({ tasks, env, logger: silent("worker") });
    try {
      const hostile = wakeRecord(7);
      expect((await worker(sqsEvent(hostile), lambdaContext())).batchItemFailures).toEqual([]);
      expect(ran).toHaveLength(9);
      await queue.enqueue([{ id: "more", type: "job" }], { now: Date.now() });
      await worker({ leaseq: "drain", partition: -1 }, lambdaContext());
      expect(ran).toHaveLength(10);
    } finally {
      await worker.close();
    }
  });

  it("the producer wakes each partition it enqueued into, naming it; a drain invocation naming partition 1 starts there", async () => {
    const { env, tasks, queue, ran } = setup();
    const sent = someTasks(12);
    const producer = createProducer({ queueUrl: sqs.queueUrl, client });
    const { wakeAtMs, wakeError } = await producer.enqueue(queue, sent);
    expect(wakeError).toBeUndefined();
    expect(wakeAtMs).toBeTypeOf("number");
    expect(wakes().sort((a, b) => (a.partition ?? 0) - (b.partition ?? 0))).toEqual([
      { partition: 0, delayMs: 0 },
      { partition: 1, delayMs: 0 },
      { partition: 2, delayMs: 0 },
    ]);
    const worker = createWorker({ tasks, env, logger: silent("worker") });
    try {
      await worker({ leaseq: "drain", partition: 1 }, lambdaContext());
      expect(queue.partitionFor(sent.find((task) => task.id === ran[0].id) as TaskInput)).toBe(1);
      expect(ran.map((run) => run.id).sort()).toEqual(sent.map((task) => task.id).sort());
    } finally {
      await worker.close();
    }
  });

  it("the reclaimer returns expired leases in every partition, sums the figures, publishes each partition's, and names partitions in its drain invocations", async () => {
    const { env, queue } = setup();
    const api = await recordingLambdaApi();
    const past = Date.now() - 120_000;
    const sent = someTasks(30);
    await queue.enqueue(sent, { now: past });
    await queue.configure({ policies: { job: { leaseMs: 1_000, maxAttempts: 3 } } });
    // Leases taken two minutes ago in each partition, long expired.
    for (const partition of [0, 1, 2]) await queue.claim({ count: 2, now: past, partition });
    const saved = process.env.POWERTOOLS_METRICS_DISABLED;
    process.env.POWERTOOLS_METRICS_DISABLED = "false";
    const reclaimer = createReclaimer({
      env: { ...env, LEASEQ_WORKER_FUNCTION: "leaseq-worker-fn", LEASEQ_LAMBDA_ENDPOINT: api.url },
      logger: silent("reclaimer"),
      metrics: new Metrics({ namespace: "leaseq-test", serviceName: "leaseq-reclaimer" }),
    });
    try {
      const { result, lines } = await captureStdout(() => reclaimer(scheduledEvent(), lambdaContext()));
      const each = (await queue.stats({ now: Date.now() })).partitions;
      expect(result).toMatchObject({ reclaimed: 6, ready: 30, leased: 0 });
      expect(each.map((figures) => figures.leased)).toEqual([0, 0, 0]);
      // One drain invocation per partition with a backlog, each naming it.
      expect(api.calls.map((call) => JSON.parse(call.body)).sort((a, b) => a.partition - b.partition)).toEqual([
        { leaseq: "drain", partition: 0 },
        { leaseq: "drain", partition: 1 },
        { leaseq: "drain", partition: 2 },
      ]);
      const emf = lines.map((line) => JSON.parse(line)).filter((entry) => entry._aws?.CloudWatchMetrics);
      const totals = emf.find((entry) => entry.partition === undefined);
      expect(totals).toMatchObject({ queue: queue.name, ready: 30, reclaimed: 6 });
      const perPartition = emf.filter((entry) => entry.partition !== undefined);
      expect(perPartition.map((entry) => [entry.partition, entry.ready])).toEqual(
        each.map((figures, k) => [String(k), figures.ready]),
      );
      expect(perPartition[0]._aws.CloudWatchMetrics[0].Dimensions).toEqual([["service", "queue", "partition"]]);
      expect(perPartition[0].service).toBe("leaseq-reclaimer");
    } finally {
      process.env.POWERTOOLS_METRICS_DISABLED = saved;
      await reclaimer.close();
      await api.close();
    }
  });

  it("grows from 1 partition to 3 by a redeploy: the worker of 3 drains what the worker of 1 left, and the new tasks", async () => {
    const { env, tasks, queue, ran } = setup();
    const before = createWorker({
      tasks,
      env: { ...env, LEASEQ_PARTITIONS: "1", LEASEQ_ROLE: "intake" },
      logger: silent("intake"),
    });
    try {
      await before(sqsEvent(sqsRecord({ tasks: someTasks(10) })), lambdaContext());
    } finally {
      await before.close();
    }
    // All in partition 0, the queue as it was.
    expect((await queue.stats({ now: Date.now() })).partitions.map((figures) => figures.ready)).toEqual([10, 0, 0]);
    const after = createWorker({ tasks, env, logger: silent("worker") });
    try {
      const more = Array.from({ length: 10 }, (_, i) => ({ id: `new${i}`, type: "job" }));
      await after(sqsEvent(sqsRecord({ tasks: more })), lambdaContext());
      expect(ran).toHaveLength(20);
      expect((await queue.stats({ now: Date.now() })).total).toMatchObject({ ready: 0, done: 20 });
    } finally {
      await after.close();
    }
  });
});

describe("a partitioned queue over two Upstash databases named by one Secrets Manager secret", () => {
  it("reads the secret's list of {url, token} through the real SDK client, and keeps partition k in database k mod 2", async () => {
    const endpoints = [
      await startUpstashEndpoint({ redisUrl: redisUrl() }),
      await startUpstashEndpoint({ redisUrl: second.url }),
    ];
    const secretArn = "arn:aws:secretsmanager:us-east-1:000000000000:secret:leaseq-dbs-AbC123";
    const secret = JSON.stringify(endpoints.map(({ url, token }) => ({ url, token })));
    // Secrets Manager's JSON protocol, GetSecretValue only: what the function's client sends.
    const asked: string[] = [];
    const api = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        asked.push(`${request.headers["x-amz-target"]} ${JSON.parse(body).SecretId}`);
        response.writeHead(200, { "content-type": "application/x-amz-json-1.1" });
        response.end(JSON.stringify({ ARN: secretArn, Name: "leaseq-dbs", SecretString: secret }));
      });
    });
    await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_SECRETS_MANAGER: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "local",
      AWS_SECRET_ACCESS_KEY: "local",
    });
    const { name, tasks, queue, env } = setup({ LEASEQ_ROLE: "intake" });
    const { REDIS_URL: _, ...withoutRedis } = env;
    const intake = createWorker({
      tasks,
      env: { ...withoutRedis, UPSTASH_SECRET_ARN: secretArn, LEASEQ_PARTITIONS: "3" },
      logger: silent("intake"),
    });
    const servers = [new Redis(redisUrl()), new Redis(second.url)];
    try {
      const sent = someTasks(20);
      expect((await intake(sqsEvent(sqsRecord({ tasks: sent })), lambdaContext())).batchItemFailures).toEqual([]);
      expect(asked).toEqual([`secretsmanager.GetSecretValue ${secretArn}`]);
      for (const task of sent) {
        const home = queue.partitionFor(task);
        const key = queue.partitions[home].keys.task;
        expect(await servers[home % 2].hexists(key, task.id), `${task.id} in database ${home % 2}`).toBe(1);
        expect(await servers[(home + 1) % 2].hexists(key, task.id)).toBe(0);
      }
      expect(name).toBe(queue.name);
    } finally {
      await intake.close();
      process.env = saved;
      for (const server of servers) server.disconnect();
      for (const endpoint of endpoints) await endpoint.close();
      await new Promise((resolve) => api.close(resolve));
    }
  });
});

describe("the functions' partition settings", () => {
  const base = { LEASEQ_QUEUE: "q", REDIS_URL: "redis://127.0.0.1:6379" };
  const problems = (env: Record<string, string>) => {
    try {
      readConfig(env);
      return [];
    } catch (error) {
      return (error as ConfigError).problems;
    }
  };

  it("refuses at the cold start a partition count, a shrink or a connection list that cannot be, naming the variable", () => {
    expect(readConfig({ ...base, LEASEQ_PARTITIONS: "64", LEASEQ_SHRINKING_FROM: "" })).toMatchObject({
      partitions: 64,
      shrinkingFrom: undefined,
    });
    expect(problems({ ...base, LEASEQ_PARTITIONS: "0" })).toEqual([
      'LEASEQ_PARTITIONS must be an integer from 1 to 64, got "0"',
    ]);
    expect(problems({ ...base, LEASEQ_PARTITIONS: "65" })).toEqual([
      'LEASEQ_PARTITIONS must be an integer from 1 to 64, got "65"',
    ]);
    expect(problems({ ...base, LEASEQ_PARTITIONS: "4", LEASEQ_SHRINKING_FROM: "4" })).toEqual([
      "LEASEQ_SHRINKING_FROM (4) is the count before a shrink, so it must be more than LEASEQ_PARTITIONS (4)",
    ]);
    expect(problems({ ...base, REDIS_URL: "redis://a:6379,http://b:6379" })).toEqual([
      "REDIS_URL must start with redis:// or rediss:// (several: comma-separated, each so)",
    ]);
    expect(
      problems({
        LEASEQ_QUEUE: "q",
        UPSTASH_REDIS_REST_URL: "https://a.upstash.io,https://b.upstash.io",
        UPSTASH_REDIS_REST_TOKEN: "only-one",
      }),
    ).toEqual([
      "UPSTASH_REDIS_REST_TOKEN must list a token for each URL of UPSTASH_REDIS_REST_URL (2), comma-separated, got 1",
    ]);
    // The message names the variable and the count, never a token.
    expect(
      readConfig({
        LEASEQ_QUEUE: "q",
        UPSTASH_REDIS_REST_URL: "https://a.upstash.io,https://b.upstash.io",
        UPSTASH_REDIS_REST_TOKEN: "t1,t2",
      }).connection,
    ).toEqual({
      kind: "upstash",
      url: "https://a.upstash.io",
      token: "t1",
      more: [{ url: "https://b.upstash.io", token: "t2" }],
    });
  });
});
