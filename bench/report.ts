import type { BacklogResult, LatencyPoint } from "./backlog.js";
import type { BundleResult } from "./bundles.js";
import { type GroupsResult, groupsJson, renderGroups } from "./groups.js";
import type { IdleResult } from "./idle.js";
import type { LatencyResult, Percentiles } from "./latency.js";
import type { MachineInfo } from "./machine.js";
import type { BenchSettings } from "./settings.js";
import { HEADLINE_BATCH, LARGE_PAYLOAD_BYTES } from "./settings.js";
import { round, type Spread, spread } from "./stats.js";
import { bytes, num, table, withSpread } from "./table.js";
import type { ThroughputResult } from "./throughput.js";

export { HEADLINE_BATCH, LARGE_PAYLOAD_BYTES } from "./settings.js";

export interface Measurements {
  settings: BenchSettings;
  machine: MachineInfo;
  loadAverageAtEnd: number[];
  durationSeconds: number;
  throughput: ThroughputResult[];
  upstash: { available: true } | { available: false; reason: string };
  backlog: BacklogResult[];
  idle: { leaseq: IdleResult; bullmq: IdleResult };
  bundles: BundleResult[];
  latency: LatencyResult;
  groups: GroupsResult;
  payloadBytes: number;
}

export interface Target {
  name: string;
  target: string;
  measured: string;
  met: boolean;
}

/** A case of the standard payload. */
function find(results: ThroughputResult[], system: string, batchSize: number, consumers?: number) {
  return results.find(
    (r) =>
      r.system === system &&
      r.batchSize === batchSize &&
      r.payloadBytes === undefined &&
      (consumers === undefined || r.consumers === consumers),
  );
}

/** A system's headline case with the 64 KiB payload. */
function findLarge(results: ThroughputResult[], system: "leaseq" | "naive" = "leaseq") {
  return results.find((r) => r.system === system && r.payloadBytes === LARGE_PAYLOAD_BYTES);
}

/** The Redis CPU per task of leaseq at the headline batch over another case's, per round. */
function cpuRatio(m: Measurements, other: ThroughputResult | undefined): Spread | undefined {
  return pairedRatio(find(m.throughput, "leaseq", HEADLINE_BATCH)?.redisCpuUsPerTask, other?.redisCpuUsPerTask);
}

/** Bytes per waiting task of leaseq 0.1.0 (storage format v0), measured by this benchmark. */
const V0_BYTES_PER_TASK = 284;

function latencyAt(backlog: BacklogResult | undefined, waiting: number): LatencyPoint | undefined {
  return backlog?.latency.find((point) => point.waiting === waiting);
}

function largest(backlog: BacklogResult | undefined): LatencyPoint | undefined {
  return backlog?.latency.at(-1);
}

function r(value: number | undefined): number | null {
  return value === undefined || Number.isNaN(value) ? null : round(value);
}

/** Throughput of leaseq over that of BullMQ, per round (rounds ran interleaved, so pairs are fair). */
function pairedRatio(a: Spread | undefined, b: Spread | undefined): Spread | undefined {
  if (!a || !b || a.rounds.length !== b.rounds.length) return undefined;
  return spread(a.rounds.map((value, i) => value / b.rounds[i]));
}

