// A redis-server of the benchmarks' own under valgrind's callgrind: it counts the instructions
// Redis executes for a piece of work (zero, work, dump), which do not move with the machine's pace as
// the wall clock does. Used by bench/instructions.ts (npm run bench -- --instructions, and
// bench/callgrind.ts) and bench/flow-control.ts --callgrind. Needs valgrind and redis-server on PATH.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { pingRedis } from "../dev/redis-server.js";

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
async function countIn(dir: string, pid: number, work: () => Promise<unknown>): Promise<number> {
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

/** A redis-server under callgrind: its URL, an admin connection, `count(work)`, and `stop()`. */
export interface CallgrindRedis {
  url: string;
  admin: Redis;
  /** The instructions Redis executes for `work` (every thread, from a zero to a dump). */
  count(work: () => Promise<unknown>): Promise<number>;
  /** The last lines of valgrind's log (for an error report). */
  logTail(): string;
  stop(): Promise<void>;
}

export async function startCallgrindRedis(): Promise<CallgrindRedis> {
  const dir = mkdtempSync(join(tmpdir(), "leaseq-callgrind-"));
  let server: ChildProcess | undefined;
  let admin: Redis | undefined;
  /** Stops the valgrind redis-server (SIGTERM, then SIGKILL after 30 s) and removes its temp dir; once. */
  let cleaning: Promise<void> | undefined;
  /**
   * The last resort when the process ends without `stop()` (process.exit on an error, an uncaught
   * exception): the server is killed, so no valgrind redis-server outlives the benchmark.
   */
  const killOnExit = () => {
    if (server && server.exitCode === null && server.signalCode === null) server.kill("SIGKILL");
    if (process.env.LEASEQ_CALLGRIND_KEEP !== "1") rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", killOnExit);
  const stop = (): Promise<void> => {
    cleaning ??= (async () => {
      process.removeListener("exit", killOnExit);
      admin?.disconnect();
      const child = server;
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
        await exited;
        clearTimeout(timer);
      }
      // LEASEQ_CALLGRIND_KEEP=1 keeps the dumps, for callgrind_annotate to say where the instructions went.
      if (process.env.LEASEQ_CALLGRIND_KEEP === "1") console.error(`callgrind dumps kept in ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    })();
    return cleaning;
  };
  const logTail = () => {
    try {
      return readFileSync(join(dir, "valgrind.log"), "utf8").split("\n").slice(-20).join("\n");
    } catch {
      return "";
    }
  };
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
    const connected = admin;
    return { url, admin: connected, count: (work) => countIn(dir, pid, work), logTail, stop };
  } catch (error) {
    const tail = logTail();
    await stop();
    throw new Error(`${(error as Error).message}${tail ? `\n${tail}` : ""}`);
  }
}
