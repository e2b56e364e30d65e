import type { Backlog } from "./contender.js";
import { type BenchRedis, flush, usedMemory } from "./redis.js";
import { percentile, type Spread, spread } from "./stats.js";
import { makeTasks } from "./workload.js";

export const CLAIM_BATCH = 20;
/** Tasks per load call of the backlog loader (each call pipelines batches of LOAD_BATCH). */
const LOAD_CHUNK = 50_000;

export interface BacklogCase {
  system: "leaseq" | "naive" | "bullmq";
  open(queueName: string): Promise<Backlog>;
  /** Waiting-task counts to time claims at, ascending, e.g. [1000, 100000, 1000000]. */
  levels: number[];
}

export interface LatencyPoint {
  waiting: number;
  p50Ms: Spread;
  p99Ms: Spread;
  samplesPerRound: number;
}

export interface BacklogResult {
  system: BacklogCase["system"];
  /** used_memory delta / tasks, with `memoryTasks` waiting (mixed priorities). */
  bytesPerTask: number;
  memoryTasks: number;
  /** MEMORY USAGE of the system's big keys / tasks, where the system keeps tasks in a few keys. */
  bytesPerTaskByKey: Record<string, number>;
  loadTasksPerSec: number;
  latency: LatencyPoint[];
}

export interface BacklogOptions {
  memoryTasks: number;
  samplesPerRound: number;
  rounds: number;
  warmupSamples: number;
  log: (line: string) => void;
}

/**
 * Memory and claim latency of one system. Each level is a queue of its own, all loaded first, so
 * the samples can interleave (one claim at 1k, one at 100k, one at 1M, again…): the machine's
 * noise then falls on every level alike and cannot fake a growth. The memory figure is the
 * used_memory delta of loading the `memoryTasks` queue (the 100k level) alone.
 */
export async function runBacklog(
  redis: BenchRedis,
  item: BacklogCase,
  options: BacklogOptions,
): Promise<BacklogResult> {
  await flush(redis);
  const backlogs = new Map<number, Backlog>();
  try {
    for (const level of new Set([...item.levels, options.memoryTasks])) {
      backlogs.set(level, await item.open(`backlog-${item.system}-${level}-${process.pid}`));
    }
    const memoryQueue = backlogs.get(options.memoryTasks) as Backlog;
    const before = await usedMemory(redis.admin);
    const started = performance.now();
    await load(memoryQueue, options.memoryTasks);
    const loadTasksPerSec = options.memoryTasks / ((performance.now() - started) / 1000);
    const after = await usedMemory(redis.admin);
    const bytesPerTask = (after - before) / options.memoryTasks;
    const bytesPerTaskByKey: Record<string, number> = {};
    for (const [name, key] of Object.entries(memoryQueue.memoryKeys?.() ?? {})) {
      const usage = Number(await redis.admin.call("MEMORY", "USAGE", key, "SAMPLES", "0"));
      bytesPerTaskByKey[name] = usage / options.memoryTasks;
    }
    options.log(
      `  ${item.system}: ${bytesPerTask.toFixed(0)} bytes per waiting task (${options.memoryTasks} waiting; ` +
        `${Object.entries(bytesPerTaskByKey)
          .map(([name, value]) => `${name} ${value.toFixed(0)}`)
          .join(", ")}), loaded at ${Math.round(loadTasksPerSec)} tasks/s`,
    );
    for (const level of item.levels) {
      if (level === options.memoryTasks) continue;
      const loadStart = performance.now();
      await load(backlogs.get(level) as Backlog, level);
      options.log(`  ${item.system}: loaded ${level} in ${((performance.now() - loadStart) / 1000).toFixed(1)} s`);
    }
    const latency = await measureClaims(item, backlogs, options);
    return {
      system: item.system,
      bytesPerTask,
      memoryTasks: options.memoryTasks,
      bytesPerTaskByKey,
      loadTasksPerSec,
      latency,
    };
  } finally {
    for (const backlog of backlogs.values()) await backlog.close();
    await flush(redis);
  }
}

async function load(backlog: Backlog, count: number): Promise<void> {
  for (let from = 0; from < count; from += LOAD_CHUNK)
    await backlog.load(makeTasks(from, Math.min(count, from + LOAD_CHUNK)));
}

async function measureClaims(
  item: BacklogCase,
  backlogs: Map<number, Backlog>,
  options: BacklogOptions,
): Promise<LatencyPoint[]> {
  const levels = item.levels;
  for (let i = 0; i < options.warmupSamples; i++) {
    for (const level of levels) await backlogs.get(level)?.claimSample(CLAIM_BATCH);
  }
  const p50 = new Map<number, number[]>(levels.map((level) => [level, []]));
  const p99 = new Map<number, number[]>(levels.map((level) => [level, []]));
  for (let round = 0; round < options.rounds; round++) {
    const samples = new Map<number, number[]>(levels.map((level) => [level, []]));
    for (let i = 0; i < options.samplesPerRound; i++) {
      // Rotating the order keeps any one level from always following the same neighbour.
      for (let j = 0; j < levels.length; j++) {
        const level = levels[(i + j) % levels.length];
        samples.get(level)?.push(await (backlogs.get(level) as Backlog).claimSample(CLAIM_BATCH));
      }
    }
    for (const level of levels) {
      p50.get(level)?.push(percentile(samples.get(level) ?? [], 50));
      p99.get(level)?.push(percentile(samples.get(level) ?? [], 99));
    }
  }
  return levels.map((level) => {
    const point = {
      waiting: level,
      p50Ms: spread(p50.get(level) ?? []),
      p99Ms: spread(p99.get(level) ?? []),
      samplesPerRound: options.samplesPerRound,
    };
    options.log(
      `  ${item.system}: claim of ${CLAIM_BATCH} at ${level} waiting: p50 ${point.p50Ms.median.toFixed(3)} ms, ` +
        `p99 ${point.p99Ms.median.toFixed(3)} ms (p99 of each round: ${point.p99Ms.rounds.map((v) => v.toFixed(3)).join(", ")})`,
    );
    return point;
  });
}