export function targets(m: Measurements): Target[] {
  const leaseq = find(m.throughput, "leaseq", HEADLINE_BATCH);
  const bull = find(m.throughput, "bullmq", 1, 50);
  const backlog = m.backlog.find((b) => b.system === "leaseq");
  const ratio = pairedRatio(leaseq?.tasksPerSec, bull?.tasksPerSec);
  const small = latencyAt(backlog, 1_000)?.p99Ms.median ?? Number.NaN;
  const big = largest(backlog);
  const growth = (big?.p99Ms.median ?? Number.NaN) / small;
  const naiveCpu = cpuRatio(m, find(m.throughput, "naive", HEADLINE_BATCH));
  const large = findLarge(m.throughput);
  // The 64 KiB row over the 54-byte row, round by round (inverted: cpuRatio divides leaseq by it).
  const largeCpu = large ? pairedRatio(large.redisCpuUsPerTask, leaseq?.redisCpuUsPerTask) : undefined;
  const naiveLarge = findLarge(m.throughput, "naive");
  const naiveLargeCpu = naiveLarge
    ? pairedRatio(naiveLarge.redisCpuUsPerTask, find(m.throughput, "naive", HEADLINE_BATCH)?.redisCpuUsPerTask)
    : undefined;
  return [
    {
      name: `throughput vs BullMQ (leaseq batch ${HEADLINE_BATCH} / BullMQ concurrency 50)`,
      target: "≥ 8×",
      measured: `${num(ratio?.median)}× (rounds ${num(ratio?.min)}–${num(ratio?.max)})`,
      met: (ratio?.median ?? 0) >= 8,
    },
    {
      name: `Redis CPU per task vs the naive design (batch ${HEADLINE_BATCH}, 4 consumers)`,
      target: "≤ 0.6×",
      measured: `${num(naiveCpu?.median)}× (rounds ${num(naiveCpu?.min)}–${num(naiveCpu?.max)})`,
      met: (naiveCpu?.median ?? Number.POSITIVE_INFINITY) <= 0.6,
    },
    {
      name: `Redis CPU per task, 64 KiB payload / ${m.payloadBytes}-byte payload`,
      target: "≤ 1.3×",
      measured:
        `${num(largeCpu?.median)}× (rounds ${num(largeCpu?.min)}–${num(largeCpu?.max)}); ` +
        `the naive design: ${num(naiveLargeCpu?.median)}×`,
      met: (largeCpu?.median ?? Number.POSITIVE_INFINITY) <= 1.3,
    },
    {
      name: `Redis commands per task (batch ${HEADLINE_BATCH})`,
      target: "≤ 1.0",
      measured: num(leaseq?.commandsPerTask.median),
      met: (leaseq?.commandsPerTask.median ?? Number.POSITIVE_INFINITY) <= 1.0,
    },
    {
      name: "bytes per waiting task (no more than format v0's)",
      target: `≤ ${V0_BYTES_PER_TASK}`,
      measured: num(backlog?.bytesPerTask),
      met: (backlog?.bytesPerTask ?? Number.POSITIVE_INFINITY) <= V0_BYTES_PER_TASK,
    },
    {
      name: `claim p99 at ${num(big?.waiting)} / at 1,000 waiting`,
      target: "≤ 1.5×",
      measured: `${num(growth)}× (${num(big?.p99Ms.median)} ms / ${num(small)} ms)`,
      met: growth <= 1.5,
    },
    {
      name: "idle Redis commands per minute",
      target: "≤ 10",
      measured: num(m.idle.leaseq.commandsPerMinute),
      met: m.idle.leaseq.commandsPerMinute <= 10,
    },
  ];
}

