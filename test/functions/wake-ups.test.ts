// Wake-ups (docs/wake-ups.md): whoever makes work fall due arranges for a worker to look then, by
// an SQS message delayed to that time, coalesced in the queue's config. The SQS stand-in here is
// not polled: each test reads the messages the functions and the producer sent, and their delays.
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import type { LocalSqs } from "../../dev/standins/sqs/index.js";
import { createProducer } from "../../functions/producer.js";
import { createReclaimer } from "../../functions/reclaimer.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { closeLocalSqs, openLocalSqs } from "../helpers/local-sqs.js";
import { adapters, rawClient, redisUrl, uniqueQueueName } from "../helpers/stores.js";

const tcp = adapters[0];
const silent = (serviceName: string) => new Logger({ serviceName, logLevel: "SILENT" });
let sqs: LocalSqs;
let client: SQSClient;
const store = TcpStore.fromUrl(redisUrl());

beforeAll(async () => {
  ({ sqs, client } = await openLocalSqs());
  process.env.POWERTOOLS_METRICS_DISABLED = "true";
});
afterAll(async () => {
  await closeLocalSqs({ sqs, client });
  await store.close();
});
afterEach(() => {
  vi.useRealTimers();
  sqs.queue.purge();
});

/** The wake-up messages sent since the last purge: when each was sent and when SQS makes it visible. */
function wakes() {
  return sqs.queue
    .all()
    .filter((message) => message.body === '{"leaseq":"wake"}')
    .map((message) => ({ sentMs: message.sentMs, delayMs: message.availableAtMs - message.sentMs }));
}

function setup(extraEnv: Record<string, string> = {}) {
  const name = uniqueQueueName("wake");
  const env = functionEnv(tcp, name, {
    LEASEQ_QUEUE_URL: sqs.queueUrl,
    LEASEQ_SQS_ENDPOINT: sqs.endpoint,
    LEASEQ_RECLAIM_PERIOD_MS: "60000",
    ...extraEnv,
  });
  const queue = new Queue(store, { name });
  const producer = createProducer({ queueUrl: sqs.queueUrl, client });
  const reclaimer = createReclaimer({
    env,
    logger: silent("reclaimer"),
    metrics: new Metrics({ namespace: "leaseq-test" }),
  });
  return { name, env, queue, producer, reclaimer };
}

