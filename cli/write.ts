import { type Command, Option } from "commander";
import { DEFAULTS, LIMITS } from "../shared/config.js";
import type { Queue } from "../shared/queue.js";
import { duration } from "../shared/text.js";
import type { TaskState } from "../shared/types.js";
import { queueName, withQueue } from "./connect.js";
import { deleteQueueCommand } from "./delete-queue.js";
import { OperationError, UsageError } from "./errors.js";
import { durationArg, integer } from "./parse.js";
import { taskFilter } from "./read.js";
import { requeueAllFailed, requeueing, wakeForRequeued } from "./requeue.js";
import { wakeWorker } from "./wake.js";

/** Runs `call` over `ids` in batches the scripts take. */
export async function inBatches<T>(ids: string[], call: (batch: string[]) => Promise<T[]>): Promise<T[]> {
  const all: T[] = [];
  for (let start = 0; start < ids.length; start += LIMITS.batchMax) {
    all.push(...(await call(ids.slice(start, start + LIMITS.batchMax))));
  }
  return all;
}

/**
 * Prints the ids `verb` changed ("requeued a, b"), then fails naming each id it refused and why
 * (`why` by status, else the status itself), so the exit code says whether every id went through.
 */
export function report(
  command: Command,
  verb: { name: string; past: string; note?: string },
  results: Array<{ id: string; status: string }>,
  why: Record<string, string>,
): void {
  const changed = results.filter((result) => result.status === "ok");
  if (changed.length > 0) {
    console.log(`${verb.past} ${changed.map((result) => result.id).join(", ")}${verb.note ? ` ${verb.note}` : ""}`);
  }
  const refused = results.filter((result) => result.status !== "ok");
  if (refused.length > 0) {
    const list = refused.map((result) => `${result.id} (${why[result.status] ?? result.status})`).join(", ");
    throw new OperationError(`${verb.name}: not ${verb.past} in queue "${queueName(command)}": ${list}`);
  }
}

const DELETABLE = ["ready", "scheduled", "done", "failed", "corrupt"] as const;
export type Deletable = (typeof DELETABLE)[number];

export interface FilterFlags {
  type?: string;
  group?: string;
  error?: string;
  olderThan?: number;
  dryRun?: boolean;
}

function hasFilter(options: FilterFlags): boolean {
  return (
    options.type !== undefined ||
    options.group !== undefined ||
    options.error !== undefined ||
    options.olderThan !== undefined
  );
}

/**
 * Applies `change` to the tasks of `state` matching the filters, page by page (each `find` reads at
 * most 1000 tasks, each change takes at most 1000 ids), so no call is unbounded. A run stopped
 * half-way is resumed by running it again: what it changed left the state. With `dryRun`, only
 * the matching tasks are collected.
 */
async function byFilter(
  queue: Queue,
  state: TaskState,
  options: FilterFlags,
  change: (ids: string[]) => Promise<Array<{ id: string; status: string }>>,
): Promise<{ matched: string[]; changed: string[]; refused: Array<{ id: string; status: string }> }> {
  const outcome = {
    matched: [] as string[],
    changed: [] as string[],
    refused: [] as Array<{ id: string; status: string }>,
  };
  const now = Date.now();
  let cursor: number | undefined = 0;
  while (cursor !== undefined) {
    const page = await queue.find(state, { ...taskFilter(options, now), cursor });
    const ids = page.tasks.map((task) => task.id);
    outcome.matched.push(...ids);
    let left = 0;
    if (!options.dryRun && ids.length > 0) {
      for (const result of await change(ids)) {
        if (result.status === "ok") outcome.changed.push(result.id);
        else outcome.refused.push(result);
        // Changed, or gone meanwhile: either way no longer in the state.
        if (result.status === "ok" || result.status === "unknown_id" || result.status === "not_in_state") left++;
      }
    }
    // The tasks that left the state: the next page starts that much sooner.
    cursor = page.next === undefined ? undefined : page.next - left;
  }
  return outcome;
}

/**
 * `delete --state`: deletes the tasks of `state` matching the filters, each only if it is still in
 * `state` when its batch is deleted: one that moved on since `find` met it (requeued, say) is left
 * alone and reported "not_in_state".
 */
