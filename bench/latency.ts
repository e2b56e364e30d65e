// Enqueue-to-start latency over the local stack (docs/wake-ups.md): the SQS stand-in and its event
// source mappings invoking the intake and the worker as Lambda would, the local Upstash endpoint, a
// real redis-server, the reclaimer once a minute as on AWS. Each probe task records when its handler
// started; the figures are that time minus when the task was sent (immediate), or minus when it
// was due (delayed, retry). Wake-ups, not the reclaimer, are what start them on time.
import { SQSClient } from "@aws-sdk/client-sqs";
import { startStack, WORKER_FUNCTION } from "../dev/stack.js";
import { createProducer } from "../functions/producer.js";
import { defineTasks } from "../functions/tasks.js";
import { Queue } from "../shared/queue.js";
import { UpstashStore } from "../shared/stores/upstash.js";
import { type OrderResult, runOrder } from "./order.js";
import { round } from "./stats.js";

export interface LatencySettings {
  /** Probes per immediate case, half on an idle system, half under a steady background load. */
  immediateSamples: number;
  /** Delayed probes per delay (2 s and 20 s). */
  delayedSamples: number;
  retrySamples: number;
  burstTasks: number;
}

export const LATENCY_SETTINGS = {
  quick: { immediateSamples: 20, delayedSamples: 6, retrySamples: 8, burstTasks: 10_000 },
  full: { immediateSamples: 60, delayedSamples: 15, retrySamples: 20, burstTasks: 10_000 },
} as const satisfies Record<string, LatencySettings>;

export interface Percentiles {
  p50: number;
  p99: number;
  samples: number;
}

/** What one task sent through SQS costs, per task: SQS requests and Lambda invocations. */
export interface SqsCost {
  tasks: number;
  tasksPerSend: number;
  sqsRequestsPerTask: number;
  invocationsPerTask: number;
  intakeInvocations: number;
  workerInvocations: number;
}

export interface LatencyResult {
  immediateSqs: Percentiles & { idle: Percentiles; loaded: Percentiles };
  /**
   * Through SQS at priority −10 while 4 workers drain a backlog: send to in Redis, and send to
   * handler start (it passes the whole backlog).
   */
  sqsUnderLoad: { inRedis: Percentiles; started: Percentiles; backlog: number };
  /** Tasks sent through SQS: one per send (an API handler), and 100 per send. */
  sqsCost: SqsCost[];
  /** Order per group from the producer's send, FIFO and standard task queue. */
  order: OrderResult;
  immediateLibrary: Percentiles & { idle: Percentiles; loaded: Percentiles };
  delayed: Percentiles & { at2s: Percentiles; at20s: Percentiles };
  retry: Percentiles;
  sqsRequestsPerTask: number;
  burst: { tasks: number; wakeUpMessages: number; drainedInMs: number };
  /** Wake-ups the producer, the worker and the reclaimer sent over the whole run. */
  wakeUps: number;
  reclaimerRuns: number;
}

function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
  return { p50: round(at(0.5)), p99: round(at(0.99)), samples: sorted.length };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves when `ready()` holds, checking every 10 ms, or rejects after `timeoutMs`. */
async function until(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`latency: ${what} did not happen within ${timeoutMs} ms`);
    await sleep(10);
  }
}

export async function runLatency(
  settings: LatencySettings,
  redisUrl: string,
  log: (line: string) => void,
): Promise<LatencyResult> {
  const latency = await runStackLatency(settings, redisUrl, log);
  return { ...latency, order: await runOrder(redisUrl, log) };
}

