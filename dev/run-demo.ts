import { setTimeout as sleep } from "node:timers/promises";
import { DEAD_LETTER_ATTRIBUTES } from "../functions/dead-letter.js";
import { liveOutput, Throughput } from "../shared/live.js";
import type { Queue } from "../shared/queue.js";
import { redact } from "../shared/text.js";
import type { QueueStats } from "../shared/types.js";
import { type CrashReport, crashMidBatch } from "./crash.js";
import { type DemoWorkload, demoWorkload, sendWorkload } from "./demo.js";
import { type Stack, WORKER_FUNCTION } from "./stack.js";
import { type DemoSummary, finishedTasks, formatSummary, summarize } from "./summary.js";
import { renderView } from "./view.js";

export interface DemoRunOptions {
  queue: string;
  startedAt: number;
  demo: boolean;
  demoTasks: number;
  crashTasks: number;
  crashLeaseMs: number;
  slowMs: number;
  viewIntervalMs: number;
  exitWhenDrained: boolean;
  timeoutMs: number;
  out: NodeJS.WriteStream;
  interactive: boolean;
}

/** How a run ended: the JSON summary, its text form, and the exit code. */
export interface RunResult {
  json: DemoSummary;
  text: string;
  exitCode: number;
}

export interface DemoRun {
  /** Ends the run (Ctrl-C): the stack stops cleanly and `finished` resolves with the summary. */
  stop(): void;
  finished: Promise<RunResult>;
}

/**
 * Runs the stack with the demo (unless `demo` is false) and the live view until stopped, or,
 * with `exitWhenDrained`, until every demo task is DONE or FAILED (exit 0) or `timeoutMs` passes
 * (exit 1). Then it stops the stack in order: no new work, running invocations release what they
 * have not started, the crashed worker's leases are released, and only then Redis goes away.
 */
export function runDemo(stack: Stack, options: DemoRunOptions): DemoRun {
  const stopper = new AbortController();
  const finished = (async (): Promise<RunResult> => {
    const output = liveOutput(options.out, options.interactive);
    // Node prints warnings (e.g. the AWS SDK's Node version notice) straight to stderr, which
    // would tear the redrawn view; show them above it instead.
    const defaultWarningPrinters = process.listeners("warning");
    process.removeAllListeners("warning");
    const onWarning = (warning: Error) => output.note(`warning: ${warning.message}`);
    process.on("warning", onWarning);
    let workload: DemoWorkload | undefined;
    let prefix = "";
    let crash: { report: CrashReport; ids: string[] } | undefined;
    let messages = 0;
    let drained = false;
    let failure: unknown;
    try {
      if (options.demo) {
        prefix = Date.now().toString(36);
        const ids = Array.from({ length: options.crashTasks }, (_, n) => `${prefix}-crash-${n + 1}`);
        const report = await crashMidBatch(stack.logical, ids, options.crashLeaseMs, stack.connectionEnv);
        crash = { report, ids };
        output.note(
          `crash: a worker (pid ${report.pid}) claimed ${report.claimed.length} tasks and was killed with SIGKILL; the reclaimer recovers them once their ${options.crashLeaseMs} ms leases expire`,
        );
        workload = demoWorkload(options.demoTasks - options.crashTasks, prefix, options.slowMs);
      }
      stack.run();
      if (workload) messages = sendWorkload(stack.sqs, workload.tasks, prefix);
      const total = (workload?.tasks.length ?? 0) + (crash?.ids.length ?? 0);
      const throughput = new Throughput();
      for (;;) {
        const now = Date.now();
        const stats = (await stack.logical.stats({ now })).total;
        const finishedCount = stats.done + stats.failed;
        output.update(
          renderView({
            queue: options.queue,
            elapsedMs: now - options.startedAt,
            stats,
            tasksPerSecond: throughput.sample(finishedCount, now),
            demo: workload ? { total, finished: Math.min(finishedCount, total) } : undefined,
            crash: crash ? { pid: crash.report.pid, claimed: crash.report.claimed.length } : undefined,
            sqs: stack.sqs.stats(now),
            wake: stack.wake.stats(now),
            stack: stack.counts,
            drainInvocations: stack.lambdaApi.invocations()[WORKER_FUNCTION] ?? 0,
          }),
        );
        if (options.exitWhenDrained && (await isDrained(stack, stats, workload, crash?.ids))) {
          drained = true;
          break;
        }
        if (options.exitWhenDrained && now - options.startedAt > options.timeoutMs) {
          output.note(`not drained after ${options.timeoutMs} ms: giving up`);
          break;
        }
        const slept = await sleep(options.viewIntervalMs, true, { signal: stopper.signal }).catch(() => false);
        if (!slept) break;
      }
    } catch (error) {
      failure = error;
    } finally {
      output.done();
      process.off("warning", onWarning);
      for (const printer of defaultWarningPrinters) process.on("warning", printer);
    }
    await stack.stopWork();
    if (crash) {
      // Token-fenced: a no-op for leases the reclaimer already took back, a release for the rest.
      await stack.logical.release(crash.report.claimed, { now: Date.now() }).catch(() => {});
    }
    const result = await buildResult(stack, options, { workload, crash, messages, drained, failure });
    await stack.close();
    return result;
  })();
  return { stop: () => stopper.abort(), finished };
}