export function deleteByFilter(queue: Queue, state: Deletable, options: FilterFlags) {
  return byFilter(queue, state, options, (batch) => queue.delete(batch, { state, now: Date.now() }));
}

function reportFiltered(
  command: Command,
  verb: string,
  past: string,
  state: TaskState,
  outcome: { matched: string[]; changed: string[]; refused: Array<{ id: string; status: string }> },
  dryRun: boolean | undefined,
): void {
  const n = (count: number) => `${count} ${state} task${count === 1 ? "" : "s"}`;
  if (dryRun) {
    console.log(
      `would ${verb} ${n(outcome.matched.length)} of queue "${queueName(command)}"${outcome.matched.length > 0 ? `: ${outcome.matched.join(", ")}` : ""}`,
    );
    return;
  }
  console.log(`${past} ${n(outcome.changed.length)} of queue "${queueName(command)}"`);
  if (outcome.refused.length > 0) {
    const list = outcome.refused.map((result) => `${result.id} (${result.status})`).join(", ");
    throw new OperationError(`${verb}: not ${past} (changed meanwhile): ${list}`);
  }
}

/** Registers `requeue`, `repair`, `delete`, `delete-queue` and `trim`: the commands that change tasks. */
export function writeCommands(program: Command): void {
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
    .action(async (ids: string[], options: FilterFlags & { allFailed?: boolean }, command: Command) => {
      const filtered = hasFilter(options);
      const ways = [ids.length > 0, options.allFailed === true, filtered].filter(Boolean).length;
      if (ways !== 1)
        throw new UsageError(
          "requeue: give task ids, --all-failed, or filters (--type, --group, --error, --older-than): one of them",
        );
      if (options.dryRun && !filtered) throw new UsageError("requeue: --dry-run goes with the filters");
      if (filtered) {
        const { result: outcome, paused } = await requeueing(
          command,
          (queue) => byFilter(queue, "failed", options, (batch) => queue.requeue(batch, { now: Date.now() })),
          (outcome) => outcome.changed.length,
        );
        let refused: unknown;
        try {
          reportFiltered(command, "requeue", "requeued", "failed", outcome, options.dryRun);
        } catch (error) {
          refused = error;
        }
        await wakeForRequeued(command, outcome.changed.length, paused);
        if (refused) throw refused;
        return;
      }
      if (options.allFailed) {
        const { result: count, paused } = await requeueing(command, requeueAllFailed, (count) => count);
        console.log(`requeued ${count} failed task${count === 1 ? "" : "s"}`);
        await wakeForRequeued(command, count, paused);
        return;
      }
      const { result: results, paused } = await requeueing(
        command,
        (queue) => inBatches(ids, (batch) => queue.requeue(batch, { now: Date.now() })),
        (results) => results.filter((result) => result.status === "ok").length,
      );
      let refused: unknown;
      try {
        report(command, { name: "requeue", past: "requeued" }, results, {
          unknown_id: "no such task",
          not_failed: "not FAILED",
        });
      } catch (error) {
        refused = error;
      }
      // The ids that went through start as on any requeue; the refused ones are reported after.
      await wakeForRequeued(command, results.filter((result) => result.status === "ok").length, paused);
      if (refused) throw refused;
    });

  program
    .command("skip")
    .description(
      "let an ordered group held behind its FAILED task (onFailure hold) go on: the task stays FAILED, the group runs its next",
    )
    .argument("<ids...>", "ids of FAILED tasks their groups wait behind (stats --groups: held by)")
    .addHelpText(
      "after",
      `
Examples:
  leaseq stats --groups                 # held groups first: "held by <id>"
  leaseq skip import-2026-11-30-acme    # acme's next file runs; this one stays FAILED
  leaseq requeue import-2026-11-30-acme # or: run it again first, then the rest of acme`,
    )
    .action(async (ids: string[], _options: unknown, command: Command) => {
      const results = await withQueue(command, (queue) =>
        inBatches(ids, (batch) => queue.skip(batch, { now: Date.now() })),
      );
      report(command, { name: "skip", past: "skipped", note: "(FAILED; their groups go on)" }, results, {
        unknown_id: "no such task",
        not_failed: "not FAILED",
        not_holding: "no group waits behind it",
      });
      const skipped = results.filter((result) => result.status === "ok").length;
      if (skipped > 0) await wakeWorker(Date.now(), "their groups' next tasks");
    });

  program
    .command("repair")
    .description("bring quarantined tasks (leaseq list corrupt) back to READY when their body can still be read")
    .argument("<ids...>", "ids of corrupt tasks")
    .action(async (ids: string[], _options: unknown, command: Command) => {
      const results = await withQueue(command, (queue) =>
        inBatches(ids, (batch) => queue.repair(batch, { now: Date.now() })),
      );
      report(command, { name: "repair", past: "repaired", note: "(READY again)" }, results, {
        unknown_id: "not quarantined",
        unrepairable: "its body cannot be read either: leaseq delete it",
      });
    });

  program
    .command("delete")
    .description(
      "delete tasks by id or by filter, records included (READY, SCHEDULED, DONE, FAILED or corrupt; not LEASED)",
    )
    .argument("[ids...]", "task ids")
    .addOption(
      new Option("--state <state>", "delete the tasks of this state that match the filters").choices([...DELETABLE]),
    )
    .option("--type <type>", "with --state: only tasks of this type")
    .option("--group <group>", "with --state: only tasks of this group")
    .option("--error <substring>", "with --state: only tasks whose last error contains this")
    .option(
      "--older-than <duration>",
      "with --state: only tasks due, finished or set aside longer ago than this",
      durationArg,
    )
    .option("--dry-run", "with --state: print what would be deleted, and change nothing")
    .option("--yes", "with --state: confirm (without it, a dry run)")
    .addHelpText(
      "after",
      "\nExamples:\n  leaseq --queue emails delete welcome-42\n  leaseq --queue emails delete --state scheduled --type reminder --dry-run\n  leaseq --queue emails delete --state failed --older-than 3d --yes",
    )
    .action(async (ids: string[], options: FilterFlags & { state?: Deletable; yes?: boolean }, command: Command) => {
      if (options.state === undefined) {
        if (hasFilter(options) || options.dryRun || options.yes) {
          throw new UsageError("delete: --type, --group, --error, --older-than, --dry-run and --yes go with --state");
        }
        if (ids.length === 0) throw new UsageError("delete: give task ids, or --state with filters");
        const results = await withQueue(command, (queue) => inBatches(ids, (batch) => queue.delete(batch)));
        report(command, { name: "delete", past: "deleted" }, results, {
          unknown_id: "no such task",
          leased: "LEASED: a worker is running it; delete it once its lease ends",
        });
        return;
      }
      if (ids.length > 0) throw new UsageError("delete: give task ids or --state, not both");
      const state = options.state;
      const dryRun = options.dryRun === true || options.yes !== true;
      const outcome = await withQueue(command, (queue) => deleteByFilter(queue, state, { ...options, dryRun }));
      reportFiltered(command, "delete", "deleted", state, outcome, dryRun);
      if (dryRun && options.dryRun !== true && outcome.matched.length > 0)
        console.log("run it again with --yes to delete them");
    });

  deleteQueueCommand(program);

  program
    .command("trim")
    .description("delete DONE and FAILED tasks older than their retention (the queue's config, unless given)")
    .option("--done-retention-ms <ms>", "keep DONE tasks this long this time", integer(0, LIMITS.retentionMaxMs))
    .option("--failed-retention-ms <ms>", "keep FAILED tasks this long this time", integer(0, LIMITS.retentionMaxMs))
    .action(async (options: { doneRetentionMs?: number; failedRetentionMs?: number }, command: Command) => {
      // Retention is the queue's (its config in Redis); flags override it for this run only.
      const trimmed = await withQueue(command, async (queue) => {
        const total = { done: 0, failed: 0 };
        const limit = DEFAULTS.maintenanceLimit;
        for (;;) {
          const pass = await queue.trim({ now: Date.now(), limit, ...options });
          total.done += pass.done;
          total.failed += pass.failed;
          if (pass.done < limit && pass.failed < limit) return total;
        }
      });
      const older = (ms: number | undefined) =>
        ms === undefined ? "older than the queue's retention" : `older than ${duration(ms)}`;
      console.log(
        `trimmed ${trimmed.done} done (${older(options.doneRetentionMs)}) and ${trimmed.failed} failed (${older(options.failedRetentionMs)})`,
      );
    });
}
