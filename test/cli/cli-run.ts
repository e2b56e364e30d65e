import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the `leaseq` command from its source, bundled once for the run (test/helpers/global-setup.ts;
 * `npm run cli` runs the same source through tsx, test/package the compiled one from the packed
 * tarball) with exactly `env` plus PATH, so no REDIS_URL or LEASEQ_QUEUE leaks in from the test process.
 */
export function runCli(args: string[], env: Record<string, string>, input?: string): Promise<CliRun> {
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
