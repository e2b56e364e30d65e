// The dashboard's GET routes: its assets, the overview of every queue ("/"), and each queue's
// overview (and the live values its script polls), task lists, task pages, groups, schedules and
// search. Nothing changes on a GET.
import type { Hono } from "hono";
import { redact } from "../../shared/text.js";
import type { QueueHistory, QueueStats } from "../../shared/types.js";
import { ASSETS } from "./assets.js";
import type { Directory } from "./directory.js";
import { groupFilterOf, groupsLiveValues, groupsPage, readGroups } from "./groups.js";
import { durationOf, type Env, HttpError, integerOf, stateOf } from "./http.js";
import { liveValues } from "./live.js";
import { type ListFilter, listPage, overviewPage, type QueueRow, queuesPage } from "./pages.js";
import { mapLimited, queueBase, SCAN_DEFAULT, STATES } from "./queue.js";
import { schedulesPage } from "./schedules.js";
import { taskPage } from "./task.js";
import { taskLiveValues } from "./task-live.js";

/** Most queues the all-queues overview shows: the busiest (by their tasks, all states together). */
export const OVERVIEW_QUEUES_MAX = 50;

/** Most queues whose stats the all-queues overview reads per request (the first by name). */
export const OVERVIEW_QUEUES_READ_MAX = 1000;

/** Queues read at once by the all-queues overview. */
const OVERVIEW_PARALLEL = 8;

/** Tasks a list page shows unless ?limit= says otherwise. */
const LIST_LIMIT_DEFAULT = 50;

export interface RouteOptions {
  directory: Directory;
  now: () => number;
  /** Where a queue that cannot be read is logged (redacted). */
  log: (line: string) => void;
}

/** Registers the GET routes on `app`. */
export function registerRoutes(app: Hono<Env>, { directory, now, log }: RouteOptions): void {
  const { single, site } = directory;

  app.get("/assets/:name", (c) => {
    const asset = ASSETS[c.req.param("name")];
    if (!asset) return c.notFound();
    const { type, body } = asset();
    return c.body(body, 200, { "Content-Type": type });
  });

  app.get("/", async (c) => {
    if (single) return c.redirect(`${queueBase(single.name)}/`, 303);
    const at = now();
    const filter = (c.req.query("name") ?? "").trim().slice(0, 64);
    return c.html(queuesPage(site, await queuesView(directory, filter, at, log)));
  });

  app.get("/q/:queue", (c) => c.redirect(`${new URL(c.req.url).pathname}/`, 303));

  app.get("/q/:queue/", async (c) => {
    const { queue, ctx } = await directory.queueOf(c);
    const at = now();
    const [stats, history] = await Promise.all([
      queue.stats({ now: at }),
      queue.admin.history({ now: at, minutes: 60 }),
    ]);
    return c.html(overviewPage(ctx, stats, history, at));
  });

  // What the overview's page script polls (live.ts): the values of its numbers, one stats call.
  app.get("/q/:queue/live.json", async (c) => {
    const { queue } = await directory.queueOf(c);
    const at = now();
    return c.json(liveValues(await queue.stats({ now: at }), at));
  });

  app.get("/q/:queue/tasks/:state", async (c) => {
    const { queue, ctx } = await directory.queueOf(c);
    const state = stateOf(c.req.param("state"));
    const filter: ListFilter = {
      type: c.req.query("type") || undefined,
      group: c.req.query("group") || undefined,
      error: c.req.query("error") || undefined,
      olderThan: c.req.query("olderThan") || undefined,
    };
    const olderThanMs = durationOf(filter.olderThan);
    const filtered =
      filter.type !== undefined ||
      filter.group !== undefined ||
      filter.error !== undefined ||
      olderThanMs !== undefined;
    const offset = integerOf(c.req.query("offset"), 0, 0, 1_000_000_000);
    const limit = integerOf(c.req.query("limit"), LIST_LIMIT_DEFAULT, 1, 500);
    const at = now();
    const stats = await queue.stats({ now: at });
    const href = (next: number) => {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(filter)) if (value) params.set(key, value);
      if (next > 0) params.set("offset", String(next));
      if (!filtered && limit !== LIST_LIMIT_DEFAULT) params.set("limit", String(limit));
      const search = params.toString();
      return `${ctx.base}/tasks/${state}${search ? `?${search}` : ""}`;
    };
    // A filtered list pages by find's cursor (reading SCAN_DEFAULT tasks a page, back to the
    // start); a plain one by offset and limit.
    const { tasks, next, previous } = filtered
      ? await queue.admin
          .find(state, { ...filter, olderThanMs, now: at, cursor: offset, scan: SCAN_DEFAULT })
          .then((page) => ({ tasks: page.tasks, next: page.next, previous: offset > 0 ? 0 : undefined }))
      : await queue.admin.list(state, { offset, limit }).then((tasks) => ({
          tasks,
          next: tasks.length === limit ? offset + limit : undefined,
          previous: offset > 0 ? Math.max(0, offset - limit) : undefined,
        }));
    return c.html(
      listPage(ctx, {
        state,
        tasks,
        filter,
        filtered,
        offset,
        limit,
        nextHref: next === undefined ? undefined : href(next),
        prevHref: previous === undefined ? undefined : href(previous),
        total: stats[state],
        now: at,
        self: `${new URL(c.req.url).pathname}${new URL(c.req.url).search}`,
      }),
    );
  });

  app.get("/q/:queue/task/:id", async (c) => {
    const { queue, ctx } = await directory.queueOf(c);
    const id = c.req.param("id");
    const task = await queue.admin.inspect(id);
    if (!task) throw new HttpError(404, `No task with id "${id}" in queue "${queue.name}".`);
    return c.html(taskPage(ctx, task, now()));
  });

  // What a task's page script polls (task-live.ts): one inspect call; 404 once the task is gone.
  app.get("/q/:queue/task/:id/live.json", async (c) => {
    const { queue, ctx } = await directory.queueOf(c);
    const id = c.req.param("id");
    const task = await queue.admin.inspect(id);
    if (!task) throw new HttpError(404, `No task with id "${id}" in queue "${queue.name}".`);
    return c.json(taskLiveValues(ctx.base, task, now()));
  });

  app.get("/q/:queue/schedules", async (c) => {
    const { queue, ctx } = await directory.queueOf(c);
    return c.html(schedulesPage(ctx, await queue.schedules.list(), now()));
  });

  app.get("/q/:queue/groups", async (c) => {
    const { queue, ctx } = await directory.queueOf(c);
    const filter = groupFilterOf(c.req.query("group"));
    const view = await readGroups(queue, filter, c.req.query("cursor") || "0");
    return c.html(groupsPage(ctx, view, now()));
  });

  // What the groups page's script polls: the rows of the view's first read (one read of the
  // groups hash), for a view that made only that read.
  app.get("/q/:queue/groups/live.json", async (c) => {
    const { queue, ctx } = await directory.queueOf(c);
    const filter = groupFilterOf(c.req.query("group"));
    const view = await readGroups(queue, filter, "0", 1);
    return c.json(groupsLiveValues(ctx, view, now()));
  });

  app.get("/q/:queue/search", async (c) => {
    const { ctx } = await directory.queueOf(c);
    const id = (c.req.query("id") ?? "").trim();
    return c.redirect(`${ctx.base}/task/${encodeURIComponent(id)}`, 303);
  });
}