function systemFigures(m: Measurements, system: "leaseq" | "naive" | "bullmq") {
  const headline = system === "bullmq" ? find(m.throughput, system, 1, 50) : find(m.throughput, system, HEADLINE_BATCH);
  const backlog = m.backlog.find((b) => b.system === system);
  const big = largest(backlog);
  const figures: Record<string, unknown> = {
    tasksPerSec: r(headline?.tasksPerSec.median),
    tasksPerSecMin: r(headline?.tasksPerSec.min),
    tasksPerSecMax: r(headline?.tasksPerSec.max),
    commandsPerTask: r(headline?.commandsPerTask.median),
    redisCpuUsPerTask: r(headline?.redisCpuUsPerTask.median),
    clientCpuUsPerTask: r(headline?.clientCpuUsPerTask.median),
    bytesPerTask: r(backlog?.bytesPerTask),
    claimP50MsAt1k: r(latencyAt(backlog, 1_000)?.p50Ms.median),
    claimP99MsAt1k: r(latencyAt(backlog, 1_000)?.p99Ms.median),
    claimP50MsAt100k: r(latencyAt(backlog, 100_000)?.p50Ms.median),
    claimP99MsAt100k: r(latencyAt(backlog, 100_000)?.p99Ms.median),
    // In quick mode the largest level is below a million: the figure is kept, and says so.
    claimP50MsAt1M: r(big?.p50Ms.median),
    claimP99MsAt1M: r(big?.p99Ms.median),
    claimAt1MActualWaiting: big?.waiting ?? null,
    bytesPerTaskByKey: Object.fromEntries(Object.entries(backlog?.bytesPerTaskByKey ?? {}).map(([k, v]) => [k, r(v)])),
    idleCommandsPerMinute: system === "naive" ? null : r(m.idle[system].commandsPerMinute),
  };
  if (system === "leaseq") {
    const large = findLarge(m.throughput);
    figures.redisCpuRatioVsNaive = r(cpuRatio(m, find(m.throughput, "naive", HEADLINE_BATCH))?.median);
    figures.redisCpuUsPerTask64k = r(large?.redisCpuUsPerTask.median);
    figures.redisCpuRatio64k = r(
      large && headline ? pairedRatio(large.redisCpuUsPerTask, headline.redisCpuUsPerTask)?.median : undefined,
    );
  }
  if (system === "naive") {
    const large = findLarge(m.throughput, "naive");
    figures.redisCpuUsPerTask64k = r(large?.redisCpuUsPerTask.median);
    figures.redisCpuRatio64k = r(
      large && headline ? pairedRatio(large.redisCpuUsPerTask, headline.redisCpuUsPerTask)?.median : undefined,
    );
  }
  if (system === "bullmq") {
    figures.tasksPerSecConcurrency1 = r(find(m.throughput, system, 1, 1)?.tasksPerSec.median);
    figures.note =
      "throughput at worker concurrency 50 (no batch claim in BullMQ); its 'claim of 20' is 20 consecutive " +
      "job fetches (moveToActive); defaults otherwise (completed jobs kept, events stream on)";
  } else {
    figures.byBatchSize = Object.fromEntries(
      m.settings.batchSizes.map((size) => {
        const result = find(m.throughput, system, size);
        return [
          size,
          { tasksPerSec: r(result?.tasksPerSec.median), commandsPerTask: r(result?.commandsPerTask.median) },
        ];
      }),
    );
  }
  if (system === "naive")
    figures.note = "no reclaimer exists in that design: idle cost not applicable (and lost tasks stay lost)";
  return figures;
}

/** The figures for bench/results.json: the headline shape, then everything measured. */
export function resultsJson(m: Measurements): Record<string, unknown> {
  const upstash = m.settings.batchSizes.map((size) => find(m.throughput, "leaseq-upstash", size));
  const bull = find(m.throughput, "bullmq", 1, 50);
  return {
    leaseq: systemFigures(m, "leaseq"),
    leaseqUpstash: m.upstash.available
      ? {
          tasksPerSec: r(upstash[m.settings.batchSizes.indexOf(HEADLINE_BATCH)]?.tasksPerSec.median),
          commandsPerTask: r(upstash[m.settings.batchSizes.indexOf(HEADLINE_BATCH)]?.commandsPerTask.median),
          byBatchSize: Object.fromEntries(
            m.settings.batchSizes.map((size, i) => [
              size,
              {
                tasksPerSec: r(upstash[i]?.tasksPerSec.median),
                commandsPerTask: r(upstash[i]?.commandsPerTask.median),
              },
            ]),
          ),
        }
      : { unavailable: m.upstash.reason },
    bullmq: systemFigures(m, "bullmq"),
    naive: systemFigures(m, "naive"),
    batchSize: HEADLINE_BATCH,
    quick: m.settings.quick,
    throughputRatioVsBullmq: pairedRatio(find(m.throughput, "leaseq", HEADLINE_BATCH)?.tasksPerSec, bull?.tasksPerSec),
    targets: targets(m),
    notes: notes(m),
    machine: { ...m.machine, loadAverageAtEnd: m.loadAverageAtEnd },
    durationSeconds: round(m.durationSeconds),
    payloadBytes: m.payloadBytes,
    settings: m.settings,
    throughput: m.throughput,
    backlog: m.backlog,
    idle: m.idle,
    bundles: m.bundles,
    latency: m.latency,
    latencyTargets: latencyTargets(m.latency),
    groups: groupsJson(m.groups),
  };
}

