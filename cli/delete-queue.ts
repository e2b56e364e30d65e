import type { Command } from "commander";
import { listQueues } from "../shared/queue-admin.js";
import { queueName, withQueue } from "./connect.js";
import { OperationError, UsageError } from "./errors.js";
import { nearestHint } from "./nearest.js";
import { counted } from "./output.js";

/** Registers `delete-queue`: the whole queue, every key of it, with --yes; a name no queue has exits 1. */
export function deleteQueueCommand(program: Command): void {
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
      const keys = await withQueue(command, async (queue, where, store) => {
        const deleted = await queue.admin.drop({ confirm: name });
        // No key: there was no such queue (a typo?). Nothing was deleted, so say which names exist.
        if (deleted === 0) throw new OperationError(noSuchQueue(name, where, await listQueues(store)));
        return deleted;
      });
      console.log(`deleted queue "${name}": ${counted(keys, "key")}`);
    });
}

/** What `delete-queue` of a queue that does not exist says: the nearest names there, if any is near. */
function noSuchQueue(name: string, where: string, names: string[]): string {
  const hint = nearestHint(name, names, {
    noun: "queue",
    listedBy: "leaseq queues",
    none: "there is no leaseq queue there",
  });
  return `delete-queue: no such queue "${name}" on ${where}; nothing was deleted; ${hint}`;
}
