import type { Command } from "commander";
import { DEFAULTS, LIMITS } from "../../shared/config.js";
import type { Queue } from "../../shared/queue.js";
import { queueName, withQueue } from "./connect.js";
import { OperationError, UsageError } from "./errors.js";
import { duration, integer } from "./parse.js";

/** Runs `call` over `ids` in batches the scripts take. */
async function inBatches<T>(ids: string[], call: (batch: string[]) => Promise<T[]>): Promise<T[]> {
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
function report(
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

/** Registers `requeue`, `repair`, `delete`, `delete-queue` and `trim`: the commands that change tasks. */
export function writeCommands(program: Command): void {
  program
    .command("requeue")
    .description("send FAILED tasks back to READY with their original rank and fresh attempts")
    .argument("[ids...]", "ids of failed tasks")
    .option("--all-failed", "requeue every task that is FAILED when the command starts")
    .action(async (ids: string[], options: { allFailed?: boolean }, command: Command) => {
      if (options.allFailed && ids.length > 0) throw new UsageError("requeue: give task ids or --all-failed, not both");
      if (!options.allFailed && ids.length === 0) throw new UsageError("requeue: give task ids or --all-failed");
      if (options.allFailed) {
        const count = await withQueue(command, requeueAllFailed);
        console.log(`requeued ${count} failed task${count === 1 ? "" : "s"}`);
        return;
      }
      const results = await withQueue(command, (queue) =>
        inBatches(ids, (batch) => queue.requeue(batch, { now: Date.now() })),
      );
      report(command, { name: "requeue", past: "requeued" }, results, {
        unknown_id: "no such task",
        not_failed: "not FAILED",
      });
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
    .description("delete tasks by id, records included (READY, SCHEDULED, DONE, FAILED or corrupt; not LEASED)")
    .argument("<ids...>", "task ids")
    .action(async (ids: string[], _options: unknown, command: Command) => {
      const results = await withQueue(command, (queue) => inBatches(ids, (batch) => queue.delete(batch)));
      report(command, { name: "delete", past: "deleted" }, results, {
        unknown_id: "no such task",
        leased: "LEASED: a worker is running it; delete it once its lease ends",
      });
    });

  program
    .command("delete-queue")
    .description("delete the whole queue: every task in every state, and every key of it (irreversible)")
    .option("--yes", "confirm: without it nothing is deleted")
    .addHelpText("after", "\nExample:\n  leaseq --queue emails-staging delete-queue --yes")
    .action(async (options: { yes?: boolean }, command: Command) => {
      const name = queueName(command);
      if (!options.yes) {
        throw new UsageError(
          `delete-queue deletes every task of queue "${name}" in every state and cannot be undone; run it again with --yes`,
        );
      }
      const keys = await withQueue(command, (queue) => queue.drop({ confirm: name }));
      console.log(`deleted queue "${name}": ${keys} key${keys === 1 ? "" : "s"}`);
    });

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

/**
 * Requeues the tasks FAILED at the start, page by page. It stops after that many, so tasks that
 * fail again meanwhile are not chased forever.
 */
async function requeueAllFailed(queue: Queue): Promise<number> {
  const failedAtStart = (await queue.stats({ now: Date.now() })).failed;
  let requeued = 0;
  while (requeued < failedAtStart) {
    const page = await queue.list("failed", { limit: Math.min(LIMITS.batchMax, failedAtStart - requeued) });
    if (page.length === 0) break;
    const results = await queue.requeue(
      page.map((task) => task.id),
      { now: Date.now() },
    );
    const ok = results.filter((result) => result.status === "ok").length;
    // A page none of which could be requeued was taken meanwhile (e.g. trimmed): nothing left to do.
    if (ok === 0) break;
    requeued += ok;
  }
  return requeued;
}