/** The latency targets: every p99 within a second, wake-ups at most 0.05 SQS requests per task. */
export function latencyTargets(latency: LatencyResult): Target[] {
  const cases: Array<[string, Percentiles]> = [
    ["enqueue through SQS to handler start, p99", latency.immediateSqs],
    ["enqueue through the library to handler start, p99", latency.immediateLibrary],
    ["delayed task (2 s and 20 s): start past runAt, p99", latency.delayed],
    ["retry: start past the retry time, p99", latency.retry],
    ["sent through SQS under load (4 workers busy with a backlog) to in Redis, p99", latency.sqsUnderLoad.inRedis],
    ["sent through SQS under load at a priority above the backlog to handler start, p99", latency.sqsUnderLoad.started],
  ];
  return [
    ...cases.map(([name, figures]) => ({
      name,
      target: "≤ 1,000 ms",
      measured: `${num(figures.p99)} ms`,
      met: figures.p99 <= 1_000,
    })),
    {
      name: `SQS requests per task, a burst of ${num(latency.burst.tasks)} through the library`,
      target: "≤ 0.05",
      measured: `${latency.sqsRequestsPerTask} (${latency.burst.wakeUpMessages} wake-up messages)`,
      met: latency.sqsRequestsPerTask <= 0.05,
    },
    {
      name: "ordered groups sent through a FIFO task queue by 4 producers: run out of send order",
      target: "0",
      measured: `${latency.order.outOfOrder.fifo} of ${num(latency.order.tasks)}`,
      met: latency.order.outOfOrder.fifo === 0,
    },
  ];
}

