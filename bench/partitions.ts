// `npm run bench -- --partitions`: a partitioned queue (docs/partitions.md) over N redis-servers, one
// partition each, against the same queue of one partition: tasks a second, commands per task (every
// server's INFO commandstats), and each server's share of the Redis CPU (used_cpu_user + sys).
// Rounds of N = 1, 2 and 4 interleave, after one warm-up round each. The producer sends ENQUEUE_BATCH
// tasks per partition in each enqueue call (so every partition's script call carries as many tasks
// as the unpartitioned queue's), the consumers claim HEADLINE_BATCH at a time from one partition.
// Usage: npm run bench -- --partitions [--tasks 10000] [--rounds 3]; merged into bench/results.json
// (`partitions`).
import { cpus } from "node:os";
import { PartitionedQueue } from "../shared/partitioned-queue.js";
import { TcpStore } from "../shared/stores/tcp.js";
import { type Contender, ENQUEUE_BATCH } from "./contender.js";
import { type BenchRedis, commandCalls, commandDelta, redisCpuSeconds, startBenchRedis } from "./redis.js";
import { mergeResults } from "./results-file.js";
import { HEADLINE_BATCH } from "./settings.js";
import { median, round } from "./stats.js";
import { num, table } from "./table.js";
import { type BenchTask, chunks, makeTasks } from "./workload.js";

export const PARTITION_COUNTS = [1, 2, 4] as const;
export const CONSUMERS = 4;

export interface PartitionsOptions {
  tasks: number;
  warmupTasks: number;
  rounds: number;
}

