import { spawn } from "node:child_process";

/** What a script printed first (one JSON line) and whether, and how soon after, it exited by itself. */
export interface ScriptExit {
  firstLine: unknown;
  /** From the first line to a clean exit, ms; undefined when it had not exited `waitMs` after it. */
  exitAfterMs: number | undefined;
  stderr: string;
}

/**
 * Runs `script` (TypeScript, through tsx) with `env`; once it printed its first line it has `waitMs`
 * to exit by itself before it is killed: a process kept alive by an open handle shows as undefined.
 */
export function runUntilExit(
  script: string,
  env: Record<string, string | undefined>,
  waitMs: number,
): Promise<ScriptExit> {
  const child = spawn(process.execPath, ["--import", "tsx", script], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let printedAt: number | undefined;
  let killer: NodeJS.Timeout | undefined;
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    if (printedAt === undefined && stdout.includes("\n")) {
      printedAt = Date.now();
      killer = setTimeout(() => child.kill("SIGKILL"), waitMs);
    }
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      clearTimeout(killer);
      const line = stdout.split("\n")[0];
      const exited = signal === null && code === 0 && printedAt !== undefined;
      resolve({
        firstLine: line ? JSON.parse(line) : undefined,
        exitAfterMs: exited ? Date.now() - (printedAt ?? 0) : undefined,
        stderr,
      });
    });
  });
}
