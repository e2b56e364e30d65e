// How much work Redis does per task, counted rather than timed: runs a redis-server of its own under
// valgrind's callgrind, and for each workload (batch-20 claims, 4 consumers; then the same tasks over
// 1,000 groups of concurrency 1) enqueues and drains a 2,000-task warm-up, zeroes the counters, and
// counts the instructions Redis executes for the measured round's enqueue and its claim+ack drain
// (callgrind_control -z, then -d after each phase). Instructions do not move with the machine's pace
// as the wall clock does; what noise remains comes from timing-dependent paths (serverCron, how the
// consumers' claims interleave). Needs valgrind and redis-server on PATH; takes minutes.
// Usage: node --import tsx bench/callgrind.ts [tasks] (default 10,000).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { pingRedis } from "../dev/redis-server.js";
import { TcpStore } from "../shared/stores/tcp.js";
import { leaseqContender } from "./leaseq.js";
import { num, table } from "./table.js";
import { makeTasks } from "./workload.js";

const tasks = Number(process.argv[2] ?? 10_000);
if (!Number.isInteger(tasks) || tasks <= 0) throw new Error(`tasks must be a positive integer, not ${process.argv[2]}`);
const WARMUP_TASKS = 2_000;
const GROUPS = 1_000;
const run = promisify(execFile);

/** The first port of 6390-6399 nothing listens on. */
async function freeBenchPort(): Promise<number> {
  for (let port = 6390; port <= 6399; port++) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
    });
    if (free && !(await pingRedis("127.0.0.1", port, 200))) return port;
  }
  throw new Error("no free port in 6390-6399");
}

/** callgrind_control answers 0 even when it fails, so its output is checked instead. */
async function callgrindControl(flag: "-z" | "-d", pid: number): Promise<void> {
  const { stdout, stderr } = await run("callgrind_control", [flag, String(pid)]);
  if (!/OK/.test(stdout)) throw new Error(`callgrind_control ${flag} ${pid}: ${stdout}${stderr}`);
}

/** The part numbers of the dumps written so far (callgrind.out.<pid>.<part>). */
function dumpParts(dir: string, pid: number): number[] {
  const pattern = new RegExp(`^callgrind\\.out\\.${pid}\\.(\\d+)$`);
  return readdirSync(dir).flatMap((name) => {
    const match = pattern.exec(name);
    return match ? [Number(match[1])] : [];
  });
}

/**
 * Zeroes the counters, runs `work`, dumps, and reads the instructions of that dump (a new part): its
 * `summary:` line, every thread's instructions since the zero (what callgrind_annotate reports). Not
 * `totals:`, the sum of the file's cost lines: after a zero that follows work since the last dump it
 * also holds some cost from before the zero (about 1.5M instructions here).
 */
async function count(dir: string, pid: number, work: () => Promise<unknown>): Promise<number> {
  await callgrindControl("-z", pid);
  await work();
  const before = Math.max(0, ...dumpParts(dir, pid));
  await callgrindControl("-d", pid);
  const part = Math.max(0, ...dumpParts(dir, pid));
  if (part <= before) throw new Error(`callgrind wrote no new dump (last part ${before})`);
  const summary = /^summary:\s*(\d+)/m.exec(readFileSync(join(dir, `callgrind.out.${pid}.${part}`), "utf8"));
  if (!summary) throw new Error(`callgrind.out.${pid}.${part} has no summary: line`);
  return Number(summary[1]);
}

const dir = mkdtempSync(join(tmpdir(), "leaseq-callgrind-"));
let server: ChildProcess | undefined;
let admin: Redis | undefined;
/** Stops the valgrind redis-server (SIGTERM, then SIGKILL after 30 s) and removes its temp dir; once. */
let cleaning: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    admin?.disconnect();
    const child = server;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  })();
  return cleaning;
}
process.once("SIGINT", () => void cleanUp().finally(() => process.exit(130)));

try {
  const port = await freeBenchPort();
  const log = openSync(join(dir, "valgrind.log"), "w");
  server = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      `--callgrind-out-file=${join(dir, "callgrind.out.%p")}`,
      "redis-server",
      ...["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
    ],
    { stdio: ["ignore", log, log] },
  );
  const failed = new Promise<never>((_, reject) => {
    server?.once("error", reject);
    server?.once("exit", (code) => reject(new Error(`valgrind exited (${code}); see its log`)));
  });
  failed.catch(() => {}); // raced below; never left unhandled
  // valgrind makes startup slow: up to 60 s for the first PONG.
  const deadline = Date.now() + 60_000;
  while (!(await Promise.race([pingRedis("127.0.0.1", port, 1_000), failed]))) {
    if (Date.now() > deadline) throw new Error(`redis-server under valgrind did not answer on port ${port} in 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  // valgrind runs the program in its own process: the child's pid is redis-server's.
  const pid = server.pid as number;
  const url = `redis://127.0.0.1:${port}`;
  admin = new Redis(url, { maxRetriesPerRequest: 1 });

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
    const enqueue = await count(dir, pid, () => contender.enqueue(makeTasks(0, tasks)));
    let drained = 0;
    const drain = await count(dir, pid, async () => {
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
  try {
    console.error(readFileSync(join(dir, "valgrind.log"), "utf8").split("\n").slice(-20).join("\n"));
  } catch {}
  process.exitCode = 1;
} finally {
  await cleanUp();
}