/** The latency table (and its targets), as printed and pasted into docs/benchmarks.md. */
export function renderLatency(latency: LatencyResult): string {
  const row = (name: string, all: Percentiles, idle?: Percentiles, loaded?: Percentiles) => [
    name,
    num(all.p50),
    num(all.p99),
    idle ? `${num(idle.p50)} / ${num(idle.p99)}` : "-",
    loaded ? `${num(loaded.p50)} / ${num(loaded.p99)}` : "-",
    String(all.samples),
  ];
  const out = [
    "Enqueue to handler start over the local stack, ms (delayed and retry: past the due time):",
    "",
    table(
      ["case", "p50", "p99", "idle p50 / p99", "under load p50 / p99", "samples"],
      [
        row("immediate, through SQS", latency.immediateSqs, latency.immediateSqs.idle, latency.immediateSqs.loaded),
        row(
          "immediate, through the library",
          latency.immediateLibrary,
          latency.immediateLibrary.idle,
          latency.immediateLibrary.loaded,
        ),
        row("through SQS at priority −10, 4 workers draining a backlog: in Redis", latency.sqsUnderLoad.inRedis),
        row("through SQS at priority −10, 4 workers draining a backlog: started", latency.sqsUnderLoad.started),
        row("delayed 2 s", latency.delayed.at2s),
        row("delayed 20 s", latency.delayed.at20s),
        row("delayed, both", latency.delayed),
        row("retry after a 4-8 s backoff", latency.retry),
      ],
    ),
    "",
    `Burst: ${num(latency.burst.tasks)} tasks through the library in calls of 100 sent ${latency.burst.wakeUpMessages} ` +
      `wake-up message(s) (${latency.sqsRequestsPerTask} SQS requests per task) and ran in ${num(latency.burst.drainedInMs)} ms. ` +
      `Whole run: ${latency.wakeUps} wake-ups sent, ${latency.reclaimerRuns} reclaimer run(s).`,
    "",
    "Tasks sent through SQS (task queue → intake → Redis; wake queue → worker), per task:",
    "",
    table(
      ["tasks per send", "tasks", "SQS requests", "Lambda invocations", "intake / worker invocations"],
      latency.sqsCost.map((c) => [
        String(c.tasksPerSend),
        num(c.tasks),
        String(c.sqsRequestsPerTask),
        String(c.invocationsPerTask),
        `${c.intakeInvocations} / ${c.workerInvocations}`,
      ]),
    ),
    `(The library path above: ${latency.sqsRequestsPerTask} SQS requests per task, no intake invocation.)`,
    "",
    `Order per group from the producer's send: ${latency.order.groups} ordered groups × ${num(latency.order.tasks / latency.order.groups)} tasks, ` +
      `one per message, ${latency.order.producers} concurrent producers: ${latency.order.outOfOrder.fifo} ran out of send order with a FIFO task queue, ` +
      `${latency.order.outOfOrder.standard} with a standard one.`,
    "",
    "Latency targets:",
    "",
    table(
      ["target", "wanted", "measured", "met"],
      latencyTargets(latency).map((t) => [t.name, t.target, t.measured, t.met ? "yes" : "NO"]),
    ),
  ];
  return out.join("\n");
}

function notes(m: Measurements): string[] {
  const list = [
    `Same ${m.settings.throughputTasks} tasks per throughput round for every system: type "email", priorities 0-3 mixed, ` +
      `a ${m.payloadBytes}-byte JSON payload (the payload-size row: ${bytes(LARGE_PAYLOAD_BYTES)}, padded); producers ` +
      "enqueue batches of 100 (BullMQ: addBulk of 100).",
    `Throughput = tasks / (enqueue time + drain time); ${m.settings.consumers} consumers for leaseq and the naive design; ` +
      `median of ${m.settings.rounds} interleaved rounds after a warm-up round, (min–max) shows the noise.`,
    "Commands per task: INFO commandstats deltas over a whole round, commands inside scripts included.",
    "CPU µs/task: redis-server's used_cpu_user+sys and this process's CPU over a round, divided by the tasks " +
      "(the local Upstash endpoint runs in a process of its own and is counted in neither).",
  ];
  const largestLevel = m.settings.latencyLevels.at(-1) ?? 0;
  if (largestLevel < 1_000_000) {
    list.push(
      `QUICK MODE: the "1M" claim latency point is measured at ${num(largestLevel)} waiting tasks, not 1,000,000 ` +
        `(claimP99MsAt1M holds that figure; claimAt1MActualWaiting says where it was taken).`,
    );
  }
  const bullLevels = m.settings.bullmqLatencyLevels;
  if ((bullLevels.at(-1) ?? 0) < largestLevel) {
    list.push(`BullMQ claim latency measured only up to ${num(bullLevels.at(-1))} waiting in this mode.`);
  }
  list.push(
    "Claim latency: client-side round trip of one claim of 20 (BullMQ: 20 consecutive job fetches); each level is " +
      `its own queue and samples interleave across levels; p99 is the median of ${m.settings.latencyRounds} rounds of ` +
      `${m.settings.latencySamplesPerRound} samples, (min–max) over rounds.`,
  );
  if (!m.upstash.available) list.push(`leaseq over the local Upstash endpoint not measured: ${m.upstash.reason}.`);
  return list;
}

