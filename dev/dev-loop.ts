// What makes `leaseq dev` a development loop: the worker's budget taken from the declaration as
// the construct takes it, every failed invocation told, and the task module reloaded on change.
import { type FSWatcher, watch } from "node:fs";
import { dirname, resolve } from "node:path";
import { defaultWorkerTimeoutMs, type TaskDeclaration, timeoutProblems } from "../functions/tasks.js";
import { redact } from "../shared/text.js";
import type { FunctionRole, Stack } from "./stack.js";

/**
 * The worker timeout to run `tasks` with: `givenMs`, or the construct's default of 5 minutes, raised
 * to whole seconds that fit the longest lease plus the margin. A declaration no Lambda timeout can
 * hold (or that `givenMs` cannot) is refused with the construct's own words.
 */
export function workerBudget(
  tasks: TaskDeclaration,
  givenMs: number | undefined,
): { timeoutMs: number } | { problems: string } {
  const timeoutMs = givenMs ?? defaultWorkerTimeoutMs(tasks);
  const problems = timeoutProblems(tasks, timeoutMs);
  if (problems.length === 0) return { timeoutMs };
  return {
    problems: [
      `the LeaseQueue construct would refuse this declaration${givenMs === undefined ? "" : ` with --worker-timeout-ms ${givenMs}`}:`,
      `LeaseQueue: ${problems.length} invalid prop(s):`,
      ...problems.map((problem) => `  - ${problem}`),
    ].join("\n"),
  };
}

/**
 * Writes each failed invocation to `out`, in leaseq's words: the first of a kind at once, the same
 * again at most every 10 s with how often it happened since.
 */
export function invocationFailures(out: NodeJS.WritableStream): (role: FunctionRole, error: unknown) => void {
  const seen = new Map<string, { at: number; since: number }>();
  return (role, error) => {
    const text = `the ${role} invocation failed: ${redact(error instanceof Error ? `${error.name}: ${error.message}` : String(error))}`;
    const now = Date.now();
    const last = seen.get(text);
    if (last && now - last.at < 10_000) {
      last.since++;
      return;
    }
    const again =
      last && last.since > 0 ? ` (${last.since + 1} times in the last ${Math.round((now - last.at) / 1000)} s)` : "";
    seen.set(text, { at: now, since: 0 });
    out.write(`${text}${again}\n`);
  };
}

/**
 * Reloads the task module when a file in its directory (or below) changes: the stack runs the new
 * declaration from its next invocation. A module that fails to load, or a declaration the construct
 * would refuse, is reported and the previous one keeps running.
 */
export function watchTasks(module: string, stack: Stack, timeoutMs: number, name: string): { close(): void } {
  const directory = dirname(resolve(module));
  let timer: NodeJS.Timeout | undefined;
  const reload = async () => {
    try {
      const tasks = await (await import("./tasks-module.js")).loadTasksModule(module);
      const problems = timeoutProblems(tasks, timeoutMs);
      if (problems.length > 0) {
        throw new Error(
          `${problems.join("; ")} (this run's worker timeout is ${timeoutMs / 1000} s: restart to take a longer lease)`,
        );
      }
      stack.reload(tasks);
      process.stderr.write(`${name}: reloaded ${module}: ${Object.keys(tasks.types).join(", ")}\n`);
    } catch (error) {
      process.stderr.write(`${name}: kept the previous task types: ${redact((error as Error).message)}\n`);
    }
  };
  const watcher: FSWatcher = watch(directory, { recursive: true }, (_event, file) => {
    // The module's own compiled copy is written beside it while it loads: not a change.
    if (!file || /\.leaseq-[\d-]+\.mjs$/.test(file) || file.includes("node_modules")) return;
    clearTimeout(timer);
    timer = setTimeout(() => void reload(), 200);
  });
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
