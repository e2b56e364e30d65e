// `npm run bench -- --mixed`: long and short work together through the local stack, as a
// multi-tenant ETL service runs it. 50 tenants × 5 ordered imports of 2-12 s (minutes, scaled down)
// enqueued through the library, a steady stream of short pings with a 1 s deadline sent through SQS,
// 4 worker invocations (the wake queue's maximum concurrency) of concurrency 10 (9 for imports, one
// slot kept for the short tasks), each in a process of its own (Lambda's execution environments).
// Then a crash: 30 tenants' one 10 s import each, and the worker running the most of them SIGKILLed
// 3 s in. Read after the fact from the handlers' own notes and the functions' logs: the makespan against the
// ideal, the pings' start latency, tenants never running two imports at once, how soon the killed
// imports ran again and the attempts charged, and the worker invocations the wake-ups started.
// Last, a stuck tenant: its one import runs 75 s while its next ones wait parked behind it, and the
// reclaimer's next scheduled run (every 60 s, as on AWS) reports them in oldestWaitingAgeMs, the
// metric the oldest-waiting alarm watches, while the ready set's head (oldestReadyAgeMs) shows none.
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { startStack } from "../../dev/stack.js";
import { createProducer } from "../../functions/producer.js";
import { functionSqsClient } from "../../functions/wake.js";
import { Queue } from "../../shared/queue.js";
import { UpstashStore } from "../../shared/stores/upstash.js";
import type { Target } from "../report.js";
import { round } from "../stats.js";
import { MIXED_HEARTBEAT_MS, mixedTasks } from "./tasks.js";

const TENANTS = 50;
const IMPORTS_PER_TENANT = 5;
const WORKERS = 4;
const CONCURRENCY = 10;
const LINGER_MS = 300;
const PING_EVERY_MS = 200;
/** The crash phase: this many tenants' one long import each, the kill this long after their enqueue. */
const CRASH_TENANTS = 30;
const CRASH_WORK_MS = 10_000;
const KILL_AFTER_MS = 3_000;
/** The stuck tenant's import, and the reclaimer's period (the local stack's timer, as EventBridge's). */
const STUCK_WORK_MS = 75_000;
const RECLAIM_PERIOD_MS = 60_000;