/** The tables printed at the end of a run (and pasted into docs/benchmarks.md). */
export function render(m: Measurements): string {
  const out: string[] = [];
  out.push(
    `Machine: ${m.machine.cpuModel}, ${m.machine.cores} cores, ${m.machine.memoryGiB} GiB; Node ${m.machine.node}; ` +
      `Redis ${m.machine.redis}; BullMQ ${m.machine.bullmq}; load average ${m.machine.loadAverageAtStart.join(" ")} at start, ` +
      `${m.loadAverageAtEnd.join(" ")} at end. ${m.settings.quick ? "QUICK run" : "Full run"}, ${Math.round(m.durationSeconds)} s.`,
  );
  out.push("", "Throughput (tasks/s end to end: median (min–max) of rounds) and Redis commands per task:", "");
  out.push(
    table(
      [
        "system",
        "payload",
        "claim batch",
        "consumers",
        "tasks/s",
        "enqueue tasks/s",
        "drain tasks/s",
        "commands/task",
        "Redis CPU µs/task",
        "client CPU µs/task",
      ],
      m.throughput.map((t) => [
        t.system,
        t.payloadBytes === undefined ? `${m.payloadBytes} B` : bytes(t.payloadBytes),
        t.system === "bullmq" ? "1 (fetch)" : String(t.batchSize),
        t.system === "bullmq" ? `concurrency ${t.consumers}` : String(t.consumers),
        withSpread(t.tasksPerSec),
        num(t.enqueueTasksPerSec.median),
        num(t.drainTasksPerSec.median),
        num(t.commandsPerTask.median),
        num(t.redisCpuUsPerTask.median),
        num(t.clientCpuUsPerTask.median),
      ]),
    ),
  );
  const levels = [...new Set(m.backlog.flatMap((b) => b.latency.map((p) => p.waiting)))].sort((a, b) => a - b);
  out.push(
    "",
    `Memory per waiting task (${num(m.settings.memoryTasks)} waiting) and claim latency of 20 tasks, ms p50 / p99:`,
    "",
  );
  out.push(
    table(
      ["system", "bytes/task", "by structure", ...levels.map((level) => `${num(level)} waiting`)],
      m.backlog.map((b) => [
        b.system,
        num(b.bytesPerTask),
        Object.entries(b.bytesPerTaskByKey)
          .map(([name, value]) => `${name} ${num(value)}`)
          .join(", ") || "-",
        ...levels.map((level) => {
          const point = latencyAt(b, level);
          return point ? `${num(point.p50Ms.median)} / ${withSpread(point.p99Ms)}` : "not run";
        }),
      ]),
    ),
  );
  out.push("", "Idle cost (Redis commands per minute, empty queue):", "");
  out.push(
    table(
      ["system", "commands/min", "how"],
      [
        ["leaseq", num(m.idle.leaseq.commandsPerMinute), m.idle.leaseq.method],
        ["bullmq", num(m.idle.bullmq.commandsPerMinute), m.idle.bullmq.method],
        ["naive", "n/a", "no reclaimer in that design"],
      ],
    ),
  );
  out.push("", "Lambda bundles (import() in a fresh Node process, median (min–max) ms):", "");
  out.push(
    table(
      ["bundle", "size", "gzip", "import ms"],
      m.bundles.map((b) =>
        b.built
          ? [b.path, bytes(b.bytes), bytes(b.gzipBytes), b.error ? `fails: ${b.error}` : withSpread(b.importMs)]
          : [b.path, "not built", "", ""],
      ),
    ),
  );
  out.push("", "Targets:", "");
  out.push(
    table(
      ["target", "wanted", "measured", "met"],
      targets(m).map((t) => [t.name, t.target, t.measured, t.met ? "yes" : "NO"]),
    ),
  );
  for (const note of notes(m)) out.push(`- ${note}`);
  out.push("", renderLatency(m.latency));
  out.push("", renderGroups(m.groups));
  return out.join("\n");
}
