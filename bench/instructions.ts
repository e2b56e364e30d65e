// `npm run bench -- --instructions`: how much work Redis does per task, counted rather than timed.
// A redis-server of its own runs under valgrind's callgrind (bench/valgrind-redis.ts); every workload
// gets a warm-up round (scripts loaded and compiled, allocator grown; not counted), then a measured
// round on a fresh queue of the same server: the enqueue of every task from one producer, then the
// drain (claim → no-op handler → ack until empty), each counted apart in instructions Redis executes
// (callgrind zero, work, dump) and in commands (INFO commandstats deltas, commands inside scripts
// included, this module's own INFO left out). Instructions do not move with the machine's pace as
// the wall clock does; what noise remains comes from timing-dependent paths (serverCron, how the
// consumers' claims interleave, the contenders' timers). Needs valgrind and redis-server on PATH.
// Usage: npm run bench -- --instructions [--tasks 2000] [--warmup 500] [--large-tasks 200]
// [--only "leaseq b20,naive"]. Defaults: 10,000 tasks, a warm-up of a quarter of that (at most 2,000),
// and a tenth of the tasks for the 64 KiB rows (their instructions per task hold at 50 as at 2,000).
// --only runs the workloads whose key contains one of the comma-separated words, and writes nothing.
import { createRequire } from "node:module";
import type { Redis } from "ioredis";
import { TcpStore } from "../shared/stores/tcp.js";
import { bullmqContender } from "./bullmq.js";
import type { Contender } from "./contender.js";
import { type FloorLease, floorContender } from "./floor.js";
import { leaseqContender } from "./leaseq.js";
import { naiveContender } from "./naive.js";
import { commandCalls, commandDelta, redisVersion } from "./redis.js";
import { mergeResults, RESULTS_PATH } from "./results-file.js";
import { HEADLINE_BATCH, LARGE_PAYLOAD_BYTES } from "./settings.js";
import { num, table } from "./table.js";
import { type CallgrindRedis, startCallgrindRedis } from "./valgrind-redis.js";
import { makeTask, makeTasks, payloadText } from "./workload.js";

export const DEFAULT_TASKS = 10_000;
export const CONSUMERS = 4;
export const GROUPS = 1_000;
/** BullMQ, bee-queue and groupmq: one worker at this concurrency (BullMQ's headline row). */
export const WORKER_CONCURRENCY = 50;
const DEDUPE_TTL_MS = 60_000;
/** The row every other is compared with: the naive design, claims of HEADLINE_BATCH. */
export const BASELINE_KEY = `naive b${HEADLINE_BATCH}`;

export interface InstructionsOptions {
  tasks: number;
  /** Tasks of each workload's warm-up round. */
  warmupTasks: number;
  /** 64 KiB rows: tasks of the measured and the warm-up round (a 64 KiB task costs Redis ~30x a 54-byte one). */
  largeTasks: number;
  largeWarmupTasks: number;
  /** Only the workloads whose key contains one of these; every one when empty. */
  only: string[];
}

