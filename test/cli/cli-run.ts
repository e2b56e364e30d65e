import { spawn } from "node:child_process";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { format } from "node:util";
import { inject } from "vitest";
import { main } from "../../cli/main.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The in-process runs of this test file, one at a time: each swaps the process's env and streams. */
let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs the `leaseq` command in this process: `main(argv)` with exactly `env` plus PATH as
 * process.env (no REDIS_URL or LEASEQ_QUEUE leaks in from the test process), `input` as stdin,
 * and stdout, stderr and the console captured; resolves to its exit code and output, as the bin
 * would give them (`runBin` runs the built bin itself, for the one test that spawns it).
 */
export function runCli(args: string[], env: Record<string, string>, input?: string): Promise<CliRun> {
  const run = queue.then(() => inProcess(args, { PATH: process.env.PATH ?? "", ...env }, input));
  queue = run.catch(() => {});
  return run;
}

async function inProcess(args: string[], env: Record<string, string>, input: string | undefined): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const writer = (append: (text: string) => void) =>
    ((chunk: unknown, ...rest: unknown[]) => {
      append(typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString());
      const done = rest.find((arg) => typeof arg === "function") as (() => void) | undefined;
      done?.();
      return true;
    }) as typeof process.stdout.write;
  const saved = {
    env: process.env,
    stdin: Object.getOwnPropertyDescriptor(process, "stdin") as PropertyDescriptor,
    out: process.stdout.write,
    err: process.stderr.write,
    log: console.log,
    info: console.info,
    error: console.error,
    warn: console.warn,
    exitCode: process.exitCode,
  };
  process.env = { ...env };
  Object.defineProperty(process, "stdin", { value: Readable.from([input ?? ""]), configurable: true, writable: true });
  process.stdout.write = writer((text) => {
    stdout += text;
  });
  process.stderr.write = writer((text) => {
    stderr += text;
  });
  console.log = console.info = (...values: unknown[]) => {
    stdout += `${format(...values)}\n`;
  };
  console.error = console.warn = (...values: unknown[]) => {
    stderr += `${format(...values)}\n`;
  };
  process.exitCode = undefined;
  try {
    const code = await main(["node", "leaseq", ...args]);
    return { code, stdout, stderr };
  } finally {
    process.env = saved.env;
    Object.defineProperty(process, "stdin", saved.stdin);
    process.stdout.write = saved.out;
    process.stderr.write = saved.err;
    Object.assign(console, { log: saved.log, info: saved.info, error: saved.error, warn: saved.warn });
    process.exitCode = saved.exitCode;
  }
}

/**
 * Runs the built `leaseq` bin (its source bundled once for the run: test/helpers/global-setup.ts)
 * in a process of its own, as a user's shell does.
 */
export function runBin(args: string[], env: Record<string, string>, input?: string): Promise<CliRun> {
  return runNode([inject("cliBundle"), ...args], { PATH: process.env.PATH ?? "", ...env }, input);
}

/** Runs `node ...argv` from the repository root with exactly `env`; collects its output and exit code. */
export function runNode(argv: string[], env: Record<string, string | undefined>, input?: string): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: root, env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}
