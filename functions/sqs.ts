import type { SQSRecord } from "aws-lambda";
import type { TaskInput } from "../shared/types.js";

/** What one SQS record asks for. */
export type RecordIntent =
  | { kind: "enqueue"; tasks: TaskInput[] }
  | { kind: "wake" }
  | { kind: "reject"; reason: string };

const TASK_FIELDS = ["id", "type", "payload", "priority", "delayMs", "runAt"];
const MAX_TASKS_PER_RECORD = 1000;

/**
 * Reads a record body: `{"tasks": [...]}` enqueues, any other JSON object wakes the worker.
 * A task without an id gets `<messageId>-<index>`, so a redelivered message never duplicates it.
 * Reasons name the field at fault and never echo the body.
 */
export function readRecord(record: SQSRecord): RecordIntent {
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    return { kind: "reject", reason: `body is not JSON (${record.body.length} characters)` };
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return { kind: "reject", reason: 'body must be a JSON object: {"tasks": [...]} or a wake-up such as {}' };
  }
  if (!("tasks" in body)) return { kind: "wake" };
  const tasks = (body as { tasks: unknown }).tasks;
  if (!Array.isArray(tasks) || tasks.length === 0 || tasks.length > MAX_TASKS_PER_RECORD) {
    return { kind: "reject", reason: `"tasks" must be an array of 1 to ${MAX_TASKS_PER_RECORD} tasks` };
  }
  const inputs: TaskInput[] = [];
  for (const [index, task] of tasks.entries()) {
    if (task === null || typeof task !== "object" || Array.isArray(task)) {
      return { kind: "reject", reason: `tasks[${index}] must be an object with at least "type"` };
    }
    const unknown = Object.keys(task).filter((key) => !TASK_FIELDS.includes(key));
    if (unknown.length > 0) {
      return {
        kind: "reject",
        reason: `tasks[${index}] has unknown field ${JSON.stringify(unknown[0].slice(0, 40))}; allowed: ${TASK_FIELDS.join(", ")}`,
      };
    }
    const { id, runAt, ...rest } = task as TaskInput & { runAt?: unknown };
    let runAtMs: number | undefined;
    if (runAt !== undefined) {
      runAtMs = typeof runAt === "string" ? Date.parse(runAt) : (runAt as number);
      if (typeof runAtMs !== "number" || Number.isNaN(runAtMs)) {
        return { kind: "reject", reason: `tasks[${index}].runAt must be an ISO 8601 time or ms since epoch` };
      }
    }
    inputs.push({
      ...rest,
      id: id ?? `${record.messageId}-${index}`,
      ...(runAtMs === undefined ? {} : { runAt: runAtMs }),
    });
  }
  return { kind: "enqueue", tasks: inputs };
}