/**
 * The all-queues overview: the store's queues whose names contain `filter`, the stats of the
 * first OVERVIEW_QUEUES_READ_MAX of them, and of the OVERVIEW_QUEUES_MAX busiest their last hour.
 * A queue that cannot be read is shown with its error, and logged.
 */
async function queuesView(directory: Directory, filter: string, at: number, log: (line: string) => void) {
  const names = await directory.refresh();
  const matching = filter ? names.filter((name) => name.toLowerCase().includes(filter.toLowerCase())) : names;
  const read = await mapLimited(matching.slice(0, OVERVIEW_QUEUES_READ_MAX), OVERVIEW_PARALLEL, async (name) => {
    const queue = directory.named(name);
    try {
      return { name, queue, stats: await queue.stats({ now: at }) };
    } catch (error) {
      log(`leaseq dashboard: stats of queue "${name}": ${redact(String(error))}`);
      return { name, queue, error: redact((error as Error).message ?? String(error)) };
    }
  });
  // Unreadable queues first (they need a look), then the busiest; shown by name.
  const busy = ({ stats }: { stats?: QueueStats }) =>
    stats ? STATES.reduce((total, state) => total + stats[state], 0) : Number.MAX_SAFE_INTEGER;
  const shown = [...read]
    .sort((a, b) => busy(b) - busy(a) || (a.name < b.name ? -1 : 1))
    .slice(0, OVERVIEW_QUEUES_MAX)
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  const rows: QueueRow[] = await mapLimited(shown, OVERVIEW_PARALLEL, async (entry) => {
    let history: QueueHistory | undefined;
    if (entry.stats) {
      try {
        history = await entry.queue.admin.history({ now: at, minutes: 60 });
      } catch (error) {
        log(`leaseq dashboard: history of queue "${entry.name}": ${redact(String(error))}`);
      }
    }
    return { name: entry.name, base: queueBase(entry.name), stats: entry.stats, history, error: entry.error };
  });
  return {
    rows,
    found: names.length,
    matching: matching.length,
    read: read.length,
    shownMax: OVERVIEW_QUEUES_MAX,
    filter,
    now: at,
  };
}
