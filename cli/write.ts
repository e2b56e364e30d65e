import { type Command, Option } from "commander";
import { DEFAULTS, LIMITS } from "../shared/config.js";
import { duration } from "../shared/text.js";
import { changeByIds, okCount } from "./by-ids.js";
import { withQueue } from "./connect.js";
import { deleteQueueCommand } from "./delete-queue.js";
import { UsageError } from "./errors.js";
import { DELETABLE, type Deletable, deleteByFilter, type FilterOptions, hasFilter, reportFiltered } from "./filters.js";
import { durationArg, integer } from "./parse.js";
import { requeueCommand } from "./requeue.js";
import { wakeWorker } from "./wake.js";

/** Registers `requeue`, `skip`, `repair`, `delete`, `delete-queue` and `trim`: the commands that change tasks. */
export function writeCommands(program: Command): void {
  requeueCommand(program);

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
      const verb = {
        name: "skip",
        past: "skipped",
        note: "(FAILED; their groups go on)",
        why: { unknown_id: "no such task", not_failed: "not FAILED", not_holding: "no group waits behind it" },
      };
      const results = await changeByIds(command, ids, verb, (queue, batch) =>
        queue.admin.skip(batch, { now: Date.now() }),
      );
      if (okCount(results) > 0) await wakeWorker(Date.now(), "their groups' next tasks");
    });

  program
    .command("repair")
    .description("bring quarantined tasks (leaseq list corrupt) back to READY when their body can still be read")
    .argument("<ids...>", "ids of corrupt tasks")
    .action(async (ids: string[], _options: unknown, command: Command) => {
      const verb = {
        name: "repair",
        past: "repaired",
        note: "(READY again)",
        why: { unknown_id: "not quarantined", unrepairable: "its body cannot be read either: leaseq delete it" },
      };
      await changeByIds(command, ids, verb, (queue, batch) => queue.admin.repair(batch, { now: Date.now() }));
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
    .action(
      async (
        ids: string[],
        options: FilterOptions & { state?: Deletable; dryRun?: boolean; yes?: boolean },
        command: Command,
      ) => {
        if (options.state === undefined) {
          if (hasFilter(options) || options.dryRun || options.yes) {
            throw new UsageError("delete: --type, --group, --error, --older-than, --dry-run and --yes go with --state");
          }
          if (ids.length === 0) throw new UsageError("delete: give task ids, or --state with filters");
          const verb = {
            name: "delete",
            past: "deleted",
            why: {
              unknown_id: "no such task",
              leased: "LEASED: a worker is running it; delete it once its lease ends",
            },
          };
          await changeByIds(command, ids, verb, (queue, batch) => queue.admin.delete(batch));
          return;
        }
        if (ids.length > 0) throw new UsageError("delete: give task ids or --state, not both");
        const state = options.state;
        const dryRun = options.dryRun === true || options.yes !== true;
        const outcome = await withQueue(command, (queue) => deleteByFilter(queue, state, { ...options, dryRun }));
        reportFiltered(command, { name: "delete", past: "deleted" }, state, outcome, dryRun);
        if (dryRun && options.dryRun !== true && outcome.matched.length > 0)
          console.log("run it again with --yes to delete them");
      },
    );

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