export interface MixedResult {
  tenants: number;
  importsPerTenant: number;
  workers: number;
  concurrency: number;
  heartbeatMs: number;
  lingerMs: number;
  /** From the first enqueue to the last import done. */
  makespanMs: number;
  /** The larger of the total work ÷ the slots and the longest tenant's chain. */
  idealMs: number;
  makespanRatio: number;
  short: { pings: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** Tenants that had two imports running at once; imports that ran out of their tenant's order. */
  overlaps: number;
  outOfOrder: number;
  crash: {
    /** The long imports of the crash phase. */
    longImports: number;
    /** Imports the killed invocation was running. */
    killedRunning: number;
    /** From the kill to each one's next start: the longest, and every one. */
    rerunMaxMs: number;
    rerunMs: number[];
    /** heartbeatMs + 2 s: the bound. */
    boundMs: number;
    /** Tasks charged more attempts than the handler starts they had. */
    chargedNeverStarted: number;
  };
  /** The stuck tenant: when it got stuck, and the first reclaimer run after that. */
  stuck: {
    periodMs: number;
    /** From its imports' enqueue to the first reclaimer run that reported them waiting. */
    reportedAfterMs: number;
    /** That run's figures: the oldest waiting (parked included) and the ready set's head. */
    oldestWaitingAgeMs: number;
    oldestReadyAgeMs: number;
    /** Its tasks parked when that run read the queue. */
    parked: number;
  };
  invocations: {
    wakeStarted: number;
    emptyWakeStarted: number;
    emptyRatio: number;
    drain: number;
    longestEmptyChain: number;
    /** Wake-up times arranged by more than one call (each should be arranged once). */
    wakeTimesArrangedTwice: number;
    wakeUpsSent: number;
    /** Wake-ups running workers took from the wake queue for a free slot. */
    wakeUpsTaken: number;
  };
}

type Event =
  | { kind: "start"; id: string; group: string; attempt: number; at: number; pid: number }
  | { kind: "end"; id: string; at: number; pid: number }
  | { kind: "ping"; id: string; sentAt: number; at: number; pid: number };

/** A small seeded generator (mulberry32): the same workload every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (sorted: number[], q: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

export async function runMixed(redisUrl: string, log: (line: string) => void): Promise<MixedResult> {
  const name = `mixed-${process.pid}`;
  const eventsKey = `bench:{${name}}:events`;
  const events = new Redis(redisUrl);
  await events.del(eventsKey);
  // What the worker processes and the in-process functions read: their events, the linger.
  Object.assign(process.env, {
    REDIS_URL: redisUrl,
    MIXED_EVENTS_URL: redisUrl,
    MIXED_EVENTS_KEY: eventsKey,
    LEASEQ_LINGER_MS: String(LINGER_MS),
  });
  // The in-process functions' log lines (the intake's, the reclaimer's) are read, not printed.
  const logLines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    if (text.startsWith('{"level"')) {
      logLines.push(...text.split("\n").filter(Boolean));
      return true;
    }
    return write(chunk, ...(rest as []));
  }) as typeof process.stdout.write;

  const stack = await startStack({
    queue: name,
    tasks: mixedTasks,
    reclaimIntervalMs: RECLAIM_PERIOD_MS,
    workerTimeoutMs: 300_000,
    visibilityTimeoutMs: 30_000,
    maxReceiveCount: 5,
    concurrency: WORKERS,
    logLevel: "INFO",
    workerModule: { path: fileURLToPath(new URL("./worker.ts", import.meta.url)) },
    // Exactly the wake queue's 4 invocations: no drain invocations by the reclaimer (the local
    // stack runs it at its start and a few seconds later, which AWS does not), whose extra workers
    // would add slots to the 40 the ideal counts.
    maxDrainInvocations: 0,
    sqsPort: 0,
  });
  const environments = stack.environments;
  if (!environments) throw new Error("mixed: the stack runs no worker environments");
  const client = functionSqsClient(stack.sqs.endpoint);
  const store = new UpstashStore({ url: stack.endpoint.url, token: stack.endpoint.token });
  const queue = new Queue(store, { name });
  const producer = createProducer({ queueUrl: stack.sqs.queueUrl, wakeQueueUrl: stack.wake.queueUrl, client });
  const arranged: Array<number | string> = [];
  try {
    // Warm environments, as Lambda keeps them after a burst: one more than the concurrency, so the
    // run after the kill starts warm.
    await environments.warm(WORKERS + 1);
    stack.run();
    const read = async () => (await events.lrange(eventsKey, 0, -1)).map((text) => JSON.parse(text) as Event);
    const endsOf = (all: Event[]) => new Set(all.filter((event) => event.kind === "end").map((event) => event.id));
    /** Waits until every one of `ids` ended (its last run), at most 5 minutes; the events by then. */
    const untilDone = async (ids: string[]) => {
      const deadline = Date.now() + 300_000;
      for (;;) {
        const all = await read();
        const ended = endsOf(all);
        if (ids.every((id) => ended.has(id)) || Date.now() > deadline) return all;
        await sleep(250);
      }
    };

