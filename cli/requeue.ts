import type { Command } from "commander";
import { LIMITS } from "../shared/config.js";
import type { Queue } from "../shared/queue.js";
import { inBatches } from "./batches.js";
import { type IdVerb, okCount, report } from "./by-ids.js";
import { queueName, withQueue } from "./connect.js";
import { UsageError } from "./errors.js";
import { type FilterOptions, hasFilter, reportFiltered, requeueByFilter } from "./filters.js";
import { counted } from "./output.js";
import { durationArg } from "./parse.js";
import { wakeWorker } from "./wake.js";

const REQUEUE: IdVerb = {
  name: "requeue",
  past: "requeued",
  why: { unknown_id: "no such task", not_failed: "not FAILED" },
};

/**
 * Registers `requeue`: FAILED tasks back to READY, by id, every one (--all-failed) or by filter;
 * then a worker is woken for them, unless the queue is paused.
 */
export function requeueCommand(program: Command): void {
  program
    .command("requeue")
    .description("send FAILED tasks back to READY with their original rank and fresh attempts")
    .argument("[ids...]", "ids of failed tasks")
    .option("--all-failed", "requeue every task that is FAILED when the command starts")
    .option("--type <type>", "requeue the failed tasks of this type")
    .option("--group <group>", "requeue the failed tasks of this group")
    .option("--error <substring>", "requeue the failed tasks whose last error contains this")
    .option("--older-than <duration>", "requeue the tasks that failed longer ago than this (e.g. 2h)", durationArg)
    .option("--dry-run", "print what would be requeued, and change nothing")
    .addHelpText(
      "after",
      "\nExamples:\n  leaseq --queue emails requeue welcome-42 welcome-43\n  leaseq --queue emails requeue --error 'SMTP 4' --older-than 10m --dry-run\n  leaseq --queue emails requeue --all-failed",
    )
    .action(
      async (ids: string[], options: FilterOptions & { allFailed?: boolean; dryRun?: boolean }, command: Command) => {
        const filtered = hasFilter(options);
        const ways = [ids.length > 0, options.allFailed === true, filtered].filter(Boolean).length;
        if (ways !== 1)
          throw new UsageError(
            "requeue: give task ids, --all-failed, or filters (--type, --group, --error, --older-than): one of them",
          );
        if (options.dryRun && !filtered) throw new UsageError("requeue: --dry-run goes with the filters");
        // The tasks that went through start as on any requeue, also when some were refused: those
        // are reported (exit 1) after the wake-up.
        if (filtered) {
          const { result: outcome, paused } = await requeueing(
            command,
            (queue) => requeueByFilter(queue, options),
            (outcome) => outcome.changed.length,
          );
          try {
            reportFiltered(command, REQUEUE, "failed", outcome, options.dryRun);
          } finally {
            await wakeForRequeued(command, outcome.changed.length, paused);
          }
          return;
        }
        if (options.allFailed) {
          const { result: count, paused } = await requeueing(command, requeueAllFailed, (count) => count);
          console.log(`requeued ${counted(count, "failed task")}`);
          await wakeForRequeued(command, count, paused);
          return;
        }
        const { result: results, paused } = await requeueing(
          command,
          (queue) => inBatches(ids, (batch) => queue.admin.requeue(batch, { now: Date.now() })),
          okCount,
        );
        try {
          report(command, REQUEUE, results);
        } finally {
          await wakeForRequeued(command, okCount(results), paused);
        }
      },
    );
}

/**
 * Runs `requeue` on the command's queue and, when it requeued any task (`count`), reads whether the
 * queue is paused: its requeued tasks then wait for a resume, which wakes a worker itself.
 */
async function requeueing<T>(
  command: Command,
  requeue: (queue: Queue) => Promise<T>,
  count: (result: T) => number,
): Promise<{ result: T; paused: boolean }> {
  return withQueue(command, async (queue) => {
    const result = await requeue(queue);
    const paused = count(result) > 0 && (await queue.stats({ now: Date.now() })).paused;
    return { result, paused };
  });
}

/** After `count` tasks were requeued READY: the wake-up `leaseq resume` would send, or when they start. */
async function wakeForRequeued(command: Command, count: number, paused: boolean): Promise<void> {
  if (count === 0) return;
  if (paused) {
    console.log(`queue "${queueName(command)}" is paused: the requeued tasks start once it is resumed (leaseq resume)`);
    return;
  }
  await wakeWorker(Date.now(), "the requeued tasks");
}

/**
 * Requeues the tasks FAILED at the start, page by page. It stops after that many, so tasks that
 * fail again meanwhile are not chased forever.
 */
async function requeueAllFailed(queue: Queue): Promise<number> {
  const failedAtStart = (await queue.stats({ now: Date.now() })).failed;
  let requeued = 0;
  while (requeued < failedAtStart) {
    const page = await queue.admin.list("failed", { limit: Math.min(LIMITS.batchMax, failedAtStart - requeued) });
    if (page.length === 0) break;
    const results = await queue.admin.requeue(
      page.map((task) => task.id),
      { now: Date.now() },
    );
    const ok = okCount(results);
    // A page none of which could be requeued was taken meanwhile (e.g. trimmed): nothing left to do.
    if (ok === 0) break;
    requeued += ok;
  }
  return requeued;
}