/** The options from the command line: --tasks N (or a bare N), --warmup N, --only a,b. */
export function parseInstructionsArgs(argv: readonly string[]): InstructionsOptions {
  const value = (flag: string) => {
    const at = argv.indexOf(flag);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const count = (text: string | undefined, what: string, fallback: number) => {
    if (text === undefined) return fallback;
    const n = Number(text.replaceAll("_", "").replaceAll(",", ""));
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${what} must be a positive integer, not ${text}`);
    return n;
  };
  const bare = argv.find((arg, i) => /^\d[\d_,]*$/.test(arg) && !argv[i - 1]?.startsWith("--"));
  const tasks = count(value("--tasks") ?? bare, "--tasks", DEFAULT_TASKS);
  // A quarter of the round (2,000 before 10,000): enough to load and compile the scripts and grow the
  // allocator's arenas, without doubling the run.
  const warmupTasks = count(value("--warmup"), "--warmup", Math.min(2_000, Math.max(200, Math.round(tasks / 4))));
  const largeTasks = count(value("--large-tasks"), "--large-tasks", Math.max(50, Math.round(tasks / 10)));
  return {
    tasks,
    warmupTasks,
    largeTasks,
    largeWarmupTasks: Math.max(20, Math.round(largeTasks / 4)),
    only: (value("--only") ?? "")
      .split(",")
      .map((word) => word.trim())
      .filter(Boolean),
  };
}

/** One workload of the count: a system, how it runs, and the payload. */
export interface InstructionsCase {
  key: string;
  system: "leaseq" | "floor" | "naive" | "bullmq" | "bee-queue" | "groupmq";
  /** What differs from the default workload, in words. */
  shape: string;
  payloadBytes?: number;
  /** Another project's queue: left out, with the reason printed, when it cannot be installed or run. */
  optional?: boolean;
  open(queueName: string): Promise<Contender>;
}

export interface Server {
  url: string;
  host: string;
  port: number;
}

/** The workloads, in the order they run and print. */
export function instructionsCases(server: Server): InstructionsCase[] {
  const leaseq =
    (options: { batchSize?: number; groups?: number; ordered?: boolean; dedupeTtlMs?: number }) =>
    (queueName: string) =>
      leaseqContender({
        openStore: () => TcpStore.fromUrl(server.url),
        queueName,
        batchSize: options.batchSize ?? HEADLINE_BATCH,
        consumers: CONSUMERS,
        groups: options.groups,
        ordered: options.ordered,
        dedupeTtlMs: options.dedupeTtlMs,
      });
  const naive = (batchSize: number) => (queueName: string) =>
    naiveContender({ url: server.url, queueName, batchSize, consumers: CONSUMERS });
  const floor = (lease: FloorLease, batchSize: number) => (queueName: string) =>
    floorContender({ url: server.url, queueName, lease, batchSize, consumers: CONSUMERS });
  const groups = GROUPS.toLocaleString("en-US");
  const large = `${LARGE_PAYLOAD_BYTES / 1024} KiB`;
  return [
    ...[1, HEADLINE_BATCH, 100].map(
      (batchSize): InstructionsCase => ({
        key: `leaseq b${batchSize}`,
        system: "leaseq",
        shape: `claim batch ${batchSize}, ${CONSUMERS} consumers`,
        open: leaseq({ batchSize }),
      }),
    ),
    {
      key: `leaseq b${HEADLINE_BATCH} ${groups} groups`,
      system: "leaseq",
      shape: `${groups} groups of concurrency 1`,
      open: leaseq({ groups: GROUPS }),
    },
    {
      key: `leaseq b${HEADLINE_BATCH} ${groups} ordered groups`,
      system: "leaseq",
      shape: `${groups} ordered groups`,
      open: leaseq({ groups: GROUPS, ordered: true }),
    },
    {
      key: `leaseq b${HEADLINE_BATCH} dedupe`,
      system: "leaseq",
      shape: `a dedupe key per task (ttl ${DEDUPE_TTL_MS / 1000} s)`,
      open: leaseq({ dedupeTtlMs: DEDUPE_TTL_MS }),
    },
    {
      key: `leaseq b${HEADLINE_BATCH} ${large}`,
      system: "leaseq",
      shape: `${large} payload`,
      payloadBytes: LARGE_PAYLOAD_BYTES,
      open: leaseq({}),
    },
    // The least work of leaseq's promises (bench/floor.lua): idempotent enqueue, fenced leases, nothing else.
    ...FLOOR_KEYS.map(
      ({ key, lease, batchSize }): InstructionsCase => ({
        key,
        system: "floor",
        shape: `claim batch ${batchSize}, ${lease === "record" ? "a lease record per task" : "the lease a score alone"}, no checks`,
        open: floor(lease, batchSize),
      }),
    ),
    // Claims of 1: the per-call cost, against leaseq b1 (CLAIM_ONE_KEYS).
    { key: "naive b1", system: "naive", shape: `claim batch 1, ${CONSUMERS} consumers`, open: naive(1) },
    {
      key: BASELINE_KEY,
      system: "naive",
      shape: `claim batch ${HEADLINE_BATCH}, ${CONSUMERS} consumers`,
      open: naive(HEADLINE_BATCH),
    },
    {
      key: `${BASELINE_KEY} ${large}`,
      system: "naive",
      shape: `${large} payload`,
      payloadBytes: LARGE_PAYLOAD_BYTES,
      open: naive(HEADLINE_BATCH),
    },
    {
      key: `bullmq c${WORKER_CONCURRENCY}`,
      system: "bullmq",
      shape: `one Worker, concurrency ${WORKER_CONCURRENCY}`,
      open: (queueName) =>
        bullmqContender({ host: server.host, port: server.port, queueName, concurrency: WORKER_CONCURRENCY }),
    },
    {
      key: `bee-queue c${WORKER_CONCURRENCY}`,
      system: "bee-queue",
      shape: `one worker, concurrency ${WORKER_CONCURRENCY}`,
      optional: true,
      open: async (queueName) => {
        const { beeQueueContender } = await import("./bee-queue.js");
        return beeQueueContender({ host: server.host, port: server.port, queueName, concurrency: WORKER_CONCURRENCY });
      },
    },
    {
      key: `groupmq c${WORKER_CONCURRENCY} ${groups} groups`,
      system: "groupmq",
      shape: `${groups} groups, one Worker, concurrency ${WORKER_CONCURRENCY}`,
      optional: true,
      open: async (queueName) => {
        const { groupmqContender } = await import("./groupmq.js");
        return groupmqContender({ url: server.url, queueName, groups: GROUPS, concurrency: WORKER_CONCURRENCY });
      },
    },
  ];
}

/** One workload's measured round. */
export interface InstructionsRow {
  key: string;
  system: InstructionsCase["system"];
  shape: string;
  tasks: number;
  payloadBytes: number;
  enqueueInstructions: number;
  drainInstructions: number;
  enqueueCommands: number;
  drainCommands: number;
  /** Commands of the whole round (enqueue and drain) by name. */
  byCommand: Record<string, number>;
  /** Wall time of the counted enqueue and drain under valgrind (s): how long they took, not a speed. */
  seconds: number;
}

export interface InstructionsResult {
  tasks: number;
  warmupTasks: number;
  largeTasks: number;
  largeWarmupTasks: number;
  consumers: number;
  rows: InstructionsRow[];
  /** The optional contenders left out, and why. */
  leftOut: Array<{ key: string; reason: string }>;
  /**
   * What Redis executes per second of wall time with no client at all (serverCron, 10 times a
   * second): a floor in every count, which weighs more on a round that valgrind makes slow.
   */
  idleInstructionsPerSecond: number;
  versions: Record<string, string>;
  durationSeconds: number;
}

export const perTask = (total: number, tasks: number) => total / tasks;
export const totalInstructions = (row: InstructionsRow) => row.enqueueInstructions + row.drainInstructions;

/** Rejects after `ms` unless `promise` settles first. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no end after ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Instructions and commands (INFO commandstats, its own INFO left out) of `work`. */
async function countPhase(redis: CallgrindRedis, work: () => Promise<unknown>) {
  const before = await commandCalls(redis.admin);
  const started = performance.now();
  const instructions = await redis.count(work);
  const seconds = (performance.now() - started) / 1000;
  const after = await commandCalls(redis.admin);
  return { instructions, seconds, commands: commandDelta(before, after, 1) };
}

/** The clients connected to the server, the admin connection included. */
async function connectedClients(admin: Redis): Promise<number> {
  return Number(/^connected_clients:(\d+)/m.exec(await admin.info("clients"))?.[1]);
}

/**
 * Opens a contender, runs `round` on it and closes it, closing it too when the round fails; then
 * checks that the close left no connection of its own open (only the admin one remains).
 */
async function withContender<T>(
  redis: CallgrindRedis,
  item: InstructionsCase,
  queueName: string,
  round: (contender: Contender) => Promise<T>,
): Promise<T> {
  const contender = await within(item.open(queueName), 120_000, `${item.key}: opening`);
  let result: T;
  try {
    result = await round(contender);
  } finally {
    await within(contender.close(), 60_000, `${item.key}: closing`);
  }
  // Disconnects reach a server under valgrind late: up to 10 s.
  for (let waited = 0; (await connectedClients(redis.admin)) > 1; waited += 100) {
    if (waited >= 10_000) {
      const open = (await connectedClients(redis.admin)) - 1;
      throw new Error(`${item.key}: ${open} connections still open 10 s after its close`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return result;
}

/** One workload: its warm-up round, then the measured one, on a flushed server each. */
async function measureCase(
  redis: CallgrindRedis,
  item: InstructionsCase,
  options: InstructionsOptions,
  index: number,
): Promise<InstructionsRow> {
  const large = item.payloadBytes !== undefined;
  const tasks = large ? options.largeTasks : options.tasks;
  const warmupTasks = large ? options.largeWarmupTasks : options.warmupTasks;
  // Generous: a round of 10,000 tasks of the costliest contender takes about a minute under valgrind.
  const limitMs = (n: number) => 120_000 + 60 * n * (large ? 20 : 1);
  await redis.admin.flushall("SYNC");
  await withContender(redis, item, `instr-warmup-${index}`, async (warm) => {
    await within(
      warm.enqueue(makeTasks(0, warmupTasks, item.payloadBytes)),
      limitMs(warmupTasks),
      `${item.key}: warm-up enqueue`,
    );
    const drained = await within(warm.drain(), limitMs(warmupTasks), `${item.key}: warm-up drain`);
    if (drained !== warmupTasks) throw new Error(`${item.key}: the warm-up drained ${drained} of ${warmupTasks} tasks`);
  });
  await redis.admin.flushall("SYNC");
  const list = makeTasks(0, tasks, item.payloadBytes);
  return withContender(redis, item, `instr-${index}`, async (contender) => {
    const enqueue = await countPhase(redis, () =>
      within(contender.enqueue(list), limitMs(tasks), `${item.key}: enqueue`),
    );
    let drained = 0;
    const drain = await countPhase(redis, async () => {
      drained = await within(contender.drain(), limitMs(tasks), `${item.key}: drain`);
    });
    if (drained !== tasks) throw new Error(`${item.key}: drained ${drained} of ${tasks} tasks`);
    const byCommand: Record<string, number> = { ...enqueue.commands.byCommand };
    for (const [name, calls] of Object.entries(drain.commands.byCommand))
      byCommand[name] = (byCommand[name] ?? 0) + calls;
    return {
      key: item.key,
      system: item.system,
      shape: item.shape,
      tasks,
      payloadBytes: item.payloadBytes ?? Buffer.byteLength(payloadText(makeTask(0))),
      enqueueInstructions: enqueue.instructions,
      drainInstructions: drain.instructions,
      enqueueCommands: enqueue.commands.total,
      drainCommands: drain.commands.total,
      byCommand,
      seconds: enqueue.seconds + drain.seconds,
    };
  });
}

function versions(redis: string): Record<string, string> {
  const require = createRequire(import.meta.url);
  const found: Record<string, string> = { redis, node: process.version };
  for (const name of ["bullmq", "bee-queue", "groupmq"]) {
    try {
      found[name] = (require(`${name}/package.json`) as { version: string }).version;
    } catch {
      found[name] = "not installed";
    }
  }
  return found;
}

/** Every workload (or those `only` names) on one redis-server under callgrind, stopped at the end. */
export async function runInstructions(
  options: InstructionsOptions,
  log: (line: string) => void,
): Promise<InstructionsResult> {
  const startedAt = performance.now();
  const redis = await startCallgrindRedis();
  // Ctrl-C mid-run: the valgrind redis-server is stopped before the process ends.
  const onSigint = () => void redis.stop().finally(() => process.exit(130));
  process.once("SIGINT", onSigint);
  try {
    const { hostname, port } = new URL(redis.url);
    const cases = instructionsCases({ url: redis.url, host: hostname, port: Number(port) }).filter(
      (item) => options.only.length === 0 || options.only.some((word) => item.key.includes(word)),
    );
    if (cases.length === 0) throw new Error(`--only ${options.only.join(",")} names no workload`);
    const idleMs = 3_000;
    const idle = await redis.count(() => new Promise((resolve) => setTimeout(resolve, idleMs)));
    const idleInstructionsPerSecond = idle / (idleMs / 1000);
    log(
      `  idle (no client, ${idleMs / 1000} s)               ${num(idleInstructionsPerSecond / 1000)}k instructions/s`,
    );
    const rows: InstructionsRow[] = [];
    const leftOut: InstructionsResult["leftOut"] = [];
    for (const [index, item] of cases.entries()) {
      try {
        const row = await measureCase(redis, item, options, index);
        rows.push(row);
        log(
          `  ${item.key.padEnd(32)} ${num(perTask(totalInstructions(row), row.tasks) / 1000).padStart(6)}k instructions/task` +
            `  ${num(perTask(row.enqueueCommands + row.drainCommands, row.tasks)).padStart(6)} commands/task` +
            `  (${row.tasks} tasks, counted for ${num(row.seconds)} s under valgrind)`,
        );
      } catch (error) {
        if (!item.optional) throw error;
        const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
        leftOut.push({ key: item.key, reason });
        log(`  ${item.key.padEnd(32)} left out: ${reason}`);
      }
    }
    return {
      tasks: options.tasks,
      warmupTasks: options.warmupTasks,
      largeTasks: options.largeTasks,
      largeWarmupTasks: options.largeWarmupTasks,
      consumers: CONSUMERS,
      rows,
      leftOut,
      idleInstructionsPerSecond,
      versions: versions(await redisVersion(redis.admin)),
      durationSeconds: (performance.now() - startedAt) / 1000,
    };
  } catch (error) {
    const tail = redis.logTail();
    if (tail) log(`valgrind's log ends:\n${tail}`);
    throw error;
  } finally {
    process.removeListener("SIGINT", onSigint);
    await redis.stop();
  }
}

/** "1.23x" of `value` over `base`. */
function times(value: number, base: number | undefined): string {
  return base ? `${num(value / base)}x` : "n/a";
}

/** The 64 KiB row's instructions per task over its 54-byte row's, per system. */
export function payloadRatios(rows: readonly InstructionsRow[]): Record<string, number> {
  const ratios: Record<string, number> = {};
  for (const row of rows) {
    if (row.payloadBytes !== LARGE_PAYLOAD_BYTES) continue;
    const small = rows.find((other) => other.key === row.key.replace(` ${LARGE_PAYLOAD_BYTES / 1024} KiB`, ""));
    if (small) {
      ratios[row.system] = perTask(totalInstructions(row), row.tasks) / perTask(totalInstructions(small), small.tasks);
    }
  }
  return ratios;
}

/**
 * The floor's rows (bench/floor.lua): leaseq's storage (a lease record per task) and the cheapest
 * fenced lease (its token the leased set's score), each at claims of 1 and of HEADLINE_BATCH.
 */
export const FLOOR_KEYS: ReadonlyArray<{ key: string; lease: FloorLease; batchSize: number }> = [
  { key: "floor b1", lease: "record", batchSize: 1 },
  { key: `floor b${HEADLINE_BATCH}`, lease: "record", batchSize: HEADLINE_BATCH },
  { key: "floor score b1", lease: "score", batchSize: 1 },
  { key: `floor score b${HEADLINE_BATCH}`, lease: "score", batchSize: HEADLINE_BATCH },
];

/**
 * Each floor row over the naive design at the same claim size, and leaseq over the floor of its own
 * storage at that size: what the promises cost at the least, and what leaseq spends beyond that.
 */
export function floorRatios(rows: readonly InstructionsRow[]): Record<string, number> {
  const perTaskOf = (key: string) => {
    const found = rows.find((row) => row.key === key);
    return found ? perTask(totalInstructions(found), found.tasks) : undefined;
  };
  const ratios: Record<string, number> = {};
  for (const { key, lease, batchSize } of FLOOR_KEYS) {
    const floor = perTaskOf(key);
    const naive = perTaskOf(`naive b${batchSize}`);
    const leaseq = perTaskOf(`leaseq b${batchSize}`);
    if (floor === undefined) continue;
    if (naive !== undefined) ratios[`${key} / naive b${batchSize}`] = floor / naive;
    if (leaseq !== undefined && lease === "record") ratios[`leaseq b${batchSize} / ${key}`] = leaseq / floor;
  }
  return ratios;
}

/** leaseq's claims of 1 and the naive design's: the per-call cost of each, compared as a ratio. */
export const CLAIM_ONE_KEYS = ["leaseq b1", "naive b1"] as const;

/** leaseq b1's instructions per task over naive b1's, when both were measured. */
export function claimOneRatio(rows: readonly InstructionsRow[]): number | undefined {
  const [leaseq, naive] = CLAIM_ONE_KEYS.map((key) => rows.find((row) => row.key === key));
  if (!leaseq || !naive) return undefined;
  return perTask(totalInstructions(leaseq), leaseq.tasks) / perTask(totalInstructions(naive), naive.tasks);
}

/** The table as printed and pasted into docs/benchmarks.md, the ratios and what was left out. */
export function renderInstructions(
  result: Pick<InstructionsResult, "rows" | "leftOut" | "consumers"> & Partial<InstructionsResult>,
): string {
  const baseline = result.rows.find((row) => row.key === BASELINE_KEY);
  const baselinePerTask = baseline ? perTask(totalInstructions(baseline), baseline.tasks) : undefined;
  const k = (instructions: number, tasks: number) => num(instructions / tasks / 1000);
  const lines = [
    `Redis instructions (callgrind Ir) and commands per task, ${result.consumers} consumers (claim loops) or one worker:`,
    "",
    table(
      [
        "workload",
        "tasks",
        "instructions/task (k)",
        "enqueue k/task",
        "drain k/task",
        "commands/task",
        `vs ${BASELINE_KEY}`,
      ],
      result.rows.map((row) => [
        `${row.key} (${row.shape})`,
        String(row.tasks),
        k(totalInstructions(row), row.tasks),
        k(row.enqueueInstructions, row.tasks),
        k(row.drainInstructions, row.tasks),
        num((row.enqueueCommands + row.drainCommands) / row.tasks),
        times(perTask(totalInstructions(row), row.tasks), baselinePerTask),
      ]),
    ),
  ];
  // The notes under the table: the payload ratios, the idle floor, what was left out.
  const notes: string[] = [];
  const ratios = Object.entries(payloadRatios(result.rows));
  if (ratios.length > 0) {
    notes.push(
      `${LARGE_PAYLOAD_BYTES / 1024} KiB payload over the 54-byte one, instructions per task: ` +
        ratios.map(([system, ratio]) => `${system} ${num(ratio)}x`).join(", "),
    );
  }
  const claimOne = claimOneRatio(result.rows);
  if (claimOne !== undefined) {
    notes.push(`Claims of 1 (the per-call cost), instructions per task: leaseq b1 ${num(claimOne)}x naive b1`);
  }
  const floors = Object.entries(floorRatios(result.rows));
  if (floors.length > 0) {
    notes.push(
      `The floor (bench/floor.lua: idempotent enqueue and fenced leases, nothing else), instructions per task: ${floors
        .map(([pair, ratio]) => `${pair} ${num(ratio)}x`)
        .join(", ")}`,
    );
  }
  if (result.idleInstructionsPerSecond !== undefined) {
    notes.push(
      `Idle floor: Redis executes ${num(result.idleInstructionsPerSecond / 1000)}k instructions per second of wall ` +
        "time with no client (serverCron); every count holds it for as long as valgrind made the round last.",
    );
  }
  for (const { key, reason } of result.leftOut) notes.push(`Left out: ${key}: ${reason}`);
  if (notes.length > 0) lines.push("", ...notes);
  return lines.join("\n");
}

/** results.json → instructions. */
export function instructionsJson(result: InstructionsResult) {
  const baseline = result.rows.find((row) => row.key === BASELINE_KEY);
  const baselinePerTask = baseline ? perTask(totalInstructions(baseline), baseline.tasks) : undefined;
  const round = (value: number, digits = 3) => Number(value.toFixed(digits));
  const claimOne = claimOneRatio(result.rows);
  return {
    measuredBy:
      "callgrind Ir of redis-server (every thread, zero to dump) per phase; commands from INFO commandstats deltas (commands inside scripts included)",
    tasks: result.tasks,
    warmupTasks: result.warmupTasks,
    largePayloadTasks: result.largeTasks,
    largePayloadWarmupTasks: result.largeWarmupTasks,
    consumers: result.consumers,
    workerConcurrency: WORKER_CONCURRENCY,
    baseline: BASELINE_KEY,
    versions: result.versions,
    durationSeconds: Math.round(result.durationSeconds),
    idleInstructionsPerSecond: Math.round(result.idleInstructionsPerSecond),
    rows: result.rows.map((row) => ({
      key: row.key,
      system: row.system,
      shape: row.shape,
      tasks: row.tasks,
      payloadBytes: row.payloadBytes,
      instructionsPerTask: {
        total: Math.round(perTask(totalInstructions(row), row.tasks)),
        enqueue: Math.round(perTask(row.enqueueInstructions, row.tasks)),
        drain: Math.round(perTask(row.drainInstructions, row.tasks)),
      },
      commandsPerTask: {
        total: round((row.enqueueCommands + row.drainCommands) / row.tasks),
        enqueue: round(row.enqueueCommands / row.tasks),
        drain: round(row.drainCommands / row.tasks),
      },
      commandsPerTaskByName: Object.fromEntries(
        Object.entries(row.byCommand)
          .sort((a, b) => b[1] - a[1])
          .map(([name, calls]) => [name, round(calls / row.tasks, 4)]),
      ),
      ratioToBaseline: baselinePerTask ? round(perTask(totalInstructions(row), row.tasks) / baselinePerTask) : null,
      countedSecondsUnderValgrind: round(row.seconds, 1),
      /** The idle floor's share of the row: what Redis would have executed with no client for as long. */
      idleInstructionsPerTask: Math.round((result.idleInstructionsPerSecond * row.seconds) / row.tasks),
    })),
    payloadRatio: Object.fromEntries(Object.entries(payloadRatios(result.rows)).map(([k, v]) => [k, round(v)])),
    claimOneRatio: claimOne === undefined ? null : round(claimOne),
    floorRatios: Object.fromEntries(Object.entries(floorRatios(result.rows)).map(([k, v]) => [k, round(v)])),
    leftOut: result.leftOut,
  };
}

/** The mode: runs the count, prints the table and, unless --only narrowed it, writes results.json. */
export async function instructionsMode(argv: readonly string[], log: (line: string) => void): Promise<void> {
  const options = parseInstructionsArgs(argv);
  log(
    `Redis instructions per task under callgrind: ${options.tasks} tasks (${options.largeTasks} with the ` +
      `${LARGE_PAYLOAD_BYTES / 1024} KiB payload), each workload after a warm-up round of ${options.warmupTasks} ` +
      `(${options.largeWarmupTasks})`,
  );
  const result = await runInstructions(options, log);
  log(`\n${renderInstructions(result)}`);
  log(`\nWall time: ${Math.round(result.durationSeconds)} s`);
  if (options.only.length > 0) {
    log(`\n--only: ${RESULTS_PATH} left as it was`);
    return;
  }
  mergeResults({ instructions: instructionsJson(result) });
  log(`\nWrote the instructions figures into ${RESULTS_PATH} (instructions)`);
}
