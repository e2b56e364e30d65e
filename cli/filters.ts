// The filter flags of `list`, `requeue` and `delete --state` (--type, --group, --error,
// --older-than): the tasks of a state they select, read and changed page by page through `find`,
// so no call is unbounded whatever the queue holds.
import type { Command } from "commander";
import type { Queue } from "../shared/queue.js";
import type { ListedTask, TaskState } from "../shared/types.js";
import type { IdResult } from "./by-ids.js";
import { queueName } from "./connect.js";
import { OperationError } from "./errors.js";
import { counted } from "./output.js";

/** The states whose tasks may be deleted (`delete --state`, `purge`): all but LEASED (cancel those). */
export const DELETABLE = ["ready", "scheduled", "done", "failed", "corrupt"] as const;
export type Deletable = (typeof DELETABLE)[number];

/** The filter flags. */
export interface FilterOptions {
  type?: string;
  group?: string;
  error?: string;
  /** Ms (durationArg). */
  olderThan?: number;
}

/** Whether any filter flag is given. */
export function hasFilter(options: FilterOptions): boolean {
  return (
    options.type !== undefined ||
    options.group !== undefined ||
    options.error !== undefined ||
    options.olderThan !== undefined
  );
}

/** The `find` filter of the filter flags. */
export function taskFilter(options: FilterOptions, now: number) {
  return { type: options.type, group: options.group, error: options.error, olderThanMs: options.olderThan, now };
}

/**
 * The tasks of `state` matching the filter flags, from `offset` on, up to `most`: `find` calls of
 * 1000 tasks read each.
 */
export async function findAll(
  queue: Queue,
  state: TaskState,
  options: FilterOptions & { offset?: number },
  most: number,
): Promise<ListedTask[]> {
  const found: ListedTask[] = [];
  let cursor: number | undefined = options.offset ?? 0;
  const now = Date.now();
  while (cursor !== undefined && found.length < most) {
    const page = await queue.admin.find(state, { ...taskFilter(options, now), cursor });
    found.push(...page.tasks);
    cursor = page.next;
  }
  return found.slice(0, most);
}

/** What a change by filter came to: the ids it matched, those it changed, and those it refused. */
export interface FilteredOutcome {
  matched: string[];
  changed: string[];
  refused: IdResult[];
}

/**
 * Applies `change` to the tasks of `state` matching the filters, page by page (each `find` reads at
 * most 1000 tasks, each change takes at most 1000 ids). A run stopped half-way is resumed by running
 * it again: what it changed left the state. With `dryRun`, only the matching tasks are collected.
 */
async function byFilter(
  queue: Queue,
  state: TaskState,
  options: FilterOptions & { dryRun?: boolean },
  change: (ids: string[]) => Promise<IdResult[]>,
): Promise<FilteredOutcome> {
  const outcome: FilteredOutcome = { matched: [], changed: [], refused: [] };
  const now = Date.now();
  let cursor: number | undefined = 0;
  while (cursor !== undefined) {
    const page = await queue.admin.find(state, { ...taskFilter(options, now), cursor });
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

/** `requeue` with filters: requeues the FAILED tasks matching them. */
export function requeueByFilter(queue: Queue, options: FilterOptions & { dryRun?: boolean }) {
  return byFilter(queue, "failed", options, (batch) => queue.admin.requeue(batch, { now: Date.now() }));
}

/**
 * `delete --state`: deletes the tasks of `state` matching the filters, each only if it is still in
 * `state` when its batch is deleted: one that moved on since `find` met it (requeued, say) is left
 * alone and reported "not_in_state".
 */
export function deleteByFilter(queue: Queue, state: Deletable, options: FilterOptions & { dryRun?: boolean }) {
  return byFilter(queue, state, options, (batch) => queue.admin.delete(batch, { state, now: Date.now() }));
}

/**
 * Prints what a change by filter did ("requeued 3 failed tasks of queue ...") or, with `dryRun`,
 * would do with the ids; then fails naming each task that changed meanwhile and was refused.
 */
export function reportFiltered(
  command: Command,
  verb: { name: string; past: string },
  state: TaskState,
  outcome: FilteredOutcome,
  dryRun: boolean | undefined,
): void {
  const tasks = (count: number) => counted(count, `${state} task`);
  const queue = `queue "${queueName(command)}"`;
  if (dryRun) {
    const ids = outcome.matched.length > 0 ? `: ${outcome.matched.join(", ")}` : "";
    console.log(`would ${verb.name} ${tasks(outcome.matched.length)} of ${queue}${ids}`);
    return;
  }
  console.log(`${verb.past} ${tasks(outcome.changed.length)} of ${queue}`);
  if (outcome.refused.length > 0) {
    const list = outcome.refused.map((result) => `${result.id} (${result.status})`).join(", ");
    throw new OperationError(`${verb.name}: not ${verb.past} (changed meanwhile): ${list}`);
  }
}
