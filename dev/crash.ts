import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { PartitionedQueue } from "../shared/partitioned-queue.js";
import type { Queue } from "../shared/queue.js";
import { nodeArgsFor } from "./node-module.js";

/** What the crashed worker held when it was killed. */
export interface CrashReport {
  pid: number;
  claimed: Array<{ id: string; token: string }>;
}

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * Simulates a worker dying mid-batch: enqueues `ids` at the top priority, starts
 * dev/crash-worker.ts in a child process that claims them with a `leaseMs` lease, and SIGKILLs
 * it as soon as it reports its claim. Nothing releases those leases; the reclaimer must recover
 * them once they expire. `env` is how the child reaches Redis (the Upstash endpoint; a partitioned
 * queue's endpoints, its claims taking from every partition).
 */
export async function crashMidBatch(
  queue: Queue | PartitionedQueue,
  ids: string[],
  leaseMs: number,
  env: Record<string, string>,
): Promise<CrashReport> {
  await queue.enqueue(
    ids.map((id, n) => ({ id, type: "crash", payload: { crash: n }, priority: -1000 })),
    { now: Date.now() },
  );
  const child = spawn(
    process.execPath,
    [
      ...nodeArgsFor("./crash-worker", import.meta.url),
      queue.name,
      String(ids.length),
      String(leaseMs),
      String("partitions" in queue ? queue.partitions.length : 1),
    ],
    { cwd: root, env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const report = await firstLine(child.stdout, child.stderr, child);
    const parsed = JSON.parse(report) as CrashReport;
    child.kill("SIGKILL");
    await exited;
    return parsed;
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
}

function firstLine(
  stdout: NodeJS.ReadableStream,
  stderr: NodeJS.ReadableStream,
  child: { once(event: "exit", listener: (code: number | null) => void): unknown },
): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error("the crash worker did not report its claim within 30 s")), 30_000);
    stdout.on("data", (chunk) => {
      out += chunk;
      const end = out.indexOf("\n");
      if (end >= 0) {
        clearTimeout(timer);
        resolve(out.slice(0, end));
      }
    });
    stderr.on("data", (chunk) => {
      err += chunk;
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the crash worker exited (code ${code}) before claiming: ${err.trim().slice(0, 500)}`));
    });
  });
}
