import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { text } from "node:stream/consumers";
import { type Command, Option } from "commander";
import { DEFAULTS, LIMITS } from "../shared/config.js";
import { checkFlow } from "../shared/flow.js";
import type { Queue } from "../shared/queue.js";
import { mergeWakeTo } from "../shared/queue-context.js";
import { type EnqueueResult, TASK_INPUT_FIELDS, type TaskInput, type WakeTo } from "../shared/types.js";
import { checkGroup, checkId, checkInteger, checkName, dueTime, serializePayload } from "../shared/validate.js";
import { inBatches } from "./batches.js";
import { withQueue } from "./connect.js";
import { UsageError } from "./errors.js";
import { printResult } from "./output.js";
import { integer, isoTime } from "./parse.js";
import { wakeForEnqueued } from "./wake.js";

interface EnqueueOptions {
  type?: string;
  id?: string;
  payload?: string;
  priority?: number;
  delayMs?: number;
  runAt?: number;
  group?: string;
  dedupe?: string;
  dedupeTtlMs?: number;
  debounce?: string;
  debounceDelayMs?: number;
  debounceMaxWaitMs?: number;
  throttle?: string;
  throttlePerMs?: number;
  throttleDefer?: boolean;
  singleton?: string;
  stdin?: boolean;
  json?: boolean;
}

const LINE_FIELDS: readonly string[] = TASK_INPUT_FIELDS;

/** Registers `enqueue`: one task from flags, or many from JSON lines on stdin. */
export function enqueueCommand(program: Command): void {
  const window = integer(0, LIMITS.flowWindowMaxMs);
  program
    .command("enqueue")
    .description("add one task (--type ...) or many (--stdin: one JSON task per line)")
    .option("--type <type>", "task type: selects the handler and its lease policy")
    .option("--id <id>", "task id (default: a random UUID); enqueue is idempotent by id")
    .option("--payload <json>", "payload as JSON text, or @file to read it from a file (default {})")
    .option("--priority <n>", "lower runs sooner", integer(LIMITS.priorityMin, LIMITS.priorityMax))
    .option("--group <group>", "its group: its type's group policy applies (order, concurrency, rate per group)")
    .option("--dedupe <key>", "enqueue nothing when a task with this key was enqueued within --dedupe-ttl-ms")
    .option("--dedupe-ttl-ms <ms>", "the dedupe window", window)
    .option("--debounce <key>", "replace the waiting task of this key; run --debounce-delay-ms after the last")
    .option("--debounce-delay-ms <ms>", "the debounce delay", window)
    .option("--debounce-max-wait-ms <ms>", "run no later than this after the window's first enqueue", window)
    .option("--throttle <key>", "at most one task of this key per --throttle-per-ms; the rest are dropped")
    .option("--throttle-per-ms <ms>", "the throttle period", window)
    .option("--throttle-defer", "defer a throttled task to the key's next free period instead of dropping it")
    .option("--singleton <key>", "one task of this key waiting and one running: replaces the one waiting")
    .addOption(
      new Option("--delay-ms <ms>", "run no sooner than this many ms from now")
        .argParser(integer(0, LIMITS.timeMaxMs - Date.now()))
        .conflicts("runAt"),
    )
    .addOption(
      new Option("--run-at <iso>", "run no sooner than this time, e.g. 2030-01-02T03:04:05Z").argParser(isoTime),
    )
    .addOption(
      new Option(
        "--stdin",
        'read tasks from stdin, one JSON object per line: {"type", "id"?, "payload"?, ...}',
      ).conflicts([...TASK_INPUT_FIELDS]),
    )
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      `
Each stdin line is {"type": T, "id"?: ID, "payload"?: any JSON, "priority"?: N, "delayMs"?: N, "runAt"?: ISO or ms,
"group"?: G, and at most one of "dedupe"?: {"key", "ttlMs"}, "debounce"?: {"key", "delayMs", "maxWaitMs"},
"throttle"?: {"key", "perMs", "onLimit"?: "drop" | "defer"}, "singleton"?: {"key"}} (docs/flow-control.md).
Every line is checked before anything is sent, then tasks go in batches of ${LIMITS.batchMax}.

Examples:
  leaseq enqueue --type email --payload '{"to":"a@example.com"}' --priority -5
  leaseq enqueue --type report --payload @job.json --delay-ms 60000
  leaseq enqueue --type charge-card --group customer-42 --payload '{"cents":1200}'
  leaseq enqueue --type sync --payload '{"doc":7}' --debounce doc-7 --debounce-delay-ms 2000 --debounce-max-wait-ms 30000
  leaseq enqueue --stdin < tasks.jsonl`,
    )
    .action(async (options: EnqueueOptions, command: Command) => {
      if (options.stdin) return enqueueStdin(command, options);
      if (options.type === undefined) {
        throw new UsageError("enqueue: give --type TYPE for one task, or --stdin to read JSON lines");
      }
      const task: TaskInput = {
        id: options.id ?? randomUUID(),
        type: options.type,
        payload: await payloadOf(options.payload ?? "{}"),
        priority: options.priority,
        delayMs: options.delayMs,
        runAt: options.runAt,
        ...(options.group === undefined ? {} : { group: options.group }),
        ...flowOf(options),
      };
      const {
        results: [result],
        wakeAtMs,
        wakeTo,
      } = await withQueue(command, (queue) => queue.enqueueAndWake([task], { now: Date.now() }));
      const wakeError = await wakeForEnqueued(wakeAtMs, wakeTo, "the task starts", options.json === true);
      printResult(options.json, {
        json: () => (wakeError === undefined ? result : { ...result, wakeError }),
        text: () => [enqueueLine(result)],
      });
    });
}

