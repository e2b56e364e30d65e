import type { Contender } from "./contender.js";
import { type BenchRedis, countCommands, flush, redisCpuSeconds } from "./redis.js";
import { type Spread, spread } from "./stats.js";
import { makeTasks } from "./workload.js";

/** One line of the throughput table: a system at one batch size or concurrency. */
export interface ThroughputCase {
  key: string;
  system: "leaseq" | "leaseq-upstash" | "naive" | "bullmq";
  /** Tasks per claim (leaseq, naive); BullMQ fetches one job per moveToActive. */
  batchSize: number;
  /** Concurrent consumers (leaseq, naive: separate connections; BullMQ: worker concurrency). */
  consumers: number;
  /** The serialized payload's size when not the standard 54 bytes (the payload-size row). */
  payloadBytes?: number;
  open(queueName: string): Promise<Contender>;
}

export interface RoundResult {
  tasksPerSec: number;
  enqueueMs: number;
  drainMs: number;
  commandsPerTask: number;
  byCommand: Record<string, number>;
  /** CPU time per task, µs: the redis-server process, and this (client) process. */
  redisCpuUsPerTask: number;
  clientCpuUsPerTask: number;
}

export interface ThroughputResult {
  key: string;
  system: ThroughputCase["system"];
  batchSize: number;
  consumers: number;
  payloadBytes?: number;
  tasks: number;
  tasksPerSec: Spread;
  enqueueTasksPerSec: Spread;
  drainTasksPerSec: Spread;
  commandsPerTask: Spread;
  redisCpuUsPerTask: Spread;
  clientCpuUsPerTask: Spread;
  /** Commands per task by command name, from the median-throughput round. */
  commandsPerTaskByName: Record<string, number>;
}

let queueCounter = 0;

/**
 * One round: a clean server, the system's connections opened (not timed, not counted), then
 * enqueue every task and drain them; the clock and INFO commandstats cover exactly that.
 */
export async function throughputRound(
  redis: BenchRedis,
  item: ThroughputCase,
  taskCount: number,
): Promise<RoundResult> {
  await flush(redis);
  const tasks = makeTasks(0, taskCount, item.payloadBytes);
  const contender = await item.open(`bench-${process.pid}-${++queueCounter}`);
  try {
    const redisCpuBefore = await redisCpuSeconds(redis.admin);
    const clientCpuBefore = process.cpuUsage();
    const measured = await countCommands(redis.admin, async () => {
      const start = performance.now();
      await contender.enqueue(tasks);
      const enqueued = performance.now();
      const acked = await contender.drain();
      const end = performance.now();
      if (acked !== taskCount) throw new Error(`${item.key}: acked ${acked} of ${taskCount} tasks`);
      return { enqueueMs: enqueued - start, drainMs: end - enqueued, totalMs: end - start };
    });
    const clientCpu = process.cpuUsage(clientCpuBefore);
    const redisCpu = (await redisCpuSeconds(redis.admin)) - redisCpuBefore;
    const { enqueueMs, drainMs, totalMs } = measured.result;
    return {
      redisCpuUsPerTask: (redisCpu * 1e6) / taskCount,
      clientCpuUsPerTask: (clientCpu.user + clientCpu.system) / taskCount,
      tasksPerSec: taskCount / (totalMs / 1000),
      enqueueMs,
      drainMs,
      commandsPerTask: measured.total / taskCount,
      byCommand: measured.byCommand,
    };
  } finally {
    await contender.close();
  }
}

/**
 * Every case, `rounds` times, after one warm-up round each (discarded). Rounds are interleaved
 * (round 1 of every case, then round 2, …, in a rotated order), so drift and the neighbours'
 * load fall on every system alike instead of on whichever ran last.
 */
export async function runThroughput(
  redis: BenchRedis,
  cases: ThroughputCase[],
  options: { tasks: number; warmupTasks: number; rounds: number; log: (line: string) => void },
): Promise<ThroughputResult[]> {
  for (const item of cases) await throughputRound(redis, item, options.warmupTasks);
  const rounds = new Map<string, RoundResult[]>(cases.map((item) => [item.key, []]));
  for (let round = 0; round < options.rounds; round++) {
    const order = cases.map((_, i) => cases[(i + round) % cases.length]);
    for (const item of order) {
      const result = await throughputRound(redis, item, options.tasks);
      rounds.get(item.key)?.push(result);
      options.log(
        `  round ${round + 1}/${options.rounds} ${item.key.padEnd(24)} ${Math.round(result.tasksPerSec)
          .toString()
          .padStart(7)} tasks/s  ${result.commandsPerTask.toFixed(2)} commands/task`,
      );
    }
  }
  return cases.map((item) => summarize(item, rounds.get(item.key) ?? [], options.tasks));
}

function summarize(item: ThroughputCase, results: RoundResult[], tasks: number): ThroughputResult {
  const byRate = [...results].sort((a, b) => a.tasksPerSec - b.tasksPerSec);
  const middle = byRate[Math.floor((byRate.length - 1) / 2)];
  const perTask: Record<string, number> = {};
  for (const [command, calls] of Object.entries(middle.byCommand).sort((a, b) => b[1] - a[1])) {
    perTask[command] = calls / tasks;
  }
  return {
    key: item.key,
    system: item.system,
    batchSize: item.batchSize,
    consumers: item.consumers,
    ...(item.payloadBytes === undefined ? {} : { payloadBytes: item.payloadBytes }),
    tasks,
    tasksPerSec: spread(results.map((r) => r.tasksPerSec)),
    enqueueTasksPerSec: spread(results.map((r) => tasks / (r.enqueueMs / 1000))),
    drainTasksPerSec: spread(results.map((r) => tasks / (r.drainMs / 1000))),
    commandsPerTask: spread(results.map((r) => r.commandsPerTask)),
    redisCpuUsPerTask: spread(results.map((r) => r.redisCpuUsPerTask)),
    clientCpuUsPerTask: spread(results.map((r) => r.clientCpuUsPerTask)),
    commandsPerTaskByName: perTask,
  };
}