    // 1. The mixed run: every import enqueued at once (in rounds, each tenant's in order), pings
    // sent through SQS all along.
    const random = seeded(33);
    const work = new Map<string, number>();
    const tenants = Array.from({ length: TENANTS }, (_, i) => `tenant-${String(i).padStart(2, "0")}`);
    const startedAt = Date.now();
    for (let n = 0; n < IMPORTS_PER_TENANT; n++) {
      const tasks = tenants.map((tenant) => {
        const workMs = 2_000 + Math.round(random() * 10_000);
        const id = `${tenant}-import-${n}`;
        work.set(id, workMs);
        return { id, type: "import", group: tenant, payload: { workMs } };
      });
      const { wakeAtMs } = await producer.enqueue(queue, tasks);
      if (wakeAtMs !== undefined) arranged.push(wakeAtMs);
    }
    log(`  ${work.size} imports enqueued for ${TENANTS} tenants; pings every ${PING_EVERY_MS} ms`);
    let pinging = true;
    const pings = (async () => {
      while (pinging) {
        await producer.send([{ type: "ping", priority: -1, payload: { sentAt: Date.now() } }]);
        await sleep(PING_EVERY_MS);
      }
    })();
    let all = await untilDone([...work.keys()]);
    const finishedAt = Math.max(...all.filter((event) => event.kind === "end").map((event) => event.at));
    pinging = false;
    await pings;
    log(`  the imports ran in ${finishedAt - startedAt} ms`);

    // 2. The crash: long imports of tenants of their own, and the worker running the most of them
    // SIGKILLed while they run.
    const crashWork = new Map<string, number>();
    const crashTenants = tenants.slice(0, CRASH_TENANTS).map((tenant) => `crash-${tenant}`);
    for (const tenant of crashTenants) crashWork.set(`${tenant}-import-0`, CRASH_WORK_MS);
    await producer.enqueue(
      queue,
      crashTenants.map((tenant) => ({
        id: `${tenant}-import-0`,
        type: "import",
        group: tenant,
        payload: { workMs: CRASH_WORK_MS },
      })),
    );
    await sleep(KILL_AFTER_MS);
    const before = await read();
    const ended = endsOf(before);
    const runningBy = new Map<number, string[]>();
    for (const event of before) {
      if (event.kind !== "start" || ended.has(event.id) || !crashWork.has(event.id)) continue;
      runningBy.set(event.pid, [...(runningBy.get(event.pid) ?? []), event.id]);
    }
    const [victimPid, killedRunning] = [...runningBy].sort((a, b) => b[1].length - a[1].length)[0] ?? [0, []];
    const victim = environments.list().find((environment) => environment.pid === victimPid);
    const killedAt = Date.now();
    if (victim) environments.kill(victim.id);
    log(`  killed the worker running ${killedRunning.length} of ${crashWork.size} long imports (pid ${victimPid})`);
    all = await untilDone([...crashWork.keys()]);

    // 3. A stuck tenant: its first import runs STUCK_WORK_MS, its next three wait parked behind it.
    const stuckAt = Date.now();
    await producer.enqueue(
      queue,
      [STUCK_WORK_MS, 1_000, 1_000, 1_000].map((workMs, n) => ({
        id: `stuck-import-${n}`,
        type: "import",
        group: "stuck",
        payload: { workMs },
      })),
    );
    log(
      `  a stuck tenant: its import runs ${STUCK_WORK_MS} ms, 3 more wait behind it; waiting for the reclaimer's next run`,
    );
    const runAfter = async () => {
      const deadline = Date.now() + RECLAIM_PERIOD_MS + 30_000;
      for (;;) {
        const run = logLines
          .map((text) => JSON.parse(text) as Record<string, unknown>)
          .find((line) => line.message === "reclaimer run" && Date.parse(String(line.timestamp)) > stuckAt + 1_000);
        if (run || Date.now() > deadline) return run;
        await sleep(250);
      }
    };
    const reported = await runAfter();
    if (!reported) throw new Error("mixed: no reclaimer run within a period of the stuck tenant");
    const stuckParked = (await queue.admin.groups({ count: 1000 })).groups.find((group) => group.group === "stuck");
    await sleep(1_000); // the last invocations log
    await stack.stopWork();

