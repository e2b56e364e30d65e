import { Argument, type Command } from "commander";
import { partitionQueue } from "../shared/partitioned-queue.js";
import { listQueuePartitions } from "../shared/queue-admin.js";
import { sumStats } from "../shared/sum-stats.js";
import type { QueueStats } from "../shared/types.js";
import { changeByIds } from "./by-ids.js";
import { queueName, withQueue, withStore } from "./connect.js";
import { UsageError } from "./errors.js";
import { DELETABLE, type Deletable } from "./filters.js";
import { counted, printResult } from "./output.js";
import { formatStats } from "./read.js";
import { wakeOthers, wakeWorker } from "./wake.js";

/** Registers `pause`, `resume`, `cancel`, `purge` and `queues`: the operator's controls. */
export function controlCommands(program: Command): void {
  for (const action of ["pause", "resume"] as const) {
    program
      .command(action)
      .description(
        action === "pause"
          ? "pause the queue (claims lease nothing; the reclaimer still reclaims, promotes and trims) or one task type"
          : "resume what pause paused: the queue, or one task type",
      )
      .option("--type <type>", `${action} only this task type`)
      .addHelpText(
        "after",
        `\nExamples:\n  leaseq --queue emails ${action}\n  leaseq --queue emails ${action} --type resize-image`,
      )
      .action(async (options: { type?: string }, command: Command) => {
        const what = options.type
          ? `task type "${options.type}" of queue "${queueName(command)}"`
          : `queue "${queueName(command)}"`;
        const { changed, wakeAtMs, wakeTo } = await withQueue(command, async (queue) =>
          action === "pause"
            ? {
                changed: await queue.admin.pause({ now: Date.now(), type: options.type }),
                wakeAtMs: undefined,
                wakeTo: [],
              }
            : queue.admin.resume({ now: Date.now(), type: options.type }),
        );
        const past = action === "pause" ? "paused" : "resumed";
        console.log(
          changed ? `${past} ${what}` : `${what} was ${action === "pause" ? "paused" : "not paused"} already`,
        );
        // Work waits for a worker (ready now, or falling due soon): a wake-up due when resume said.
        if (wakeAtMs !== undefined) await wakeWorker(wakeAtMs, "its ready tasks");
        await wakeOthers(wakeTo);
      });
  }

  program
    .command("cancel")
    .description(
      'stop tasks from running (again): READY, SCHEDULED or LEASED ones end FAILED "cancelled", a lease revoked',
    )
    .argument("<ids...>", "task ids")
    .addHelpText(
      "after",
      "\nA worker still running a cancelled task is answered stale_token when it settles.\nExample:\n  leaseq --queue emails cancel welcome-42",
    )
    .action(async (ids: string[], _options: unknown, command: Command) => {
      const verb = {
        name: "cancel",
        past: "cancelled",
        note: "(FAILED)",
        why: {
          unknown_id: "no such task",
          already_done: "DONE already",
          already_failed: "FAILED already",
          corrupt: "its record cannot be read: set aside, see leaseq list corrupt",
        },
      };
      await changeByIds(command, ids, verb, (queue, batch) => queue.admin.cancel(batch, { now: Date.now() }));
    });

  program
    .command("purge")
    .description("delete every task in one state, records included, in batches of 1000 (not LEASED: cancel those)")
    .addArgument(new Argument("<state>", "task state").choices([...DELETABLE]))
    .option("--yes", "confirm: without it nothing is deleted, and the count is shown")
    .addHelpText("after", "\nExample:\n  leaseq --queue emails purge done --yes")
    .action(async (state: Deletable, options: { yes?: boolean }, command: Command) => {
      const name = queueName(command);
      if (!options.yes) {
        const stats = await withQueue(command, (queue) => queue.stats({ now: Date.now() }));
        throw new UsageError(
          `purge ${state} would delete the ${counted(stats[state], `${state} task`)} of queue "${name}" and cannot be undone; run it again with --yes`,
        );
      }
      const deleted = await withQueue(command, async (queue) => {
        let total = 0;
        for (;;) {
          const batch = await queue.admin.purge(state);
          total += batch;
          if (batch === 0) return total;
        }
      });
      console.log(`purged ${counted(deleted, `${state} task`)} of queue "${name}"`);
    });

  program
    .command("queues")
    .description("list the leaseq queues on this Redis with their counts (SCAN: for operators)")
    .option("--json", "print [{queue, ready, scheduled, ...}] as JSON")
    .addHelpText("after", "\nExample:\n  REDIS_URL=redis://127.0.0.1:6379 leaseq queues")
    .action(async (options: { json?: boolean }, command: Command) => {
      await withStore(command, "every queue", async (store, where) => {
        const rows: Array<{ queue: string; partitions?: number } & QueueStats> = [];
        // A partitioned queue (docs/partitions.md): its partitions' counts summed.
        for (const { name, partitions } of await listQueuePartitions(store)) {
          const each = await Promise.all(
            partitions.map((k) => partitionQueue(store, { name }, k).stats({ now: Date.now() })),
          );
          rows.push({
            queue: name,
            ...(partitions.length > 1 ? { partitions: partitions.length } : {}),
            ...sumStats(each),
          });
        }
        printResult(options.json, {
          json: () => rows,
          text: () =>
            rows.map(
              (row) =>
                `queue "${row.queue}"${row.partitions ? ` (${row.partitions} partitions)` : ""}${row.paused ? " (paused)" : ""}\n${formatStats(row)}\n`,
            ),
          empty: `no leaseq queues on ${where}`,
        });
      });
    });
}
