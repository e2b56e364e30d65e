import { randomUUID } from "node:crypto";
import { TASK_DEFAULTS, type Task } from "../functions/tasks.js";
import { InvalidInputError } from "../shared/errors.js";
import { progressText } from "../shared/queue.js";

const FIELDS = ["id", "type", "group", "payload", "attempt", "maxAttempts", "leaseDeadlineMs", "signal", "progress"];

/**
 * A `Task` as a handler receives it, for calling a handler directly in a unit test: the fields
 * given, and for the others a random id, type "test", no group, payload {}, attempt 1,
 * maxAttempts 5 and a lease ending 60 s from now (the defaults of a declared type), and a signal
 * that never aborts (pass `signal: controller.signal` to abort it yourself), and a `progress` that
 * checks its value as the worker does and keeps nothing (pass your own to see what it reports). Throws
 * InvalidInputError naming a field a Task does not have.
 */
export function testTask<Payload = Record<string, never>>(fields: Partial<Task<Payload>> = {}): Task<Payload> {
  const unknown = Object.keys(fields ?? {}).filter((key) => !FIELDS.includes(key));
  if (unknown.length > 0) {
    throw new InvalidInputError(
      `testTask: unknown field${unknown.length === 1 ? "" : "s"} ${unknown.map((key) => JSON.stringify(key)).join(", ")}; a Task has ${FIELDS.join(", ")}`,
    );
  }
  return {
    id: randomUUID(),
    type: "test",
    group: undefined,
    payload: {} as Payload,
    attempt: 1,
    maxAttempts: TASK_DEFAULTS.maxAttempts,
    leaseDeadlineMs: Date.now() + TASK_DEFAULTS.heartbeatMs,
    signal: new AbortController().signal,
    ...fields,
    progress: fields.progress ?? ((value: unknown) => void progressText("testTask: progress", value)),
  };
}