    // The makespan against the ideal.
    const totalWork = [...work.values()].reduce((a, b) => a + b, 0);
    const chain = Math.max(
      ...tenants.map((tenant) =>
        [...work].filter(([id]) => id.startsWith(`${tenant}-`)).reduce((sum, [, ms]) => sum + ms, 0),
      ),
    );
    const idealMs = Math.max(totalWork / (WORKERS * CONCURRENCY), chain);
    const makespanMs = finishedAt - startedAt;

    // Runs per import: a start, and its end or the kill.
    const starts = all.filter((event): event is Extract<Event, { kind: "start" }> => event.kind === "start");
    const ends = new Map<string, number[]>();
    for (const event of all) if (event.kind === "end") ends.set(event.id, [...(ends.get(event.id) ?? []), event.at]);
    const runs = starts.map((start) => {
      const end = (ends.get(start.id) ?? []).find((at) => at >= start.at);
      const cut =
        start.pid === victimPid && killedRunning.includes(start.id) && start.at <= killedAt ? killedAt : undefined;
      return { ...start, end: cut ?? end ?? Number.POSITIVE_INFINITY };
    });
    let overlaps = 0;
    let outOfOrder = 0;
    for (const tenant of [...tenants, ...crashTenants]) {
      const mine = runs.filter((run) => run.group === tenant).sort((a, b) => a.at - b.at);
      for (let i = 1; i < mine.length; i++) if (mine[i].at < mine[i - 1].end) overlaps++;
      // Each import's last run starts after the previous import's last run ended.
      const last = new Map<string, number>();
      for (const run of mine) last.set(run.id, run.at);
      for (let n = 1; n < IMPORTS_PER_TENANT; n++) {
        const previous = last.get(`${tenant}-import-${n - 1}`);
        const next = last.get(`${tenant}-import-${n}`);
        if (previous !== undefined && next !== undefined && next < previous) outOfOrder++;
      }
    }

    // The pings sent while imports ran: from their send to their start.
    const pingDelays = all
      .filter((event): event is Extract<Event, { kind: "ping" }> => event.kind === "ping")
      .filter((event) => event.sentAt <= finishedAt)
      .map((event) => event.at - event.sentAt)
      .sort((a, b) => a - b);

    // The killed imports: from the kill to their next start; attempts against handler starts.
    const rerunMs = killedRunning.map((id) => {
      const next = starts.find((start) => start.id === id && start.at > killedAt);
      return next ? next.at - killedAt : Number.POSITIVE_INFINITY;
    });
    let chargedNeverStarted = 0;
    for (const id of [...work.keys(), ...crashWork.keys()]) {
      const info = await queue.admin.inspect(id);
      const started = starts.filter((start) => start.id === id).length;
      if ((info?.attempts ?? 0) > started) chargedNeverStarted++;
    }

