// How much work Redis does per task, counted rather than timed: runs a redis-server of its own under
// valgrind's callgrind, and for each workload (batch-20 claims, 4 consumers; then the same tasks over
// 1,000 groups of concurrency 1) enqueues and drains a 2,000-task warm-up, zeroes the counters, and
// counts the instructions Redis executes for the measured round's enqueue and its claim+ack drain
// (callgrind_control -z, then -d after each phase). Instructions do not move with the machine's pace
// as the wall clock does; what noise remains comes from timing-dependent paths (serverCron, how the
// consumers' claims interleave). Needs valgrind and redis-server on PATH; takes minutes.
// Usage: node --import tsx bench/callgrind.ts [tasks] (default 10,000).
import { TcpStore } from "../shared/stores/tcp.js";
import { leaseqContender } from "./leaseq.js";
import { num, table } from "./table.js";
import { startCallgrindRedis } from "./valgrind-redis.js";
import { makeTasks } from "./workload.js";

const tasks = Number(process.argv[2] ?? 10_000);
if (!Number.isInteger(tasks) || tasks <= 0) throw new Error(`tasks must be a positive integer, not ${process.argv[2]}`);
const WARMUP_TASKS = 2_000;
const GROUPS = 1_000;

const redis = await startCallgrindRedis();
process.once("SIGINT", () => void redis.stop().finally(() => process.exit(130)));
const { url, admin } = redis;
try {
  const rows: string[][] = [];
  const raw: string[][] = [];
  for (const [workload, groups] of [
    ["ungrouped", undefined],
    [`grouped (${GROUPS} groups)`, GROUPS],
  ] as const) {
    const open = (queueName: string) =>
      leaseqContender({ openStore: () => TcpStore.fromUrl(url), queueName, batchSize: 20, consumers: 4, groups });
    // Warm-up: the scripts loaded and compiled, Redis's allocator and dicts grown, untouched by the count.
    await admin.flushall("SYNC");
    const warm = await open(`callgrind-warmup-${groups ?? 0}`);
    await warm.enqueue(makeTasks(0, WARMUP_TASKS));
    await warm.drain();
    await warm.close();
    await admin.flushall("SYNC");
    // A fresh queue for the measured round, its connections opened (and, grouped, configured) before the zero.
    const contender = await open(`callgrind-${groups ?? 0}`);
    const enqueue = await redis.count(() => contender.enqueue(makeTasks(0, tasks)));
    let drained = 0;
    const drain = await redis.count(async () => {
      drained = await contender.drain();
    });
    await contender.close();
    if (drained !== tasks) throw new Error(`${workload}: drained ${drained} of ${tasks} tasks`);
    const k = (instructions: number) => num(instructions / tasks / 1000);
    rows.push([workload, String(tasks), k(enqueue + drain), k(enqueue), k(drain)]);
    const ir = (instructions: number) => instructions.toLocaleString("en-US");
    raw.push([workload, ir(enqueue), ir(drain), ir(enqueue + drain)]);
  }
  console.log(`Redis instructions (callgrind Ir), batch 20, 4 consumers, after a ${WARMUP_TASKS}-task warm-up:\n`);
  console.log(
    table(["workload", "tasks", "Redis instructions per task (k)", "enqueue k/task", "drain (claim+ack) k/task"], rows),
  );
  console.log("\nRaw counts (instructions in Redis, every thread, from the zero to the dump):\n");
  console.log(table(["workload", "enqueue Ir", "drain Ir", "total Ir"], raw));
} catch (error) {
  console.error(error);
  console.error(redis.logTail());
  process.exitCode = 1;
} finally {
  await redis.stop();
}
