// Edit and requeue: the action (POST /q/<queue>/action, action=amend) that gives a FAILED task the
// payload its page's form sent and sends it back to READY (queue.admin.amend), the edit kept in the
// task's attempts with a note of its sizes. It runs once the request passed the action checks
// (auth.ts: not read-only, this server's Origin, the CSRF token). Text that is not JSON, or that
// the queue refuses (over maxPayloadBytes, nested too deep), shows again on the task page with the
// reason, nothing changed; so does an edit of a task that failed again since its page was drawn
// (its payload may have changed meanwhile). A task in any other state is refused by the library
// (`not_failed`).
import type { Context } from "hono";
import { InvalidInputError, ScriptArgumentError } from "../../shared/errors.js";
import { redact } from "../../shared/text.js";
import type { ItemResult } from "../../shared/types.js";
import { type Env, HttpError, text } from "./http.js";
import { type PageContext, resultPage } from "./pages.js";
import type { DashboardQueue } from "./queue.js";
import { taskPage } from "./task.js";

/** The note an edit leaves in the task's attempts (at most 200 bytes, as amend requires). */
export function amendNote(oldBytes: number, newBytes: number): string {
  return `payload edited in the dashboard: ${oldBytes} -> ${newBytes} bytes`;
}

/**
 * Amends the task the form names (`id`) with the JSON of its `payload` field, at `now`; redirects
 * to the task's page when done. Answers 400 with the task page and the reason for a payload that
 * is not JSON or is refused, 409 with it when the task failed again after `failedAt`, 409 with the
 * library's status (`not_failed`) for a task not FAILED, 404 for an unknown one.
 */
export async function amendAction(
  c: Context<Env>,
  queue: DashboardQueue,
  ctx: PageContext,
  form: Record<string, unknown>,
  now: number,
): Promise<Response> {
  const id = text(form.id) ?? "";
  const task = await queue.admin.inspect(id);
  if (!task) throw new HttpError(404, `No task with id "${id}" in queue "${queue.name}".`);
  const sent = text(form.payload) ?? "";
  const refuse = (status: 400 | 409, error: string) => c.html(taskPage(ctx, task, now, { text: sent, error }), status);
  let payload: unknown;
  try {
    payload = JSON.parse(sent);
  } catch (error) {
    return refuse(400, `Not saved: the payload is not JSON (${(error as Error).message}). Nothing changed.`);
  }
  const failedAt = text(form.failedAt);
  if (task.state === "failed" && failedAt && failedAt !== String(task.finishedAt ?? "")) {
    return refuse(
      409,
      "Not saved: the task ran and failed again since this page was drawn; its payload below is the current one. Nothing changed: edit it again.",
    );
  }
  const note = amendNote(Buffer.byteLength(task.payload), Buffer.byteLength(JSON.stringify(payload)));
  let result: ItemResult;
  try {
    result = await queue.admin.amend(id, payload, { now, note });
  } catch (error) {
    // The queue's checks of a payload: the library's (InvalidInputError), or the script's of the
    // queue's own settings, which may be stricter than this process's (ScriptArgumentError).
    if (error instanceof InvalidInputError || error instanceof ScriptArgumentError) {
      return refuse(400, `Not saved: ${redact(error.message)}. Nothing changed.`);
    }
    throw error;
  }
  const page = `${ctx.base}/task/${encodeURIComponent(id)}`;
  if (result.status === "ok") return c.redirect(page, 303);
  const summary = `task ${id} was not edited (${result.status}): nothing changed`;
  return c.html(resultPage(ctx, "Not edited", summary, [result], page), 409);
}