async function isDrained(
  stack: Stack,
  stats: QueueStats,
  workload: DemoWorkload | undefined,
  crashIds: string[] | undefined,
): Promise<boolean> {
  if (stats.ready + stats.scheduled + stats.leased > 0) return false;
  if (!workload) return true;
  const ids = [...workload.tasks.map((task) => task.id), ...(crashIds ?? [])];
  if (stats.done + stats.failed < ids.length) return false;
  // Counts can include tasks from an earlier run on a reused --queue: check every id.
  const finished = await finishedTasks(stack.logical.partitions);
  return ids.every((id) => finished.has(id));
}

async function buildResult(
  stack: Stack,
  options: DemoRunOptions,
  run: {
    workload: DemoWorkload | undefined;
    crash: { report: CrashReport; ids: string[] } | undefined;
    messages: number;
    drained: boolean;
    failure: unknown;
  },
): Promise<RunResult> {
  const sqs = stack.sqs.stats();
  const figures = await stack.logical.stats({ now: Date.now() });
  const stats = figures.total;
  const json = summarize({
    queue: options.queue,
    drained: run.drained,
    ids: [...(run.workload?.tasks.map((task) => task.id) ?? []), ...(run.crash?.ids ?? [])],
    finished: await finishedTasks(stack.logical.partitions),
    reclaimed: stack.counts.reclaimed,
    durationMs: Date.now() - options.startedAt,
    poison: run.workload ? await inspectAnywhere(stack.logical.partitions, run.workload.poisonId) : undefined,
    poisonId: run.workload?.poisonId,
    crash: run.crash ? { pid: run.crash.report.pid, ids: run.crash.ids } : undefined,
    sqs: {
      messages: run.messages,
      intakeInvocations: sqs.invocations,
      invocations: stack.wake.stats().invocations,
      redelivered: sqs.redelivered,
      deadLettered: sqs.deadLettered,
      deadLetters: deadLetterReasons(stack),
    },
    drainInvocations: stack.lambdaApi.invocations()[WORKER_FUNCTION] ?? 0,
    reclaimerRuns: stack.counts.reclaimerRuns,
  });
  if (figures.partitions.length > 1) {
    json.partitions = figures.partitions.map(({ done, failed }) => ({ done, failed }));
  }
  const left = `  left in the queue: ${stats.ready} ready, ${stats.scheduled} scheduled, ${stats.leased} leased`;
  // Without the demo (your own tasks) the demo's counts mean nothing: say what the queue holds.
  const lines = run.workload
    ? [formatSummary(json), left]
    : [
        `Stopped after ${(json.durationMs / 1000).toFixed(1)} s: queue ${options.queue} holds ${stats.done} done and ${stats.failed} failed tasks.`,
        left,
        `  SQS: ${json.sqs.intakeInvocations} intake invocations, ${json.sqs.redelivered} redelivered, ${json.sqs.deadLettered} dead-lettered; worker: ${json.sqs.invocations} wake-ups, ${json.drainInvocations} drain invocations`,
        ...json.sqs.deadLetters.map((letter) => `    dead letter ×${letter.messages}: ${letter.reason}`),
      ];
  if (run.failure) lines.push(`npm start: ${redact((run.failure as Error).message ?? String(run.failure))}`);
  const ok = run.failure === undefined && (!options.exitWhenDrained || (run.drained && json.lost === 0));
  return { json, text: lines.join("\n"), exitCode: ok ? 0 : 1 };
}

/** The dead-letter queue's messages grouped by why they are there. */
function deadLetterReasons(stack: Stack): Array<{ reason: string; messages: number }> {
  const counts = new Map<string, number>();
  for (const letter of stack.sqs.deadLetters) {
    const reason =
      letter.deadLetteredBy === "redrive"
        ? `received ${letter.receiveCount} times without success (redrive policy)`
        : (letter.messageAttributes[DEAD_LETTER_ATTRIBUTES.reason]?.StringValue ?? "(no reason given)");
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  return [...counts].map(([reason, messages]) => ({ reason, messages }));
}

/** A task by its id, in whichever partition holds it (the demo's ids are unique across them). */
async function inspectAnywhere(partitions: readonly Queue[], id: string) {
  for (const partition of partitions) {
    const found = await partition.admin.inspect(id);
    if (found) return found;
  }
  return undefined;
}
