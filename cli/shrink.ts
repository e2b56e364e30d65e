import type { Command } from "commander";
import { dropDrainedPartitions } from "../shared/partitioned-queue.js";
import { integerOption, partitionsOf, queueName, withPartitions } from "./connect.js";
import { OperationError, UsageError } from "./errors.js";

/**
 * Registers `drop-drained`, a shrink's end (docs/partitions.md "Growing and shrinking"): with
 * --partitions N (the count before the shrink) and --to M, drops each partition from M to N-1 that
 * holds no task waiting or running, the check and the drop one script; exits 1 naming those that
 * still drain.
 */
export function shrinkCommand(program: Command): void {
  program
    .command("drop-drained")
    .description(
      "a shrink's end: drop each partition from --to on that holds no task waiting or running (docs/partitions.md)",
    )
    .requiredOption("--to <m>", "the partition count after the shrink (the construct's partitions)")
    .option("--yes", "confirm: without it nothing is dropped")
    .addHelpText(
      "after",
      "\nRun it once the deploy with shrinkingFrom is out (no producer routes to the partitions dropped);\nthen deploy partitions: M without shrinkingFrom.\n\nExample:\n  leaseq --queue imports --partitions 6 drop-drained --to 4 --yes",
    )
    .action(async (options: { to: string; yes?: boolean }, command: Command) => {
      const name = queueName(command);
      const { count, only } = partitionsOf(command);
      if (only !== undefined) throw new UsageError("drop-drained covers the partitions from --to on: drop --partition");
      if (count < 2) {
        throw new UsageError("drop-drained needs --partitions N (or LEASEQ_PARTITIONS), the count before the shrink");
      }
      const to = integerOption(options.to, "--to (the count after the shrink)", 1, count - 1);
      if (!options.yes) {
        throw new UsageError(
          `drop-drained drops partitions ${to} to ${count - 1} of queue "${name}" once they hold no waiting or running task, their finished tasks with them, and cannot be undone; run it again with --yes`,
        );
      }
      const { dropped, draining } = await withPartitions(command, (partitions) =>
        dropDrainedPartitions(
          partitions.slice(to).map(({ queue }) => queue),
          to,
        ),
      );
      for (const partition of dropped) console.log(`dropped partition ${partition} of queue "${name}"`);
      if (draining.length > 0) {
        throw new OperationError(
          `partition${draining.length === 1 ? "" : "s"} ${draining.join(", ")} of queue "${name}" still ${draining.length === 1 ? "holds" : "hold"} tasks waiting or running: not dropped; run drop-drained again once the workers have drained them (leaseq --partitions ${count} stats shows each)`,
        );
      }
    });
}