    // The worker invocations, from their log lines (the killed one wrote none).
    const lines = environments.all
      .flatMap((environment) => environment.stdout)
      .map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          return undefined;
        }
      })
      .filter((line): line is Record<string, unknown> => line?.message === "worker invocation")
      .sort((a, b) => String(a.timestamp).localeCompare(String(b.timestamp)));
    const wakeStarted = lines.filter((line) => line.trigger === "sqs" && Number(line.records) > 0);
    const empty = (line: Record<string, unknown>) => Number(line.claimed) === 0;
    let emptyChain = 0;
    let longestEmptyChain = 0;
    for (const line of wakeStarted) {
      emptyChain = empty(line) ? emptyChain + 1 : 0;
      longestEmptyChain = Math.max(longestEmptyChain, emptyChain);
    }
    for (const line of lines) {
      arranged.push(...((line.wakeUps as number[] | undefined) ?? []));
      // A wake-up for tasks left for want of room is an arrangement of its own kind (lua/lib/wake-ups.lua).
      arranged.push(...((line.roomWakeUps as number[] | undefined) ?? []).map((at) => `${at}+`));
    }
    for (const text of logLines) {
      const line = JSON.parse(text) as Record<string, unknown>;
      if (line.message === "intake invocation" && typeof line.wakeAtMs === "number") arranged.push(line.wakeAtMs);
      if (line.message === "reclaimer run" && typeof line.wakeAtMs === "number") arranged.push(line.wakeAtMs);
    }
    const times = new Map<number | string, number>();
    for (const at of arranged) times.set(at, (times.get(at) ?? 0) + 1);

    return {
      tenants: TENANTS,
      importsPerTenant: IMPORTS_PER_TENANT,
      workers: WORKERS,
      concurrency: CONCURRENCY,
      heartbeatMs: MIXED_HEARTBEAT_MS,
      lingerMs: LINGER_MS,
      makespanMs,
      idealMs: round(idealMs),
      makespanRatio: round(makespanMs / idealMs, 3),
      short: {
        pings: pingDelays.length,
        p50Ms: quantile(pingDelays, 0.5),
        p99Ms: quantile(pingDelays, 0.99),
        maxMs: pingDelays.at(-1) ?? 0,
      },
      overlaps,
      outOfOrder,
      crash: {
        longImports: crashWork.size,
        killedRunning: killedRunning.length,
        rerunMaxMs: Math.max(0, ...rerunMs),
        rerunMs,
        boundMs: MIXED_HEARTBEAT_MS + 2_000,
        chargedNeverStarted,
      },
      stuck: {
        periodMs: RECLAIM_PERIOD_MS,
        reportedAfterMs: Date.parse(String(reported.timestamp)) - stuckAt,
        oldestWaitingAgeMs: Number(reported.oldestWaitingAgeMs),
        oldestReadyAgeMs: Number(reported.oldestReadyAgeMs),
        parked: stuckParked?.parked ?? 0,
      },
      invocations: {
        wakeStarted: wakeStarted.length,
        emptyWakeStarted: wakeStarted.filter(empty).length,
        emptyRatio: round(wakeStarted.filter(empty).length / Math.max(1, wakeStarted.length), 3),
        drain: lines.filter((line) => line.trigger === "drain").length,
        longestEmptyChain,
        wakeTimesArrangedTwice: [...times.values()].filter((n) => n > 1).length,
        wakeUpsSent: arranged.length,
        wakeUpsTaken: lines.reduce((sum, line) => sum + Number(line.wakeUpsTaken ?? 0), 0),
      },
    };
  } finally {
    process.stdout.write = write;
    client.destroy();
    await store.close();
    await queue.admin.drop({ confirm: name }).catch(() => {});
    await events.del(eventsKey);
    events.disconnect();
    await stack.close();
  }
}

/** The figures as the bench prints them. */
export function renderMixed(result: MixedResult): string {
  const { short, crash, invocations } = result;
  return [
    `mixed: ${result.tenants} tenants × ${result.importsPerTenant} ordered imports (2-12 s) and pings every ${PING_EVERY_MS} ms; ${result.workers} worker invocations × concurrency ${result.concurrency}; heartbeat ${result.heartbeatMs} ms, linger ${result.lingerMs} ms`,
    `  makespan ${result.makespanMs} ms, ideal ${result.idealMs} ms: ${result.makespanRatio}× (target ≤ 1.15×)`,
    `  pings' start after their send while imports ran: p50 ${short.p50Ms} ms, p99 ${short.p99Ms} ms, max ${short.maxMs} ms (${short.pings} pings; target p99 ≤ 1000 ms)`,
    `  tenants with two imports running at once: ${result.overlaps}; imports out of their tenant's order: ${result.outOfOrder}`,
    `  crash: SIGKILL of the worker running ${crash.killedRunning} of ${crash.longImports} long imports: each ran again within ${crash.rerunMaxMs} ms (bound ${crash.boundMs} ms: heartbeat + 2 s); tasks charged an attempt they never started: ${crash.chargedNeverStarted}`,
    `  stuck tenant: the reclaimer's first run after it (${result.stuck.reportedAfterMs} ms later; period ${result.stuck.periodMs} ms) reported oldestWaitingAgeMs ${result.stuck.oldestWaitingAgeMs} ms (its ${result.stuck.parked} parked imports), oldestReadyAgeMs ${result.stuck.oldestReadyAgeMs} ms`,
    `  wake-started worker invocations: ${invocations.wakeStarted}, empty ${invocations.emptyWakeStarted} (${round(invocations.emptyRatio * 100)}%; target ≤ 25%), longest run of empty ones ${invocations.longestEmptyChain} (target ≤ 3); drain invocations ${invocations.drain}; wake-up times arranged twice: ${invocations.wakeTimesArrangedTwice} of ${invocations.wakeUpsSent} sent; wake-ups taken by a free slot of a running worker: ${invocations.wakeUpsTaken}`,
  ].join("\n");
}