async function runStackLatency(
  settings: LatencySettings,
  redisUrl: string,
  log: (line: string) => void,
): Promise<Omit<LatencyResult, "order">> {
  /** Handler starts, by task id: ms, and the attempt. */
  const started = new Map<string, number>();
  const retried = new Map<string, number>();
  const tasks = defineTasks({
    types: {
      probe: { leaseMs: 10_000, handler: (task) => void started.set(task.id, Date.now()) },
      load: { leaseMs: 10_000, handler: () => {} },
      // A backlog that keeps every worker busy: 20 ms a task.
      busy: { leaseMs: 10_000, handler: () => sleep(20) },
      // Fails its first run; the second run's start, past the retry time, is the retry lateness.
      retry: {
        leaseMs: 10_000,
        maxAttempts: 2,
        backoff: { baseMs: 8_000, maxMs: 8_000 },
        handler: (task) => {
          if (task.attempt === 1) throw new Error("once more");
          retried.set(task.id, Date.now());
        },
      },
    },
  });
  const previousRedis = process.env.REDIS_URL;
  process.env.REDIS_URL = redisUrl;
  const name = `latency-${process.pid}`;
  const stack = await startStack({
    queue: name,
    tasks,
    reclaimIntervalMs: 60_000,
    workerTimeoutMs: 60_000,
    visibilityTimeoutMs: 90_000,
    maxReceiveCount: 5,
    concurrency: 4,
    logLevel: "SILENT",
  });
  const sqs = new SQSClient({
    endpoint: stack.sqs.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const store = new UpstashStore({ url: stack.endpoint.url, token: stack.endpoint.token });
  const library = new Queue(store, { name });
  const producer = createProducer({ queueUrl: stack.sqs.queueUrl, client: sqs });
  const wakeUps = () => stack.wake.queue.totals.sent;
  let counter = 0;
  const id = (kind: string) => `${kind}-${++counter}`;
  try {
    stack.run();

    // A steady background load through SQS (about 250 tasks/s) while `work` runs.
    const underLoad = async <T>(work: () => Promise<T>): Promise<T> => {
      let running = true;
      const load = (async () => {
        while (running) {
          await producer.send(Array.from({ length: 10 }, () => ({ id: id("load"), type: "load" })));
          await sleep(40);
        }
      })();
      try {
        return await work();
      } finally {
        running = false;
        await load;
      }
    };

    const immediate = async (send: (taskId: string) => Promise<unknown>, samples: number) => {
      const values: number[] = [];
      for (let i = 0; i < samples; i++) {
        const taskId = id("probe");
        const sentAt = Date.now();
        await send(taskId);
        await until(() => started.has(taskId), 30_000, `probe ${taskId}`);
        values.push((started.get(taskId) ?? 0) - sentAt);
        // Idle between probes: the worker stops at its empty claim (nothing due within its linger).
        await sleep(150 + Math.random() * 150);
      }
      return values;
    };
    const viaSqs = (taskId: string) => producer.send([{ id: taskId, type: "probe" }]);
    const viaLibrary = (taskId: string) => producer.enqueue(library, [{ id: taskId, type: "probe" }]);
    const half = Math.ceil(settings.immediateSamples / 2);

    log("  immediate, through SQS and through the library (idle, then under load)");
    const sqsIdle = await immediate(viaSqs, half);
    const libraryIdle = await immediate(viaLibrary, half);
    const sqsLoaded = await underLoad(() => immediate(viaSqs, half));
    const libraryLoaded = await underLoad(() => immediate(viaLibrary, half));

    log("  through SQS at priority -10 while 4 workers drain a backlog");
    // 4 workers run 200 of these a second: enough for every probe to meet a backlog.
    const backlog = 12_000;
    for (let start = 0; start < backlog; start += 1_000) {
      const batch = Array.from({ length: Math.min(1_000, backlog - start) }, () => ({ id: id("busy"), type: "busy" }));
      await library.enqueue(batch, { now: Date.now() });
    }
    for (let w = 0; w < 4; w++) stack.wake.send('{"leaseq":"wake"}');
    const inRedis: number[] = [];
    const startedAfter: number[] = [];
    for (let i = 0; i < half; i++) {
      const taskId = id("probe");
      const sentAt = Date.now();
      await producer.send([{ id: taskId, type: "probe", priority: -10 }]);
      await until(() => started.has(taskId), 30_000, `probe ${taskId} under a backlog`);
      startedAfter.push((started.get(taskId) ?? 0) - sentAt);
      inRedis.push(((await library.admin.inspect(taskId))?.enqueuedAtMs ?? Number.NaN) - sentAt);
      await sleep(100 + Math.random() * 100);
    }
    const left = (await library.stats({ now: Date.now() })).ready;
    log(`    ${half} probes; ${left} of the ${backlog} backlog tasks still ready at the end`);
    // Only backlog tasks are still ready: purge them.
    while ((await library.admin.purge("ready")) > 0) {}
    await until(() => stack.wake.stats().inFlight === 0, 60_000, "the workers to stop");

    log("  what tasks sent through SQS cost: one per send, and 100 per send");
    const cost = async (total: number, perSend: number): Promise<SqsCost> => {
      await sleep(6_000); // every worker stopped lingering
      const intakeBefore = stack.sqs.stats().invocations;
      const workerBefore = stack.wake.stats().invocations;
      const drainBefore = stack.lambdaApi.invocations()[WORKER_FUNCTION] ?? 0;
      const wakeBefore = wakeUps();
      const ids: string[] = [];
      let sends = 0;
      for (let start = 0; start < total; start += perSend) {
        const batch = Array.from({ length: perSend }, () => ({ id: id("cost"), type: "probe" }));
        ids.push(...batch.map((task) => task.id));
        sends += (await producer.send(batch)).messages > 0 ? 1 : 0;
      }
      await until(() => ids.every((taskId) => started.has(taskId)), 120_000, "the cost probes");
      const intakeInvocations = stack.sqs.stats().invocations - intakeBefore;
      const workerInvocations =
        stack.wake.stats().invocations -
        workerBefore +
        (stack.lambdaApi.invocations()[WORKER_FUNCTION] ?? 0) -
        drainBefore;
      // Per send one SendMessageBatch; per intake batch the event source's receive and delete
      // batch; per wake-up a send, a receive and a delete (one wake-up per worker batch).
      const requests = sends + 2 * intakeInvocations + 3 * (wakeUps() - wakeBefore);
      return {
        tasks: total,
        tasksPerSend: perSend,
        sqsRequestsPerTask: round(requests / total),
        invocationsPerTask: round((intakeInvocations + workerInvocations) / total),
        intakeInvocations,
        workerInvocations,
      };
    };
    const sqsCost = [await cost(200, 1), await cost(2_000, 100)];

    log("  delayed 2 s and 20 s, through the library");
    const delayed = async (delayMs: number) => {
      const due = new Map<string, number>();
      await Promise.all(
        Array.from({ length: settings.delayedSamples }, async (_, i) => {
          await sleep(i * 700 + Math.random() * 300);
          const taskId = id(`delay${delayMs}`);
          const now = Date.now();
          due.set(taskId, now + delayMs);
          await producer.enqueue(library, [{ id: taskId, type: "probe", delayMs }], { now });
        }),
      );
      await until(() => [...due.keys()].every((taskId) => started.has(taskId)), delayMs + 60_000, "delayed probes");
      return [...due].map(([taskId, at]) => (started.get(taskId) ?? 0) - at);
    };
    const [at2s, at20s] = await Promise.all([delayed(2_000), delayed(20_000)]);

    log("  retries after a backoff of 4-8 s");
    const retryIds = Array.from({ length: settings.retrySamples }, () => id("retry"));
    const retryDue = new Map<string, number>();
    // The retry time is the task's due time while it is SCHEDULED: read it then.
    let watching = true;
    const watch = (async () => {
      while (watching) {
        for (const taskId of retryIds) {
          if (retryDue.has(taskId) || retried.has(taskId)) continue;
          const task = await library.admin.inspect(taskId);
          if (task?.state === "scheduled") retryDue.set(taskId, task.dueAt ?? 0);
        }
        await sleep(20);
      }
    })();
    for (const [i, taskId] of retryIds.entries()) {
      await producer.enqueue(library, [{ id: taskId, type: "retry" }]);
      await sleep(300 + (i % 3) * 400);
    }
    await until(() => retryIds.every((taskId) => retried.has(taskId)), 60_000, "retried probes");
    watching = false;
    await watch;
    const retryLateness = retryIds
      .filter((taskId) => retryDue.has(taskId))
      .map((taskId) => (retried.get(taskId) ?? 0) - (retryDue.get(taskId) ?? 0));

    log(`  a burst of ${settings.burstTasks} tasks through the library, 100 per call`);
    const before = wakeUps();
    const burstStart = Date.now();
    const burstIds: string[] = [];
    for (let start = 0; start < settings.burstTasks; start += 100) {
      const batch = Array.from({ length: Math.min(100, settings.burstTasks - start) }, () => {
        const taskId = id("burst");
        burstIds.push(taskId);
        return { id: taskId, type: "probe" };
      });
      await producer.enqueue(library, batch);
    }
    await until(() => burstIds.every((taskId) => started.has(taskId)), 120_000, "the burst");
    const burstMessages = wakeUps() - before;

    return {
      immediateSqs: {
        ...percentiles([...sqsIdle, ...sqsLoaded]),
        idle: percentiles(sqsIdle),
        loaded: percentiles(sqsLoaded),
      },
      immediateLibrary: {
        ...percentiles([...libraryIdle, ...libraryLoaded]),
        idle: percentiles(libraryIdle),
        loaded: percentiles(libraryLoaded),
      },
      sqsUnderLoad: { inRedis: percentiles(inRedis), started: percentiles(startedAfter), backlog },
      sqsCost,
      delayed: { ...percentiles([...at2s, ...at20s]), at2s: percentiles(at2s), at20s: percentiles(at20s) },
      retry: percentiles(retryLateness),
      sqsRequestsPerTask: round(burstMessages / settings.burstTasks),
      burst: { tasks: settings.burstTasks, wakeUpMessages: burstMessages, drainedInMs: Date.now() - burstStart },
      wakeUps: wakeUps(),
      reclaimerRuns: stack.counts.reclaimerRuns,
    };
  } finally {
    await stack.stopWork();
    await library.admin.drop({ confirm: name }).catch(() => 0);
    await store.close();
    sqs.destroy();
    await stack.close();
    if (previousRedis === undefined) delete process.env.REDIS_URL;
    else process.env.REDIS_URL = previousRedis;
  }
}