/** What `enqueue` of one task says it did. */
function enqueueLine(result: EnqueueResult): string {
  if (result.status === "duplicate" && result.existingId !== undefined) {
    return `duplicate ${result.id}: its dedupe key holds ${result.existingId} (${result.state ?? "gone"}); nothing changed`;
  }
  if (result.status === "duplicate") return `duplicate ${result.id}: already known (${result.state}); nothing changed`;
  if (result.status === "throttled")
    return `throttled ${result.id}: its throttle key's period is taken; nothing enqueued`;
  const replaced = result.replaced === undefined ? "" : `, replacing ${result.replaced}`;
  return `enqueued ${result.id} (${result.state})${replaced}`;
}

/**
 * The flow control the flags ask for, every mode given (the queue checks it, naming the field, with
 * the task, and refuses two modes).
 */
function flowOf(options: EnqueueOptions): Partial<TaskInput> {
  const flow: Partial<TaskInput> = {};
  // Each window is the user's to choose: a mode's flag without its numbers names the flags missing.
  const needs: Array<[string | undefined, string, unknown[], string[]]> = [
    [options.dedupe, "--dedupe", [options.dedupeTtlMs], ["--dedupe-ttl-ms"]],
    [
      options.debounce,
      "--debounce",
      [options.debounceDelayMs, options.debounceMaxWaitMs],
      ["--debounce-delay-ms", "--debounce-max-wait-ms"],
    ],
    [options.throttle, "--throttle", [options.throttlePerMs], ["--throttle-per-ms"]],
  ];
  for (const [key, flag, values, names] of needs) {
    const missing = names.filter((_, i) => values[i] === undefined);
    if (key !== undefined && missing.length > 0) {
      throw new UsageError(`enqueue: ${flag} needs ${missing.map((name) => `${name} <ms>`).join(" and ")}`);
    }
  }
  if (options.dedupe !== undefined) flow.dedupe = { key: options.dedupe, ttlMs: options.dedupeTtlMs as number };
  if (options.debounce !== undefined) {
    flow.debounce = {
      key: options.debounce,
      delayMs: options.debounceDelayMs as number,
      maxWaitMs: options.debounceMaxWaitMs as number,
    };
  }
  if (options.throttle !== undefined) {
    flow.throttle = {
      key: options.throttle,
      perMs: options.throttlePerMs as number,
      onLimit: options.throttleDefer ? "defer" : "drop",
    };
  }
  if (options.singleton !== undefined) flow.singleton = { key: options.singleton };
  return flow;
}

