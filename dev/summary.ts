import type { Queue } from "../shared/queue.js";
import type { TaskInfo } from "../shared/types.js";

/** Where each finished task ended, and after how many attempts. */
export type Finished = Map<string, { state: "done" | "failed"; attempts: number }>;

/** Every DONE and FAILED task of the queue's partitions (one, unpartitioned), read page by page. */
export async function finishedTasks(partitions: readonly Queue[]): Promise<Finished> {
  const finished: Finished = new Map();
  for (const queue of partitions) {
    for (const state of ["done", "failed"] as const) {
      for (let offset = 0; ; offset += 1000) {
        const page = await queue.admin.list(state, { offset, limit: 1000 });
        for (const task of page) finished.set(task.id, { state, attempts: task.attempts });
        if (page.length < 1000) break;
      }
    }
  }
  return finished;
}

/** The `--json` summary: one object, the last line of stdout. */
export interface DemoSummary {
  queue: string;
  drained: boolean;
  enqueued: number;
  done: number;
  failed: number;
  /** Demo tasks in no terminal state (never enqueued, or still in flight when the run ended). */
  lost: number;
  /** Expired leases the reclaimer returned to READY. */
  reclaimed: number;
  /** Runs beyond each task's first, other than those after a reclaim: the worker's retries. */
  retried: number;
  durationMs: number;
  /** The poison task, absent with --no-demo. */
  poison?: { id: string; state: string; attempts: number; lastError: string };
  /** The crashed worker and its tasks, absent with --no-demo. */
  crash?: { pid: number; claimed: number; recovered: number };
  sqs: {
    messages: number;
    /** Intake invocations (task queue batches). */
    intakeInvocations: number;
    /** Worker invocations the wake queue started (one wake-up each). */
    invocations: number;
    redelivered: number;
    deadLettered: number;
    /** What is in the dead-letter queue and why: the worker's reason, or the redrive policy. */
    deadLetters: Array<{ reason: string; messages: number }>;
  };
  drainInvocations: number;
  reclaimerRuns: number;
  /** A partitioned queue's tasks DONE and FAILED in each partition, by number (`--partitions`). */
  partitions?: Array<{ done: number; failed: number }>;
}

export interface SummaryInput {
  queue: string;
  drained: boolean;
  ids: string[];
  finished: Finished;
  reclaimed: number;
  durationMs: number;
  poison: TaskInfo | undefined;
  poisonId: string | undefined;
  crash: { pid: number; ids: string[] } | undefined;
  sqs: DemoSummary["sqs"];
  drainInvocations: number;
  reclaimerRuns: number;
}

/**
 * Builds the summary from what Redis holds. Every claim adds an attempt, and a claim after the
 * first follows either a retry or a reclaim, so retries = extra attempts − reclaims.
 */
export function summarize(input: SummaryInput): DemoSummary {
  let done = 0;
  let failed = 0;
  let extraAttempts = 0;
  for (const id of input.ids) {
    const task = input.finished.get(id);
    if (task === undefined) continue;
    if (task.state === "done") done++;
    else failed++;
    extraAttempts += Math.max(0, task.attempts - 1);
  }
  const summary: DemoSummary = {
    queue: input.queue,
    drained: input.drained,
    enqueued: input.ids.length,
    done,
    failed,
    lost: input.ids.length - done - failed,
    reclaimed: input.reclaimed,
    retried: Math.max(0, extraAttempts - input.reclaimed),
    durationMs: input.durationMs,
    sqs: input.sqs,
    drainInvocations: input.drainInvocations,
    reclaimerRuns: input.reclaimerRuns,
  };
  if (input.poisonId) {
    summary.poison = {
      id: input.poisonId,
      state: input.poison?.state ?? "unknown",
      attempts: input.poison?.attempts ?? 0,
      lastError: input.poison?.lastError ?? "",
    };
  }
  if (input.crash) {
    const recovered = input.crash.ids.filter((id) => input.finished.get(id)?.state === "done").length;
    summary.crash = { pid: input.crash.pid, claimed: input.crash.ids.length, recovered };
  }
  return summary;
}

/** The summary for people: a few lines. */
export function formatSummary(summary: DemoSummary): string {
  const seconds = (summary.durationMs / 1000).toFixed(1);
  const { poison, crash, sqs } = summary;
  const lines = [
    // Stopped early, what is not finished is still in the queue (listed below), not lost.
    `${summary.drained ? "Drained" : "Stopped"} after ${seconds} s: ${summary.enqueued} demo tasks, ${summary.done} done, ${summary.failed} failed, ${summary.lost} ${summary.drained ? "lost" : "not finished yet"}.`,
    `  retried ${summary.retried} times; the reclaimer returned ${summary.reclaimed} expired leases to READY`,
  ];
  if (poison) {
    lines.push(
      `  poison task ${poison.id}: ${poison.state.toUpperCase()} after ${poison.attempts} attempts (${poison.lastError})`,
    );
  }
  if (crash) {
    lines.push(
      `  crashed worker (pid ${crash.pid}) held ${crash.claimed} tasks: ${crash.recovered} recovered and done`,
    );
  }
  lines.push(
    `  SQS: ${sqs.messages} messages, ${sqs.intakeInvocations} intake invocations, ${sqs.redelivered} redelivered, ${sqs.deadLettered} dead-lettered; worker: ${sqs.invocations} wake-ups, ${summary.drainInvocations} drain invocations`,
  );
  for (const letter of sqs.deadLetters) lines.push(`    dead letter ×${letter.messages}: ${letter.reason}`);
  return lines.join("\n");
}
