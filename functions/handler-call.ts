import { progressText } from "../shared/queue.js";
import type { ClaimedTask } from "../shared/types.js";
import { checkPayload, issuesText } from "./schema.js";
import { type DeclaredTaskType, PermanentError } from "./tasks.js";

/** What a handler call needs of a claimed task. */
export type TaskToCall = Pick<ClaimedTask, "id" | "type" | "group" | "payload" | "attempt" | "leaseDeadlineMs">;

/**
 * Calls `type`'s handler for one task as the worker does: the payload read from its JSON and, when
 * the type declares a schema, checked by it (the handler receives the schema's output). A payload
 * the schema rejects throws PermanentError without calling the handler: no retry can fix it.
 * Anything else thrown is the handler's (or the schema's own), passed on as it is.
 */
export async function callHandler(
  type: DeclaredTaskType,
  task: TaskToCall,
  signal: AbortSignal,
  onProgress: (text: string) => void = () => {},
): Promise<unknown> {
  let payload: unknown = JSON.parse(task.payload);
  if (type.schema) {
    const checked = await checkPayload(type.schema, payload);
    if (checked.issues) {
      throw new PermanentError(`payload of task type "${task.type}" fails its schema: ${issuesText(checked.issues)}`);
    }
    payload = checked.value;
  }
  return await type.handler({
    id: task.id,
    type: task.type,
    group: task.group,
    payload,
    attempt: task.attempt,
    maxAttempts: type.maxAttempts,
    leaseDeadlineMs: task.leaseDeadlineMs,
    signal,
    progress: (value: unknown) => onProgress(progressText(`task ${task.id}: progress`, value)),
  });
}

/**
 * How the worker records what a handler threw: a PermanentError fails the task at once, anything
 * else is retried (FAILED once its attempts are used up); `reason` is the error text the queue keeps.
 */
export function failureOf(error: unknown): { permanent: boolean; reason: string } {
  const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return { permanent: error instanceof PermanentError, reason };
}
