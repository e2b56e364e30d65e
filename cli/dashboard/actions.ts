// The dashboard's one POST route, /q/<queue>/action (a partitioned queue's: each partition's,
// /q/<queue>/p/<k>/action): once the request passed the action checks
// (auth.ts), pause or resume the queue or a task type, pause, resume, run or remove a schedule,
// requeue, skip, cancel or delete tasks (the selected ones, or all matching a list's filter), or
// edit a FAILED task's payload and requeue it (amend.ts). Each answers with a page of what it did,
// and a link back; an edit, with the task's page.
import type { Context, Hono } from "hono";
import type { ItemResult, TaskState } from "../../shared/types.js";
import { inBatches } from "../batches.js";
import { counted } from "../output.js";
import { amendAction } from "./amend.js";
import { actionForm } from "./auth.js";
import type { Directory } from "./directory.js";
import { durationOf, type Env, HttpError, list, safeBack, stateOf, text } from "./http.js";
import { actionsFor, resultPage } from "./pages.js";
import { type DashboardQueue, QUEUE_PREFIXES, SCAN_DEFAULT } from "./queue.js";

/** Most tasks one "all matching" action touches. */
export const MATCHING_MAX = 10_000;

export interface ActionOptions {
  directory: Directory;
  now: () => number;
  readOnly: boolean;
  /** The process's CSRF token, which every action's form carries. */
  csrf: string;
}

/** What an action did: its page's title and summary, and the status of each task it touched. */
interface Outcome {
  title: string;
  summary: string;
  results: ItemResult[];
}

type Form = Record<string, unknown>;

const TASK_ACTIONS = { requeue: "requeued", delete: "deleted", cancel: "cancelled", skip: "skipped" } as const;
type TaskAction = keyof typeof TASK_ACTIONS;

/** Registers POST /q/:queue/action (and a partitioned queue's partition's, /q/:queue/p/:partition/action) on `app`. */
export function registerActions(app: Hono<Env>, { directory, now, readOnly, csrf }: ActionOptions): void {
  const post = async (c: Context<Env>) => {
    const form = await actionForm(c, { readOnly, csrf });
    // Checked after the CSRF token: a forged request learns nothing of which queues exist.
    const { queue, ctx } = await directory.queueOf(c);
    const action = text(form.action);
    const back = safeBack(form.back, `${ctx.base}/`);
    const at = now();
    if (action === "amend") return amendAction(c, queue, ctx, form, at);
    const { title, summary, results } =
      action === "pause" || action === "resume"
        ? await pauseOrResume(queue, action, form, at)
        : action?.startsWith("schedule-")
          ? await scheduleAction(queue, action, form, at)
          : await taskAction(queue, action, form, at);
    return c.html(resultPage(ctx, title, summary, results, back));
  };
  for (const prefix of QUEUE_PREFIXES) app.post(`${prefix}/action`, post);
}

/** Pauses or resumes the queue, or the task type of the form's `type`. */
async function pauseOrResume(queue: DashboardQueue, action: "pause" | "resume", form: Form, at: number) {
  const type = text(form.type)?.trim() || undefined;
  if (action === "pause") await queue.admin.pause({ now: at, type });
  else await queue.admin.resume({ now: at, type });
  const what = type ? `task type "${type}"` : `queue "${queue.name}"`;
  return { title: action === "pause" ? "Paused" : "Resumed", summary: `${action}d ${what}`, results: [] };
}

