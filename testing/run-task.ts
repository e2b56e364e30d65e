import { randomUUID } from "node:crypto";
import { callHandler, failureOf } from "../functions/handler-call.js";
import { backoffDelayMs, defineTasks, type TaskDeclaration, type TaskPayloads } from "../functions/tasks.js";
import { DEFAULTS } from "../shared/config.js";
import { InvalidInputError } from "../shared/errors.js";
import { serializePayload } from "../shared/validate.js";

/** What one run of a handler comes to, as the worker would settle it. */
export type TaskOutcome =
  /** The handler returned: the task is DONE. */
  | { status: "done" }
  /** The handler threw, and the task has attempts left: it runs again at `retryAtMs` (its type's backoff). */
  | { status: "retry"; error: unknown; reason: string; retryAtMs: number }
  /**
   * The handler threw PermanentError (or the payload failed the type's schema, and the handler was
   * not called), or it threw on the last attempt: the task is FAILED with `reason`.
   */
  | { status: "failed"; error: unknown; reason: string };

export interface RunTaskOptions {
  /** Default: a random UUID. */
  id?: string;
  group?: string;
  /** Which run this is, 1 (the default) to the type's maxAttempts: a throw on the last one fails the task. */
  attempt?: number;
  /** Passed to the handler as `task.signal`. Default: one that never aborts. */
  signal?: AbortSignal;
  /** The time of the run, ms: the lease and a retry's time count from it. Default: the clock. */
  now?: number;
}

/**
 * Runs `type`'s handler once on `payload`, as the worker would, without Redis: the payload goes
 * through JSON as it does through the queue, is checked by the type's schema if it declares one,
 * then the handler runs. Resolves to the outcome the worker would settle, with what was thrown
 * (`error`) and the text the queue would keep (`reason`); it never swallows a failure into "done".
 * Throws InvalidInputError when the type has no handler in `declaration` or the payload could not
 * be enqueued (not JSON, too large).
 */
export async function runTask<
  Declaration extends TaskDeclaration,
  Type extends keyof TaskPayloads<Declaration> & string,
>(
  declaration: Declaration,
  type: Type,
  payload: TaskPayloads<Declaration>[Type],
  options: RunTaskOptions = {},
): Promise<TaskOutcome> {
  const tasks = defineTasks(declaration);
  const declared = Object.hasOwn(tasks.types, type) ? tasks.types[type] : undefined;
  if (declared === undefined) {
    throw new InvalidInputError(
      `runTask: task type ${JSON.stringify(type)} has no handler in this declaration; its types: ${Object.keys(tasks.types).join(", ")}`,
    );
  }
  const attempt = options.attempt ?? 1;
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > declared.maxAttempts) {
    throw new InvalidInputError(
      `runTask: attempt must be an integer from 1 to ${declared.maxAttempts} (the maxAttempts of "${type}"), got ${JSON.stringify(options.attempt)}`,
    );
  }
  const now = options.now ?? Date.now();
  const task = {
    id: options.id ?? randomUUID(),
    type,
    group: options.group,
    payload: serializePayload(`runTask: task type "${type}"`, payload, DEFAULTS.maxPayloadBytes),
    attempt,
    leaseDeadlineMs: now + declared.heartbeatMs,
  };
  try {
    await callHandler(declared, task, options.signal ?? new AbortController().signal);
    return { status: "done" };
  } catch (error) {
    const { permanent, reason } = failureOf(error);
    if (permanent || attempt >= declared.maxAttempts) return { status: "failed", error, reason };
    return { status: "retry", error, reason, retryAtMs: now + backoffDelayMs(declared.backoff, attempt) };
  }
}