/** The mixed run's targets against the figures, as results.json records them. */
export function mixedTargets(result: MixedResult): Target[] {
  const { short, crash, invocations } = result;
  return [
    {
      name: "makespan against the ideal (total work ÷ slots, or the longest tenant's chain)",
      target: "≤ 1.15×",
      measured: `${result.makespanRatio}× (${result.makespanMs} ms, ideal ${result.idealMs} ms)`,
      met: result.makespanRatio <= 1.15,
    },
    {
      name: "short tasks' start after their send while the long ones run, p99",
      target: "≤ 1,000 ms",
      measured: `${short.p99Ms} ms`,
      met: short.p99Ms <= 1_000,
    },
    {
      name: "tenants with two imports running at once; imports out of order",
      target: "0",
      measured: `${result.overlaps}; ${result.outOfOrder}`,
      met: result.overlaps === 0 && result.outOfOrder === 0,
    },
    {
      name: "a SIGKILLed worker's imports run again within",
      target: `≤ ${crash.boundMs} ms (heartbeat + 2 s)`,
      measured: `${crash.rerunMaxMs} ms (${crash.killedRunning} imports)`,
      met: crash.killedRunning > 0 && crash.rerunMaxMs <= crash.boundMs,
    },
    {
      name: "attempts charged to tasks that never started",
      target: "0",
      measured: String(crash.chargedNeverStarted),
      met: crash.chargedNeverStarted === 0,
    },
    {
      name: "a stuck tenant's parked tasks in the reclaimer's next run (oldestWaitingAgeMs, what the alarm watches)",
      target: "reported within one reclaimer period, the ready set's head not showing them",
      measured: `${result.stuck.oldestWaitingAgeMs} ms waiting at ${result.stuck.reportedAfterMs} ms (period ${result.stuck.periodMs} ms); oldestReadyAgeMs ${result.stuck.oldestReadyAgeMs} ms`,
      met:
        result.stuck.reportedAfterMs <= result.stuck.periodMs &&
        result.stuck.oldestWaitingAgeMs >= result.stuck.reportedAfterMs - 1_000 &&
        result.stuck.oldestReadyAgeMs < result.stuck.oldestWaitingAgeMs,
    },
    {
      name: "empty wake-started worker invocations",
      target: "≤ 25%",
      measured: `${invocations.emptyWakeStarted} of ${invocations.wakeStarted} (${round(invocations.emptyRatio * 100)}%)`,
      met: invocations.emptyRatio <= 0.25,
    },
    {
      name: `longest run of empty wake-started invocations (linger ${result.lingerMs} ms)`,
      target: "≤ 3",
      measured: String(invocations.longestEmptyChain),
      met: invocations.longestEmptyChain <= 3,
    },
    {
      name: "wake-up times arranged twice",
      target: "0",
      measured: `${invocations.wakeTimesArrangedTwice} of ${invocations.wakeUpsSent}`,
      met: invocations.wakeTimesArrangedTwice === 0,
    },
  ];
}
