// The verbs that change tasks named by id (cancel, skip, repair, requeue, delete): the change in
// batches on the command's queue, and the report of what it changed and what it refused.
import type { Command } from "commander";
import type { Queue } from "../shared/queue.js";
import { inBatches } from "./batches.js";
import { queueName, withQueue } from "./connect.js";
import { OperationError } from "./errors.js";

/** The outcome of one id. */
export interface IdResult {
  id: string;
  status: string;
}

/** How a verb by id reports: its name, its past tense, a note on the changed ones, and why by refusal status. */
export interface IdVerb {
  name: string;
  past: string;
  note?: string;
  /** What each refusal status means, in the operator's words (else the status itself is shown). */
  why: Record<string, string>;
}

/**
 * Prints the ids `verb` changed ("requeued a, b"), then fails naming each id it refused and why,
 * so the exit code says whether every id went through.
 */
export function report(command: Command, verb: IdVerb, results: readonly IdResult[]): void {
  const changed = results.filter((result) => result.status === "ok");
  if (changed.length > 0) {
    console.log(`${verb.past} ${changed.map((result) => result.id).join(", ")}${verb.note ? ` ${verb.note}` : ""}`);
  }
  const refused = results.filter((result) => result.status !== "ok");
  if (refused.length > 0) {
    const list = refused.map((result) => `${result.id} (${verb.why[result.status] ?? result.status})`).join(", ");
    throw new OperationError(`${verb.name}: not ${verb.past} in queue "${queueName(command)}": ${list}`);
  }
}

/** The ids among `results` that went through. */
export function okCount(results: readonly IdResult[]): number {
  return results.filter((result) => result.status === "ok").length;
}

/**
 * Applies `change` to `ids` on the command's queue, in batches the scripts take, then reports
 * (report: throws OperationError when any id was refused); resolves to every id's result.
 */
export async function changeByIds<T extends IdResult>(
  command: Command,
  ids: string[],
  verb: IdVerb,
  change: (queue: Queue, batch: string[]) => Promise<T[]>,
): Promise<T[]> {
  const results = await withQueue(command, (queue) => inBatches(ids, (batch) => change(queue, batch)));
  report(command, verb, results);
  return results;
}
