import type { Frame } from "../shared/live.js";
import type { QueueStats } from "../shared/types.js";
import type { StackCounts } from "./stack.js";
import type { SqsCounts } from "./standins/sqs/index.js";

/** Everything one redraw of the local stack's live view shows. */
export interface ViewSnapshot {
  queue: string;
  elapsedMs: number;
  stats: QueueStats;
  /** Tasks finished (DONE or FAILED) per second over the last few seconds. */
  tasksPerSecond: number;
  /** Demo tasks and how many of them are finished; undefined with --no-demo. */
  demo: { total: number; finished: number } | undefined;
  crash: { pid: number; claimed: number } | undefined;
  /** The task queue and the intake it invokes. */
  sqs: SqsCounts;
  /** The wake queue and the worker invocations it starts. */
  wake: SqsCounts;
  stack: StackCounts;
  /** The reclaimer's invocations of the worker without SQS. */
  drainInvocations: number;
}

const BAR_WIDTH = 30;

function bar(part: number, whole: number): string {
  const filled = whole > 0 ? Math.round((Math.min(part, whole) / whole) * BAR_WIDTH) : 0;
  return `${"█".repeat(filled)}${"░".repeat(BAR_WIDTH - filled)}`;
}

/** The live view: a block redrawn in place on a terminal, and the one line printed otherwise. */
export function renderView(view: ViewSnapshot): Frame {
  const { stats, sqs, wake, stack } = view;
  const seconds = (view.elapsedMs / 1000).toFixed(1);
  const rate = view.tasksPerSecond.toFixed(1);
  const count = (label: string, value: number) => `  ${label.padEnd(10)}${String(value).padStart(6)}`;
  const lines = [
    `leaseq local stack · queue ${view.queue} · ${seconds} s`,
    "",
    count("ready", stats.ready),
    count("scheduled", stats.scheduled),
    count("leased", stats.leased),
    count("done", stats.done),
    count("failed", stats.failed),
    ...(stats.paused ? ["  PAUSED    claims lease nothing until leaseq resume"] : []),
    ...(stats.pausedTypes?.length ? [`  paused types: ${stats.pausedTypes.join(", ")}`] : []),
    "",
    `  throughput ${rate} tasks/s (last 5 s)`,
  ];
  if (view.demo) {
    lines.push(
      `  demo      ${bar(view.demo.finished, view.demo.total)} ${view.demo.finished}/${view.demo.total} finished`,
    );
  }
  lines.push(
    `  intake    ${sqs.invocations} invocations · task queue ${sqs.visible} waiting, ${sqs.inFlight} in flight, ${sqs.redelivered} redelivered, ${sqs.deadLettered} dead-lettered`,
    `  worker    ${wake.invocations} wake-ups, ${view.drainInvocations} drain invocations, ${wake.inFlight} running`,
    `  reclaimer ${stack.reclaimerRuns} runs, ${stack.reclaimed} leases reclaimed${stack.reclaimFailed > 0 ? `, ${stack.reclaimFailed} expired with no attempts left (FAILED)` : ""}${stack.reclaimerErrors > 0 ? `, ${stack.reclaimerErrors} failed runs (${stack.lastReclaimerError})` : ""}`,
  );
  if (stack.invocationErrors > 0) {
    lines.push(
      `  ERRORS    ${stack.invocationErrors} failed invocations (SQS delivers their records again); last: ${stack.lastInvocationError}`,
    );
  }
  if (view.crash) {
    const state =
      stack.reclaimed >= view.crash.claimed ? "its leases were reclaimed" : "waiting for its leases to expire";
    lines.push(`  crash     worker pid ${view.crash.pid} killed holding ${view.crash.claimed} tasks: ${state}`);
  }
  lines.push("", "Ctrl-C stops (claimed tasks are released first)");
  const line = [
    `[${seconds}s]`,
    `ready=${stats.ready} scheduled=${stats.scheduled} leased=${stats.leased} done=${stats.done} failed=${stats.failed}`,
    stats.paused ? "paused" : "",
    `tasks/s=${rate}`,
    view.demo ? `finished=${view.demo.finished}/${view.demo.total}` : "",
    `intake_invocations=${sqs.invocations} wake_ups=${wake.invocations} drain_invocations=${view.drainInvocations} reclaimed=${stack.reclaimed} dead_lettered=${sqs.deadLettered}`,
    stack.invocationErrors > 0 ? `failed_invocations=${stack.invocationErrors}` : "",
  ]
    .filter(Boolean)
    .join(" ");
  return { block: lines.join("\n"), line };
}
