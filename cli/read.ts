import { Argument, type Command } from "commander";
import { LIMITS } from "../shared/config.js";
import type { Queue } from "../shared/queue.js";
import { LISTABLE } from "../shared/queue-admin.js";
import { priorityOfRank } from "../shared/records.js";
import { sumStats } from "../shared/sum-stats.js";
import { AT_LABEL, duration } from "../shared/text.js";
import {
  type GroupStats,
  type ListedTask,
  type QueueStats,
  type TaskAttempt,
  type TaskInfo,
  type TaskState,
  TIME_OF_STATE,
} from "../shared/types.js";
import { partitionsOf, queueName, withPartitions, withQueue } from "./connect.js";
import { OperationError, UsageError } from "./errors.js";
import { type FilterOptions, findAll, hasFilter } from "./filters.js";
import { stuckFirst } from "./group-order.js";
import { printResult } from "./output.js";
import { durationArg, integer } from "./parse.js";

/** Stats as aligned lines: one per state, with the ages operators alarm on. */
export function formatStats(stats: QueueStats): string {
  const row = (label: string, count: number, note = "") => `${label.padEnd(10)}${String(count).padStart(8)}${note}`;
  return [
    row(
      "ready",
      stats.ready,
      stats.ready > 0 ? `   oldest waiting ${duration(stats.oldestWaitingAgeMs)}${parkedNote(stats)}` : "",
    ),
    row("scheduled", stats.scheduled, stats.dueScheduled > 0 ? `   ${stats.dueScheduled} due` : ""),
    row(
      "leased",
      stats.leased,
      stats.mostOverdueLeaseMs > 0 ? `   most overdue ${duration(stats.mostOverdueLeaseMs)}` : "",
    ),
    row("done", stats.done),
    row("failed", stats.failed),
    ...(stats.corrupt > 0
      ? [row("corrupt", stats.corrupt, "   records that cannot be read: leaseq list corrupt, then repair or delete")]
      : []),
    ...(stats.paused ? ["PAUSED    the queue leases nothing until leaseq resume"] : []),
    ...(stats.pausedTypes.length > 0 ? [`paused types: ${stats.pausedTypes.join(", ")} (leaseq resume --type)`] : []),
  ].join("\n");
}

/** Says when the oldest waiting task is a parked one: its group holds it back, not the workers. */
function parkedNote(stats: QueueStats): string {
  return stats.oldestWaitingAgeMs > stats.oldestReadyAgeMs
    ? ` (parked behind its group: leaseq groups; the next to run waited ${duration(stats.oldestReadyAgeMs)})`
    : "";
}

function formatTask(task: TaskInfo): string {
  const lines = [
    ["id", task.id],
    ["state", task.state],
    ["type", task.type],
    ...(task.group ? [["group", task.group]] : []),
    ["priority", String(task.priority)],
    ["attempts", task.maxAttempts > 0 ? `${task.attempts} of ${task.maxAttempts}` : String(task.attempts)],
    ...(task.stalls > 0 ? [["stalls", `${task.stalls} (its lease ran out while held: its worker stopped)`]] : []),
    [AT_LABEL[task.state], new Date(task[TIME_OF_STATE[task.state]] ?? 0).toISOString()],
  ];
  if (task.holdsGroup) {
    lines.push([
      "holds",
      `its group ${task.group} waits behind it: leaseq requeue ${task.id} (it runs first) or leaseq skip ${task.id}`,
    ]);
  }
  if (task.lastError) lines.push([task.state === "corrupt" ? "why" : "last error", task.lastError]);
  lines.push(["payload", task.payload === "" ? "(dropped when done)" : task.payload]);
  if (task.progress !== undefined) lines.push(["progress", JSON.stringify(task.progress)]);
  if (task.result !== undefined) lines.push(["result", JSON.stringify(task.result)]);
  const text = lines.map(([label, value]) => `${`${label}:`.padEnd(13)}${value}`);
  if (task.history.length > 0) text.push("history:", ...task.history.map(attemptLine));
  return text.join("\n");
}

/** One attempt as `inspect` shows it: number, start, wait, run time, outcome and error. */
function attemptLine(attempt: TaskAttempt): string {
  const started =
    attempt.startedAtMs === undefined ? "start not recorded" : new Date(attempt.startedAtMs).toISOString();
  const waited = attempt.waitedMs === undefined ? "" : `  waited ${duration(attempt.waitedMs)}`;
  const ran = attempt.runMs === undefined ? "" : `  ran ${duration(attempt.runMs)}`;
  const error = attempt.error === "" ? "" : `  ${JSON.stringify(attempt.error)}`;
  return `  #${attempt.attempt}  ${started}${waited}${ran}  ${attempt.outcome}${error}`;
}