/** Pauses, resumes, runs now or removes the schedule the form names; 404 when the queue has none of that name. */
async function scheduleAction(queue: DashboardQueue, action: string, form: Form, at: number): Promise<Outcome> {
  const name = text(form.schedule) ?? "";
  const unknown = () => new HttpError(404, `No schedule "${name}" in queue "${queue.name}".`);
  if (action === "schedule-pause" || action === "schedule-resume") {
    const pause = action === "schedule-pause";
    const status = pause
      ? await queue.schedules.pause(name, { now: at })
      : await queue.schedules.resume(name, { now: at });
    if (status === "unknown") throw unknown();
    const summary =
      status === "done"
        ? `${pause ? "paused" : "resumed"} schedule "${name}"`
        : `schedule "${name}" was ${pause ? "paused already" : "not paused"} (unchanged)`;
    return { title: pause ? "Paused" : "Resumed", summary, results: [] };
  }
  if (action === "schedule-run") {
    const ran = await queue.schedules.runNow(name, { now: at });
    if (!ran) throw unknown();
    // The dashboard sends no wake-up (as for a requeue): a draining worker or the reclaimer's
    // next run starts it; `leaseq schedules run-now` sends one.
    const summary = `enqueued ${ran.id} (schedule "${name}"): it starts at the reclaimer's next run, or sooner if a worker is draining`;
    return { title: "Run now", summary, results: [] };
  }
  if (action === "schedule-remove") {
    const status = await queue.schedules.remove(name, { now: at });
    if (status === "unknown") throw unknown();
    return { title: "Removed", summary: `removed schedule "${name}"; its tasks already made stay`, results: [] };
  }
  throw new HttpError(400, `Unknown action "${action}".`);
}

/**
 * Requeues, skips, cancels or deletes the tasks the form selected (`ids`), or all those of its
 * list's state matching its filter (`scope=matching`, at most MATCHING_MAX), in batches.
 */
async function taskAction(queue: DashboardQueue, action: string | undefined, form: Form, at: number): Promise<Outcome> {
  if (action === undefined || !Object.hasOwn(TASK_ACTIONS, action)) {
    throw new HttpError(400, `Unknown action "${action ?? ""}".`);
  }
  const verb = action as TaskAction;
  let ids = list(form.ids);
  let capped = false;
  // The list the tasks were chosen from: a delete takes only those still in its state (one that
  // moved on since the page was drawn, a requeued one say, is left alone: "not_in_state").
  const listed = text(form.state) ? stateOf(text(form.state) ?? "") : undefined;
  const deleteIn = listed === undefined || listed === "leased" ? {} : { state: listed, now: at };
  if (text(form.scope) === "matching") {
    const state = stateOf(text(form.state) ?? "");
    if (verb === "skip" || !actionsFor(state).includes(verb)) {
      throw new HttpError(400, `Cannot ${verb} ${state} tasks.`);
    }
    ({ ids, capped } = await matchingIds(queue, state, {
      type: text(form.type) || undefined,
      group: text(form.group) || undefined,
      error: text(form.error) || undefined,
      olderThanMs: durationOf(text(form.olderThan)),
      now: at,
    }));
  }
  if (ids.length === 0) throw new HttpError(400, "No tasks selected.");
  const results = await inBatches(ids, (batch) => {
    if (verb === "requeue") return queue.admin.requeue(batch, { now: at });
    if (verb === "skip") return queue.admin.skip(batch, { now: at });
    if (verb === "delete") return queue.admin.delete(batch, deleteIn);
    return queue.admin.cancel(batch, { now: at });
  });
  const ok = results.filter((result) => result.status === "ok").length;
  const more = capped ? ` (stopped at ${MATCHING_MAX}: run it again for more)` : "";
  return {
    title: `${verb[0].toUpperCase()}${verb.slice(1)}`,
    summary: `${TASK_ACTIONS[verb]} ${ok} of ${counted(results.length, "task")}${more}`,
    results,
  };
}

/** The ids of the tasks in `state` matching a filter, up to MATCHING_MAX, read before anything changes. */
async function matchingIds(
  queue: DashboardQueue,
  state: TaskState,
  filter: { type?: string; group?: string; error?: string; olderThanMs?: number; now: number },
): Promise<{ ids: string[]; capped: boolean }> {
  const ids: string[] = [];
  let cursor: number | undefined = 0;
  for (let pages = 0; cursor !== undefined && pages < 10_000; pages++) {
    const page = await queue.admin.find(state, { ...filter, cursor, scan: SCAN_DEFAULT });
    for (const task of page.tasks) ids.push(task.id);
    if (ids.length >= MATCHING_MAX) return { ids: ids.slice(0, MATCHING_MAX), capped: true };
    cursor = page.next;
  }
  return { ids, capped: false };
}