/** The payload flag's value of `verb`: JSON text, or @path of a file holding it; throws UsageError. */
export async function payloadOf(flag: string, verb = "enqueue"): Promise<unknown> {
  let source = "--payload";
  let json = flag;
  if (flag.startsWith("@")) {
    source = `payload file ${flag.slice(1)}`;
    try {
      json = await readFile(flag.slice(1), "utf8");
    } catch (error) {
      throw new UsageError(`${verb}: cannot read ${source} (${(error as NodeJS.ErrnoException).code ?? error})`);
    }
  }
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new UsageError(`${verb}: ${source} is not valid JSON (${(error as Error).message})`);
  }
}

async function enqueueStdin(command: Command, options: EnqueueOptions): Promise<void> {
  const now = Date.now();
  const tasks = parseLines(await text(process.stdin), now);
  if (tasks.length === 0)
    throw new UsageError("enqueue --stdin: no tasks on stdin (expected one JSON object per line)");
  let wakeAt: number | undefined;
  const others: WakeTo[] = [];
  const results = await withQueue(command, (queue: Queue) =>
    inBatches(tasks, async (batch) => {
      const { results, wakeAtMs, wakeTo } = await queue.enqueueAndWake(batch, { now });
      if (wakeAtMs !== undefined) wakeAt = Math.min(wakeAt ?? wakeAtMs, wakeAtMs);
      mergeWakeTo(others, wakeTo);
      return results;
    }),
  );
  const added = results.filter((result) => result.status === "ok").length;
  const throttled = results.filter((result) => result.status === "throttled").length;
  const wakeError = await wakeForEnqueued(wakeAt, others, "the tasks start", options.json === true);
  const summary = {
    tasks: tasks.length,
    added,
    duplicates: tasks.length - added - throttled,
    throttled,
    ...(wakeError === undefined ? {} : { wakeError }),
  };
  const dropped = throttled === 0 ? "" : `, ${throttled} throttled`;
  printResult(options.json, {
    json: () => summary,
    text: () => [`enqueued ${added} of ${tasks.length} tasks (${summary.duplicates} duplicates${dropped})`],
  });
}

/**
 * Parses and checks every line as the queue would, so a bad line 5000 is reported before line 1 is
 * sent: a half-sent file without ids could not be resent without duplicating the first half.
 */
export function parseLines(input: string, now: number): TaskInput[] {
  const tasks: TaskInput[] = [];
  input.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    const where = `enqueue --stdin: line ${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new UsageError(`${where} is not valid JSON (${(error as Error).message})`);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new UsageError(`${where} must be a JSON object such as {"type":"email"}`);
    }
    const fields = value as Record<string, unknown>;
    const unknown = Object.keys(fields).filter((key) => !LINE_FIELDS.includes(key));
    if (unknown.length > 0) {
      throw new UsageError(`${where}: unknown field "${unknown[0]}"; allowed: ${LINE_FIELDS.join(", ")}`);
    }
    const runAt = typeof fields.runAt === "string" ? Date.parse(fields.runAt) : fields.runAt;
    const task = {
      id: fields.id === undefined ? randomUUID() : fields.id,
      type: fields.type,
      payload: fields.payload,
      priority: fields.priority,
      delayMs: fields.delayMs,
      runAt: Number.isNaN(runAt) ? fields.runAt : runAt,
      ...(fields.group === undefined ? {} : { group: fields.group }),
      ...(fields.dedupe === undefined ? {} : { dedupe: fields.dedupe }),
      ...(fields.debounce === undefined ? {} : { debounce: fields.debounce }),
      ...(fields.throttle === undefined ? {} : { throttle: fields.throttle }),
      ...(fields.singleton === undefined ? {} : { singleton: fields.singleton }),
    } as TaskInput;
    checkId(where, "id", task.id);
    checkName(where, "type", task.type, LIMITS.typeMaxBytes);
    if (task.group !== undefined) checkGroup(where, "group", task.group);
    checkInteger(where, "priority", task.priority ?? 0, LIMITS.priorityMin, LIMITS.priorityMax);
    dueTime(where, task, now);
    serializePayload(where, task.payload, DEFAULTS.maxPayloadBytes);
    checkFlow(where, task);
    tasks.push(task);
  });
  return tasks;
}