/** `stats` of a partitioned queue: the sum as one queue's, then each partition's counts. */
async function partitionedStats(command: Command, json: boolean | undefined): Promise<void> {
  const [partitions, backend] = await withPartitions(command, async (list, where) => {
    const each = await Promise.all(
      list.map(async ({ partition, queue }) => ({ partition, ...(await queue.stats({ now: Date.now() })) })),
    );
    return [each, where] as const;
  });
  const total = sumStats(partitions);
  printResult(json, {
    json: () => ({ queue: queueName(command), backend, ...total, partitions }),
    text: () => [
      `queue "${queueName(command)}" on ${backend}, ${partitions.length} partitions\n${formatStats(total)}`,
      ...partitions.map(
        (stats) =>
          `  partition ${stats.partition}: ready ${stats.ready}, scheduled ${stats.scheduled}, leased ${stats.leased}, done ${stats.done}, failed ${stats.failed}${stats.corrupt > 0 ? `, corrupt ${stats.corrupt}` : ""}`,
      ),
    ],
  });
}

/** Registers `stats`, `inspect` and `list`: read-only commands. */
export function readCommands(program: Command): void {
  program
    .command("stats")
    .description("count the tasks in each state (with --groups: per group too)")
    .option("--json", 'print {"queue", "backend", "ready", "scheduled", "leased", "done", "failed", ...} as JSON')
    .option(
      "--groups",
      "also list the groups held behind a FAILED task, then those with the most READY tasks, and their leased and parked counts",
    )
    .option("--limit <n>", "with --groups: most groups to list", integer(1, LIMITS.batchMax), 20)
    .action(async (options: { json?: boolean; groups?: boolean; limit: number }, command: Command) => {
      const { count, only } = partitionsOf(command);
      if (count > 1 && only === undefined) {
        if (options.groups) throw new UsageError("stats --groups lists one partition's groups: add --partition K");
        return partitionedStats(command, options.json);
      }
      const [stats, backend, groups] = await withQueue(command, async (queue, where) => {
        const found = options.groups ? await topGroups(queue, options.limit) : undefined;
        return [await queue.stats({ now: Date.now() }), where, found] as const;
      });
      printResult(options.json, {
        json: () => ({ queue: queueName(command), backend, ...stats, ...(groups ? { groups } : {}) }),
        text: () => [
          `queue "${queueName(command)}" on ${backend}\n${formatStats(stats)}`,
          ...(groups ? groupLines(groups) : []),
        ],
      });
    });

  program
    .command("groups")
    .description("list the groups with work, stuck first: held behind a FAILED task, then the longest waiting")
    .option("--json", 'print {"queue", "groups": [{"type", "group", "ready", "parked", "leased", ...}], ...} as JSON')
    .option("--filter <text>", "only the groups whose name contains this text", "")
    .option("--limit <n>", "most groups to list", integer(1, LIMITS.batchMax), 20)
    .action(async (options: { json?: boolean; filter: string; limit: number }, command: Command) => {
      const groups = await withQueue(command, (queue) => topGroups(queue, options.limit, options.filter));
      printResult(options.json, {
        json: () => ({
          queue: queueName(command),
          groups: groups.list,
          matched: groups.matched,
          scanned: groups.scanned,
          more: groups.more,
        }),
        text: () => groupLines(groups, options.filter),
      });
    });

  program
    .command("inspect")
    .description("show one task: state, type, attempts, last error, payload")
    .argument("<id>", "task id")
    .option("--json", "print the task as JSON (payload parsed)")
    .action(async (id: string, options: { json?: boolean }, command: Command) => {
      const task = await withQueue(command, (queue) => queue.admin.inspect(id));
      if (task === undefined) {
        throw new OperationError(`inspect: no task with id "${id}" in queue "${queueName(command)}"`);
      }
      printResult(options.json, {
        json: () => ({
          ...task,
          payload: task.payload === "" ? null : JSON.parse(task.payload),
          at: new Date(task[TIME_OF_STATE[task.state]] ?? 0).toISOString(),
        }),
        text: () => [formatTask(task)],
      });
    });

  program
    .command("list")
    .description("list the tasks in one state, in that state's order (failed and corrupt ones with their error)")
    .addArgument(new Argument("<state>", "task state").choices(LISTABLE))
    .option("--limit <n>", "most tasks to show", integer(1, LIMITS.batchMax), 100)
    .option("--offset <n>", "tasks to skip first", integer(0, 1_000_000_000), 0)
    .option("--type <type>", "only tasks of this type")
    .option("--group <group>", "only tasks of this group")
    .option("--error <substring>", "only tasks whose last error contains this")
    .option(
      "--older-than <duration>",
      "only tasks due, finished or set aside longer ago than this (e.g. 2h, 7d)",
      durationArg,
    )
    .option("--json", "print the tasks as a JSON array")
    .addHelpText(
      "after",
      "\nExamples:\n  leaseq --queue emails list failed --error SMTP --older-than 1h\n  leaseq --queue emails list ready --type resize-image --limit 20",
    )
    .action(async (state: TaskState, options: ListOptions, command: Command) => {
      const filtered = hasFilter(options);
      const tasks = await withQueue(command, (queue) =>
        filtered ? findAll(queue, state, options, options.limit) : queue.admin.list(state, options),
      );
      const after = options.offset > 0 ? ` after offset ${options.offset}` : "";
      printResult(options.json, {
        json: () => tasks,
        text: () => tasks.map((task) => taskLine(task, state)),
        empty: `no ${filtered ? "matching " : ""}${state} tasks${after}`,
      });
    });
}