export function parsePartitionsArgs(argv: readonly string[]): PartitionsOptions {
  const value = (flag: string, fallback: number) => {
    const at = argv.indexOf(flag);
    if (at < 0) return fallback;
    const n = Number(argv[at + 1]);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${flag} must be a positive integer, not ${argv[at + 1]}`);
    return n;
  };
  const tasks = value("--tasks", 10_000);
  return { tasks, warmupTasks: Math.min(2_000, Math.max(200, Math.round(tasks / 5))), rounds: value("--rounds", 3) };
}

/** One round of one partition count. */
export interface PartitionsRound {
  tasksPerSec: number;
  commandsPerTask: number;
  /** Each server's Redis CPU over the round, µs per task of the whole queue. */
  serverCpuUsPerTask: number[];
  /** This process's CPU (the producer and every consumer), µs per task. */
  clientCpuUsPerTask: number;
}

export interface PartitionsRow {
  partitions: number;
  tasks: number;
  rounds: PartitionsRound[];
}

/** A partitioned queue over the first `n` servers: a producer and CONSUMERS consumers, each its own stores. */
async function partitionedContender(servers: readonly BenchRedis[], n: number, name: string): Promise<Contender> {
  const open = () => {
    const stores = servers.slice(0, n).map((server) => TcpStore.fromUrl(server.url));
    return { stores, queue: new PartitionedQueue(stores, { name, partitions: n }) };
  };
  const producer = open();
  const consumers = Array.from({ length: CONSUMERS }, open);
  await producer.queue.configure();
  // Connects and loads the scripts on every server before the round.
  await Promise.all([producer, ...consumers].map(({ queue }) => queue.stats({ now: Date.now() })));
  const toInput = (task: BenchTask) => ({
    id: task.id,
    type: task.type,
    priority: task.priority,
    payload: task.payload,
  });
  return {
    async enqueue(tasks) {
      for (const batch of chunks(tasks, ENQUEUE_BATCH * n)) {
        const results = await producer.queue.enqueue(batch.map(toInput), { now: Date.now() });
        if (results.some((result) => result.status !== "ok")) throw new Error("partitions: an enqueue was refused");
      }
    },
    async drain() {
      const counts = await Promise.all(
        consumers.map(async ({ queue }) => {
          let acked = 0;
          for (;;) {
            // A claim goes on to a second partition with work when its first is empty.
            let claimed = await queue.claim({ count: HEADLINE_BATCH, now: Date.now() });
            let from: { ack: (typeof queue)["ack"] } = queue;
            // Both partitions it tried empty: the others asked in turn, each by itself, before giving
            // up (a worker would wait for a wake-up naming one).
            for (let k = 0; claimed.length === 0 && k < n; k++) {
              claimed = await queue.partitions[k].claim({ count: HEADLINE_BATCH, now: Date.now() });
              from = queue.partitions[k];
            }
            if (claimed.length === 0) return acked;
            for (const task of claimed) JSON.parse(task.payload);
            const results = await from.ack(claimed, { now: Date.now() });
            if (results.some((result) => result.status !== "ok")) throw new Error("partitions: an ack was refused");
            acked += claimed.length;
          }
        }),
      );
      return counts.reduce((a, b) => a + b, 0);
    },
    async close() {
      await Promise.all([producer, ...consumers].flatMap(({ stores }) => stores.map((store) => store.close())));
    },
  };
}

let counter = 0;

async function partitionsRound(servers: readonly BenchRedis[], n: number, tasks: number): Promise<PartitionsRound> {
  await Promise.all(servers.map((server) => server.admin.flushall("SYNC")));
  const contender = await partitionedContender(servers, n, `bench-p${process.pid}-${++counter}`);
  try {
    const list = makeTasks(0, tasks);
    const cpuBefore = await Promise.all(servers.map((server) => redisCpuSeconds(server.admin)));
    const callsBefore = await Promise.all(servers.map((server) => commandCalls(server.admin)));
    const clientBefore = process.cpuUsage();
    const start = performance.now();
    await contender.enqueue(list);
    const acked = await contender.drain();
    const seconds = (performance.now() - start) / 1000;
    const client = process.cpuUsage(clientBefore);
    if (acked !== tasks) throw new Error(`partitions ${n}: acked ${acked} of ${tasks}`);
    const callsAfter = await Promise.all(servers.map((server) => commandCalls(server.admin)));
    const cpuAfter = await Promise.all(servers.map((server) => redisCpuSeconds(server.admin)));
    // Each server's INFO cpu and the first INFO commandstats fall inside the window: 2 INFO each.
    const commands = servers.reduce((total, _, i) => total + commandDelta(callsBefore[i], callsAfter[i], 2).total, 0);
    return {
      tasksPerSec: tasks / seconds,
      commandsPerTask: commands / tasks,
      serverCpuUsPerTask: servers.slice(0, n).map((_, i) => ((cpuAfter[i] - cpuBefore[i]) * 1e6) / tasks),
      clientCpuUsPerTask: (client.user + client.system) / tasks,
    };
  } finally {
    await contender.close();
  }
}

/** N redis-servers (the largest count), every count's rounds interleaved after a warm-up each. */
export async function runPartitions(options: PartitionsOptions, log: (line: string) => void): Promise<PartitionsRow[]> {
  const servers = await Promise.all(Array.from({ length: Math.max(...PARTITION_COUNTS) }, () => startBenchRedis()));
  try {
    for (const n of PARTITION_COUNTS) await partitionsRound(servers, n, options.warmupTasks);
    const rows: PartitionsRow[] = PARTITION_COUNTS.map((n) => ({ partitions: n, tasks: options.tasks, rounds: [] }));
    for (let r = 0; r < options.rounds; r++) {
      for (let i = 0; i < rows.length; i++) {
        const row = rows[(i + r) % rows.length];
        const result = await partitionsRound(servers, row.partitions, options.tasks);
        row.rounds.push(result);
        log(
          `  round ${r + 1}/${options.rounds} partitions ${row.partitions}: ${Math.round(result.tasksPerSec)} tasks/s, ` +
            `${num(result.commandsPerTask)} commands/task, Redis CPU µs/task per server ${result.serverCpuUsPerTask.map((us) => num(us)).join(", ")}, client ${num(result.clientCpuUsPerTask)}`,
        );
      }
    }
    return rows;
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

/** A row's figures: medians over its rounds. */
export function summarize(row: PartitionsRow) {
  const tasksPerSec = median(row.rounds.map((r) => r.tasksPerSec));
  const commandsPerTask = median(row.rounds.map((r) => r.commandsPerTask));
  const perServer = row.rounds[0].serverCpuUsPerTask.map((_, i) =>
    median(row.rounds.map((r) => r.serverCpuUsPerTask[i])),
  );
  const total = perServer.reduce((a, b) => a + b, 0);
  return {
    partitions: row.partitions,
    tasksPerSec,
    commandsPerTask,
    redisCpuUsPerTask: total,
    clientCpuUsPerTask: median(row.rounds.map((r) => r.clientCpuUsPerTask)),
    /** Each server's share of the queue's Redis CPU (1/N each when spread evenly). */
    cpuShares: perServer.map((us) => (total === 0 ? 0 : us / total)),
    /**
     * What the N servers could run if Redis were the only limit, a core each: the queue's tasks a
     * second at which the busiest server's CPU per task fills one second a second (N × one server's
     * tasks a second when the work is spread evenly).
     */
    ceilingTasksPerSec: 1e6 / Math.max(...perServer),
  };
}

export function renderPartitions(rows: readonly PartitionsRow[]): string {
  const summaries = rows.map(summarize);
  const one = summaries.find((s) => s.partitions === 1);
  const lines = [
    table(
      [
        "partitions",
        "tasks/s (median)",
        "vs 1",
        "commands/task",
        "vs 1",
        "Redis CPU µs/task",
        "each server's share",
        "ceiling tasks/s",
        "client CPU µs/task",
      ],
      summaries.map((s) => [
        String(s.partitions),
        num(s.tasksPerSec),
        one ? `${num(s.tasksPerSec / one.tasksPerSec)}x` : "n/a",
        num(s.commandsPerTask),
        one ? `${num(s.commandsPerTask / one.commandsPerTask)}x` : "n/a",
        num(s.redisCpuUsPerTask),
        s.cpuShares.map((share) => `${num(share * 100, 2)}%`).join(" "),
        num(s.ceilingTasksPerSec),
        num(s.clientCpuUsPerTask),
      ]),
    ),
    "",
    `The machine: ${cpus().length} cores for the benchmark process and every redis-server; the ceiling assumes a core per server. ` +
      "The client CPU is this one process's (the producer and every consumer): a core spent at that many µs a task bounds the tasks a second before any server does.",
  ];
  return lines.join("\n");
}

export function partitionsJson(rows: readonly PartitionsRow[], options: PartitionsOptions) {
  return {
    measuredBy:
      "one redis-server per partition; tasks/s over enqueue + drain; commands from every server's INFO commandstats; Redis CPU from each server's used_cpu_user + used_cpu_sys",
    tasks: options.tasks,
    rounds: options.rounds,
    consumers: CONSUMERS,
    claimBatch: HEADLINE_BATCH,
    enqueueBatchPerPartition: ENQUEUE_BATCH,
    cores: cpus().length,
    rows: rows.map((row) => {
      const s = summarize(row);
      return {
        partitions: s.partitions,
        tasksPerSec: Math.round(s.tasksPerSec),
        commandsPerTask: round(s.commandsPerTask),
        redisCpuUsPerTask: round(s.redisCpuUsPerTask),
        cpuShares: s.cpuShares.map((share) => round(share)),
        ceilingTasksPerSec: Math.round(s.ceilingTasksPerSec),
        clientCpuUsPerTask: round(s.clientCpuUsPerTask),
        rounds: row.rounds.map((r) => ({
          tasksPerSec: Math.round(r.tasksPerSec),
          commandsPerTask: round(r.commandsPerTask),
          serverCpuUsPerTask: r.serverCpuUsPerTask.map((us) => round(us)),
          clientCpuUsPerTask: round(r.clientCpuUsPerTask),
        })),
      };
    }),
  };
}

export async function partitionsMode(argv: readonly string[], log: (line: string) => void): Promise<void> {
  const options = parsePartitionsArgs(argv);
  log(`Partitions: ${options.tasks} tasks per round, ${options.rounds} rounds, N = ${PARTITION_COUNTS.join(", ")}`);
  const rows = await runPartitions(options, log);
  log("");
  log(renderPartitions(rows));
  mergeResults({ partitions: partitionsJson(rows, options) });
}
