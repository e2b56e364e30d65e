import type { SQSRecord } from "aws-lambda";
import { isTraceparent } from "../shared/tracing.js";
import type { TaskInput } from "../shared/types.js";
import { MAX_TASKS_PER_MESSAGE, TASK_MESSAGE_FIELDS, TRACEPARENT_ATTRIBUTE } from "./messages.js";

/** A task of a record that cannot be enqueued, and why (never its payload). */
export interface RejectedTask {
  index: number;
  task: unknown;
  reason: string;
}

/** A task of a record in the shape enqueue takes (id derived when missing), and as it was sent. */
export interface AcceptedTask {
  index: number;
  task: TaskInput;
  sent: unknown;
}

/** What one SQS record asks for. */
export type RecordIntent =
  | { kind: "enqueue"; tasks: AcceptedTask[]; rejected: RejectedTask[] }
  | { kind: "wake" }
  | { kind: "reject"; reason: string };

const WAKE_HINT = 'a wake-up is exactly {} or {"leaseq": "wake"}';
const FIELDS = TASK_MESSAGE_FIELDS as readonly string[];

/**
 * Reads a record body: `{"tasks": [...]}` enqueues, `{}` or `{"leaseq": "wake"}` wakes the worker,
 * anything else is rejected with its reason: a misspelled field is never taken for a wake-up. Tasks
 * are checked one by one, so one malformed task rejects only itself. A task without an id gets
 * `<messageId>-<index>`, so a redelivered message never duplicates it. Reasons name the field at
 * fault and never echo the body.
 */
export function readRecord(record: SQSRecord): RecordIntent {
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    return { kind: "reject", reason: `body is not JSON (${record.body.length} characters)` };
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    const got = body === null ? "null" : Array.isArray(body) ? "an array" : `a ${typeof body}`;
    return { kind: "reject", reason: `body must be a JSON object {"tasks": [...]} (or ${WAKE_HINT}), got ${got}` };
  }
  const keys = Object.keys(body);
  if (keys.length === 0) return { kind: "wake" };
  if (keys.length === 1 && keys[0] === "leaseq") {
    const value = (body as { leaseq: unknown }).leaseq;
    if (value === "wake") return { kind: "wake" };
    // The value is not echoed: a misplaced payload must not reach the logs.
    return { kind: "reject", reason: `"leaseq" must be "wake" (${WAKE_HINT}), got a ${typeof value}` };
  }
  const unknown = keys.filter((key) => key !== "tasks");
  if (unknown.length > 0 || !keys.includes("tasks")) {
    const named = unknown.map((key) => JSON.stringify(key.slice(0, 40))).join(", ");
    return {
      kind: "reject",
      reason: `unknown top-level field${unknown.length === 1 ? "" : "s"} ${named}: the body is {"tasks": [...]}, or ${WAKE_HINT}`,
    };
  }
  const tasks = (body as { tasks: unknown }).tasks;
  if (!Array.isArray(tasks) || tasks.length === 0 || tasks.length > MAX_TASKS_PER_MESSAGE) {
    const got = Array.isArray(tasks) ? `${tasks.length} tasks` : typeof tasks;
    return { kind: "reject", reason: `"tasks" must be an array of 1 to ${MAX_TASKS_PER_MESSAGE} tasks, got ${got}` };
  }
  const accepted: AcceptedTask[] = [];
  const rejected: RejectedTask[] = [];
  for (const [index, task] of tasks.entries()) {
    const reason = shapeProblem(task, index);
    if (reason) {
      rejected.push({ index, task, reason });
      continue;
    }
    const { id, runAt, ...rest } = task as TaskInput & { runAt?: unknown };
    let runAtMs: number | undefined;
    if (runAt !== undefined) {
      runAtMs = typeof runAt === "string" ? Date.parse(runAt) : (runAt as number);
      if (typeof runAtMs !== "number" || Number.isNaN(runAtMs)) {
        rejected.push({ index, task, reason: `tasks[${index}].runAt must be an ISO 8601 time or ms since epoch` });
        continue;
      }
    }
    accepted.push({
      index,
      sent: task,
      task: {
        ...rest,
        id: id ?? derivedTaskId(record.messageId, index),
        ...(runAtMs === undefined ? {} : { runAt: runAtMs }),
      },
    });
  }
  return { kind: "enqueue", tasks: accepted, rejected };
}

/**
 * The context a record's tasks were sent in: its `traceparent` attribute (docs/lambda.md#tracing)
 * when it holds a W3C traceparent, else "" (none, or a value that is not one: never refused for it).
 */
export function traceparentOf(record: SQSRecord): string {
  const value = record.messageAttributes?.[TRACEPARENT_ATTRIBUTE]?.stringValue;
  return isTraceparent(value) ? value : "";
}

/** The id of a task sent without one: its message's id and its index, the same on every delivery. */
export function derivedTaskId(messageId: string, index: number): string {
  return `${messageId}-${index}`;
}

/**
 * The record's body with the id each task sent without one is enqueued under, so the message
 * redriven from the dead-letter queue (where SQS gives it a new message id) enqueues none of its
 * tasks twice. A body that is not a task list is returned as it is.
 */
export function bodyWithTaskIds(record: SQSRecord): string {
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    return record.body;
  }
  const tasks = (body as { tasks?: unknown } | null)?.tasks;
  // As readRecord reads them: an id left out or null is derived.
  const idless = (task: unknown): task is Record<string, unknown> => isObject(task) && task.id == null;
  if (!Array.isArray(tasks) || !tasks.some(idless)) return record.body;
  return JSON.stringify({
    ...(body as object),
    tasks: tasks.map((task, index) => {
      if (!idless(task)) return task;
      const { id: _none, ...rest } = task;
      return { id: derivedTaskId(record.messageId, index), ...rest };
    }),
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function shapeProblem(task: unknown, index: number): string | undefined {
  if (task === null || typeof task !== "object" || Array.isArray(task)) {
    return `tasks[${index}] must be an object with at least "type"`;
  }
  const unknown = Object.keys(task).filter((key) => !FIELDS.includes(key));
  if (unknown.length > 0) {
    return `tasks[${index}] has unknown field ${JSON.stringify(unknown[0].slice(0, 40))}; allowed: ${FIELDS.join(", ")}`;
  }
  return undefined;
}
