import type { Command } from "commander";
import type { CheckProblem } from "../shared/types.js";
import { partitionsOf, queueName, withPartitions } from "./connect.js";
import { OperationError } from "./errors.js";
import { printResult } from "./output.js";

/** One problem as a line: code, what it is about, what was wrong, and whether it was repaired. */
function formatProblem(problem: CheckProblem & { partition?: number }): string {
  const where = problem.partition === undefined ? "" : `[partition ${problem.partition}] `;
  return `${where}${problem.code.padEnd(16)}${problem.subject}  ${problem.detail}${problem.repaired ? "  (repaired)" : ""}`;
}

/**
 * Registers `check`: the queue's consistency check (docs/design.md "Checking a queue"), in bounded
 * steps over the whole queue; with --repair, what can be repaired safely is repaired as it is found.
 * Exits 1 when a problem is left (found and not repaired), so a scheduled run can alarm on it.
 */
export function checkCommand(program: Command): void {
  program
    .command("check")
    .description(
      "check the queue's invariants (every task in one set, groups, holds, wake-ups); --repair fixes what is safe",
    )
    .option("--repair", "repair what can be repaired safely (stray members, counts, holds, marks); the rest is listed")
    .option("--json", 'print {"queue", "problems": [{code, subject, detail, repaired}], "left"} as JSON')
    .addHelpText(
      "after",
      "\nExit codes: 0 nothing left to do, 1 a problem is left (or the check failed), 2 usage error.\nExamples:\n  leaseq --queue emails check\n  leaseq --queue emails check --repair --json",
    )
    .action(async (options: { repair?: boolean; json?: boolean }, command: Command) => {
      // Every partition of a partitioned queue (or the one --partition names), each problem marked with its own.
      const { count, only } = partitionsOf(command);
      const each = await withPartitions(command, (partitions) =>
        Promise.all(
          partitions.map(async ({ partition, queue }) => {
            const found = await queue.admin.checkAll({ now: Date.now(), repair: options.repair === true });
            return found.map((problem) => (count > 1 || only !== undefined ? { ...problem, partition } : problem));
          }),
        ),
      );
      const problems: Array<CheckProblem & { partition?: number }> = each.flat();
      const scope = only !== undefined ? ` partition ${only}` : count > 1 ? ` (${count} partitions)` : "";
      const left = problems.filter((problem) => !problem.repaired).length;
      const repaired = problems.length - left;
      printResult(options.json, {
        json: () => ({ queue: queueName(command), problems, left }),
        text: () => [
          ...problems.map(formatProblem),
          problems.length === 0
            ? `queue "${queueName(command)}"${scope}: no problem found`
            : `queue "${queueName(command)}"${scope}: ${problems.length} problem(s) found, ${repaired} repaired, ${left} left`,
        ],
      });
      if (left > 0) {
        throw new OperationError(
          options.repair
            ? `check: ${left} problem(s) cannot be repaired safely: inspect each task, then repair or delete it`
            : `check: ${left} problem(s) found: run leaseq check --repair to repair what is safe`,
        );
      }
    });
}