/** A task as `list` shows it: id, type, group, attempts, the state's time (priority for ready) and the last error. */
function taskLine(task: ListedTask, state: TaskState): string {
  // A ready task's score is its rank; the priority is its high part (see shared/queue.ts claim).
  const when =
    state === "ready"
      ? `priority ${priorityOfRank(task.score)}`
      : `${AT_LABEL[state]} ${new Date(task.score).toISOString()}`;
  if (state === "corrupt") return `${task.id}  ${when}  ${task.lastError}`;
  const error = task.lastError ? `  error: ${task.lastError.replace(/\s+/g, " ").slice(0, 200)}` : "";
  const group = task.group === undefined ? "" : `  group ${task.group}`;
  return `${task.id}  ${task.type}${group}  attempts ${task.attempts}  ${when}${error}`;
}

interface ListOptions extends FilterOptions {
  limit: number;
  offset: number;
  json?: boolean;
}

/** Groups read at most by `stats --groups`: 10 pages of 1000. */
const GROUPS_SCAN_MAX = 10_000;

/** The `limit` groups with the most READY tasks (then leased), reading at most GROUPS_SCAN_MAX. */
async function topGroups(queue: Queue, limit: number, filter = "") {
  const all: GroupStats[] = [];
  let cursor: string | undefined = "0";
  let scanned = 0;
  const now = Date.now();
  while (cursor !== undefined && scanned < GROUPS_SCAN_MAX) {
    const page: { groups: GroupStats[]; next: string | undefined } = await queue.admin.groups({
      cursor,
      count: 1000,
      now,
    });
    scanned += page.groups.length;
    all.push(...page.groups.filter((group) => group.group.includes(filter)));
    cursor = page.next;
  }
  all.sort(stuckFirst);
  return { list: all.slice(0, limit), matched: all.length, scanned, more: cursor !== undefined };
}

/** The groups `stats --groups` and `groups` found, as they show them: a heading, then a line per group. */
function groupLines(groups: Awaited<ReturnType<typeof topGroups>>, filter = ""): string[] {
  const which = filter === "" ? "with work" : `with work whose name has "${filter}"`;
  const heading =
    groups.matched > 0
      ? `groups (${groups.list.length} of ${groups.matched} ${which}, stuck first):`
      : `no group ${which}`;
  const lines = groups.list.map((group) => {
    const parked = group.parked > 0 ? ` (${group.parked} parked)` : "";
    const waited =
      group.oldestWaitingAgeMs === undefined ? "" : `  oldest parked waited ${duration(group.oldestWaitingAgeMs)}`;
    const held = group.heldBy === undefined ? "" : `  held by ${group.heldBy} (FAILED: requeue or skip it)`;
    return `  ${group.type}/${group.group}  ready ${group.ready}${parked}  leased ${group.leased}${waited}${held}`;
  });
  return [heading, ...lines, ...(groups.more ? [`  (stopped after ${groups.scanned} groups)`] : [])];
}