describe("wake-ups", () => {
  it("wakes the worker for ready work enqueued through the library, delayed to the due time of delayed work", async () => {
    const { queue, producer } = setup();
    const now = Date.now();
    expect((await producer.enqueue(queue, [{ id: "later", type: "job", delayMs: 5_000 }], { now })).wakeAtMs).toBe(
      now + 5_000,
    );
    expect(wakes()).toEqual([{ sentMs: expect.any(Number), delayMs: 5_000 }]);
    // Due after the wake-up already arranged: that worker will see it (it waits, or wakes itself).
    await producer.enqueue(queue, [{ id: "after", type: "job", delayMs: 8_000 }], { now: now + 100 });
    expect(wakes()).toHaveLength(1);
    // Due sooner: a wake-up of its own, and ready work: one sent at once.
    await producer.enqueue(queue, [{ id: "sooner", type: "job", delayMs: 2_500 }], { now: now + 200 });
    await producer.enqueue(queue, [{ id: "now", type: "job" }], { now: now + 300 });
    // DelaySeconds is whole seconds: rounded up, a wake-up never arrives before its work.
    expect(wakes().map((wake) => wake.delayMs)).toEqual([5_000, 3_000, 0]);
    // Tasks due in more than 15 minutes wait for the reclaimer's runs; nothing is sent for them.
    await producer.enqueue(queue, [{ id: "far", type: "job", delayMs: 16 * 60_000 }], { now: now + 400 });
    expect(wakes()).toHaveLength(3);
    // Tasks without an id get a random one, as with send(): the results say which.
    const { results } = await producer.enqueue(queue, [{ type: "job" }, { type: "job" }], { now: now + 500 });
    expect(results.map((result) => result.status)).toEqual(["ok", "ok"]);
    expect(new Set(results.map((result) => result.id)).size).toBe(2);
    for (const { id } of results) expect((await queue.admin.inspect(id))?.state).toBe("ready");
  });

  it("coalesces the wake-ups of a burst: 10,000 tasks in 100 calls send one message", async () => {
    const { queue, producer } = setup();
    const start = Date.now();
    for (let call = 0; call < 100; call++) {
      const tasks = Array.from({ length: 100 }, (_, i) => ({ id: `b${call * 100 + i}`, type: "job" }));
      await producer.enqueue(queue, tasks, { now: start + call * 20 });
    }
    expect(await queue.stats({ now: start + 2_000 })).toMatchObject({ ready: 10_000 });
    expect(wakes()).toHaveLength(1);
  });

  it("arranges, as a worker stops, the wake-up for a retry's backoff; a worker lingers for work due in a moment", async () => {
    let runs = 0;
    const tasks = {
      types: {
        flaky: {
          leaseMs: 5_000,
          backoff: { baseMs: 8_000, maxMs: 8_000 },
          handler: () => {
            runs++;
            if (runs === 1) throw new Error("try again");
          },
        },
        soon: { leaseMs: 5_000, handler: () => {} },
      },
    };
    const { env, queue } = setup({ LEASEQ_LINGER_MS: "3000" });
    const worker = createWorker({ tasks, env, logger: silent("worker") });
    await queue.enqueue(
      [
        { id: "f", type: "flaky" },
        { id: "s", type: "soon", delayMs: 1_000 },
      ],
      { now: Date.now() },
    );
    const started = Date.now();
    await worker(sqsEvent(sqsRecord({ leaseq: "wake" })), lambdaContext());
    // It did not stop at the empty claim before "s" was due: it waited and ran it.
    expect(await queue.admin.inspect("s")).toMatchObject({ state: "done" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    // The retry is due 4-8 s after its run (jittered backoff), beyond the linger: a wake-up for it.
    const retry = await queue.admin.inspect("f");
    expect(retry).toMatchObject({ state: "scheduled", attempts: 1 });
    const [wake] = wakes();
    expect(wakes()).toHaveLength(1);
    // Rounded up to whole seconds from when the worker decided it (after the failed attempt ended,
    // before the stand-in took the message): never before the retry is due, less than a second after.
    const dueAt = retry?.dueAt ?? 0;
    const endedAt = retry?.history.at(-1)?.endedAtMs ?? 0;
    expect(wake.delayMs % 1_000).toBe(0);
    expect(wake.sentMs + wake.delayMs).toBeGreaterThanOrEqual(dueAt);
    expect(wake.delayMs).toBeLessThan(dueAt - endedAt + 1_000);
  });

  it("arranges a task due in 40 minutes at the reclaimer run before it falls due (the test's clock)", async () => {
    const { queue, producer, reclaimer } = setup();
    const t0 = Date.UTC(2030, 0, 1, 12, 0, 0);
    vi.useFakeTimers({ toFake: ["Date"], now: t0 });
    expect(
      (await producer.enqueue(queue, [{ id: "d40", type: "job", delayMs: 40 * 60_000 }])).wakeAtMs,
    ).toBeUndefined();
    for (let minute = 0; minute < 39; minute++) {
      vi.setSystemTime(t0 + minute * 60_000 + 500);
      expect((await reclaimer({}, lambdaContext())).wakeAtMs, `run at minute ${minute}`).toBeUndefined();
    }
    expect(wakes()).toEqual([]);
    // The run a minute before it falls due (its next run would be late): a wake-up for its time.
    vi.setSystemTime(t0 + 39 * 60_000 + 500);
    expect((await reclaimer({}, lambdaContext())).wakeAtMs).toBe(t0 + 40 * 60_000);
    expect(wakes()).toEqual([{ sentMs: t0 + 39 * 60_000 + 500, delayMs: 60_000 }]);
    // Arranged once: the next run sends nothing more.
    vi.setSystemTime(t0 + 39 * 60_000 + 30_500);
    expect((await reclaimer({}, lambdaContext())).wakeAtMs).toBeUndefined();
    expect(wakes()).toHaveLength(1);
  });

  it("sends nothing for an idle queue, and wakes a worker for a lease that ends before the next run", async () => {
    const { queue, reclaimer } = setup();
    for (let run = 0; run < 3; run++) await reclaimer({}, lambdaContext());
    expect(wakes()).toEqual([]);
    const now = Date.now();
    await queue.enqueue([{ id: "held", type: "job" }], { now });
    await queue.configure({ defaultPolicy: { leaseMs: 20_000, maxAttempts: 3 } });
    const [held] = await queue.claim({ count: 1, now });
    // The worker holding it stopped (crashed): nothing marks the queue active after WAKE.activeMs.
    vi.useFakeTimers({ toFake: ["Date"], now: now + 6_000 });
    const summary = await reclaimer({}, lambdaContext());
    expect(summary.wakeAtMs).toBe(held.leaseDeadlineMs + 2_000 + 1); // deadline + the default skew
    expect(wakes()).toHaveLength(1);
  });
});

describe("schedules through the functions", () => {
  it("the worker's cold start writes the declared schedules; the reclaimer makes the slots ahead and sends the first slot's wake-up", async () => {
    const { env, queue, reclaimer } = setup();
    const declaration = (every: number) => ({
      types: { sweep: { leaseMs: 10_000, handler: () => {} } },
      schedules: { sweep: { every, type: "sweep" as const } },
    });
    const worker = createWorker({ env, tasks: declaration(20_000), logger: silent("worker") });
    await worker(sqsEvent(sqsRecord({ leaseq: "wake" })), lambdaContext());
    expect(await queue.schedules.list()).toMatchObject([
      { name: "sweep", declared: true, definition: { every: 20_000 } },
    ]);
    sqs.queue.purge();
    const summary = await reclaimer({}, lambdaContext());
    // The slots of the next 70 s: 3 or 4 (every 20 s), the first wake-up for the first of them.
    expect(summary.slotsMade).toBeGreaterThanOrEqual(3);
    expect(summary.slotsMade).toBeLessThanOrEqual(4);
    const first = Math.ceil(Date.now() / 20_000) * 20_000;
    expect(summary.wakeAtMs).toBeGreaterThanOrEqual(first - 20_000);
    expect(summary.wakeAtMs).toBeLessThanOrEqual(first);
    expect(wakes()).toHaveLength(1);
    // A second run plans nothing more until its own horizon moves.
    expect((await reclaimer({}, lambdaContext())).slotsMade).toBeLessThanOrEqual(1);
    // A deploy without the schedule: the next cold start removes it (its tasks made stay).
    await worker.close();
    const next = createWorker({ env, tasks: { types: declaration(20_000).types }, logger: silent("worker") });
    await next(sqsEvent(sqsRecord({ leaseq: "wake" })), lambdaContext());
    expect(await queue.schedules.list()).toEqual([]);
    await next.close();
  });

  it("a stored schedule the planner cannot compute is set aside with why: every other schedule is planned and the run goes on", async () => {
    const { queue, reclaimer } = setup();
    const redis = rawClient();
    onTestFinished(() => {
      redis.disconnect();
    });
    const now = Date.now();
    await queue.schedules.set("good", { every: 20_000, type: "sweep" }, { now });
    await queue.schedules.set("cron", { cron: "0 * * * *", type: "sweep" }, { now });
    await queue.schedules.set("json", { every: 20_000, type: "sweep" }, { now });
    // Written by hand (or by another version): a cron croner refuses, a definition that is not JSON.
    await redis.hset(queue.keys.schedules, "cron", JSON.stringify({ cron: "61 * * * *", type: "sweep" }));
    await redis.hset(queue.keys.schedules, "json", "{oops");
    await queue.enqueue([{ id: "waiting", type: "sweep" }], { now });
    const summary = await reclaimer({}, lambdaContext());
    expect(summary).toMatchObject({ schedulesSetAside: 2, planningFailed: false, ready: 1 });
    expect(summary.slotsMade).toBeGreaterThanOrEqual(3);
    const listed = Object.fromEntries((await queue.schedules.list()).map((info) => [info.name, info]));
    expect(listed.good.aside).toBeUndefined();
    expect(listed.cron.aside).toMatch(/cron "61 \* \* \* \*" is not valid/);
    expect(listed.json.aside).toMatch(/its definition is not JSON: "\{oops"/);
    expect(listed.cron.nextSlotMs).toBeUndefined();
    // leaseq check names both; nothing to repair by itself.
    const problems = await queue.admin.checkAll({ now: Date.now() });
    expect(
      problems
        .filter((problem) => problem.code === "schedule_aside")
        .map((problem) => problem.subject)
        .sort(),
    ).toEqual(["cron", "json"]);
    // The next run does not try them again (no log, no error); a corrected set plans it again.
    expect((await reclaimer({}, lambdaContext())).schedulesSetAside).toBe(0);
    await queue.schedules.set("cron", { cron: "*/20 * * * * *", type: "sweep" }, { now: Date.now() });
    expect((await queue.schedules.list()).find((info) => info.name === "cron")?.aside).toBeUndefined();
    expect((await reclaimer({}, lambdaContext())).slotsMade).toBeGreaterThanOrEqual(3);
  });
});
