// The dashboard's GET routes: its assets, the overview of every queue ("/"), and each queue's
// overview (and the live values its script polls), task lists, task pages, groups, schedules and
// search; a partitioned queue's overview sums its partitions, and the rest are each partition's
// (directory.ts). Nothing changes on a GET.
import type { Context, Hono } from "hono";
import { redact } from "../../shared/text.js";
import type { QueueHistory, QueueStats, TaskInfo } from "../../shared/types.js";
import { ASSETS } from "./assets.js";
import type { Directory } from "./directory.js";
import { groupFilterOf, groupsLiveValues, groupsPage, readGroups } from "./groups.js";
import { durationOf, type Env, HttpError, integerOf, stateOf } from "./http.js";
import { liveValues } from "./live.js";
import {
  type ListFilter,
  listPage,
  messagePage,
  overviewPage,
  type PageContext,
  type QueueRow,
  queuesPage,
} from "./pages.js";
import { partitionRows, servedHistory, servedStats } from "./partitions.js";
import {
  mapLimited,
  partitionBase,
  QUEUE_PREFIXES,
  queueBase,
  SCAN_DEFAULT,
  type ServedQueue,
  STATES,
} from "./queue.js";
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
  app.get("/q/:queue/p/:partition", (c) => c.redirect(`${new URL(c.req.url).pathname}/`, 303));

  // Each page of a queue at two places: the queue's own (/q/<queue>/...), and, for a partitioned
  // queue, a partition's (/q/<queue>/p/<k>/...), where its lists, tasks, groups and schedules are.
  for (const prefix of QUEUE_PREFIXES) {
    app.get(`${prefix}/`, async (c) => {
      const { served, queue, ctx } = await directory.servedOf(c);
      const at = now();
      if (!queue) {
        const [{ total, partitions }, history] = await Promise.all([
          servedStats(served, at),
          servedHistory(served, at),
        ]);
        return c.html(overviewPage(ctx, total, history, at, partitionRows(ctx.queueName, partitions)));
      }
      const [stats, history] = await Promise.all([
        queue.stats({ now: at }),
        queue.admin.history({ now: at, minutes: 60 }),
      ]);
      return c.html(overviewPage(ctx, stats, history, at));
    });

    // What the overview's page script polls (live.ts): the values of its numbers, one stats call
    // (a partitioned queue's: one per partition, and the rows of its table).
    app.get(`${prefix}/live.json`, async (c) => {
      const { served, queue, ctx } = await directory.servedOf(c);
      const at = now();
      if (!queue) {
        const { total, partitions } = await servedStats(served, at);
        return c.json({ ...liveValues(total, at), partitionRows: partitionRows(ctx.queueName, partitions) });
      }
      return c.json(liveValues(await queue.stats({ now: at }), at));
    });

    app.get(`${prefix}/tasks/:state`, async (c) => {
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

    // A partitioned queue's task without a partition (its search box's): found in whichever
    // partition holds it.
    app.get(`${prefix}/task/:id`, async (c) => {
      const id = c.req.param("id");
      const { served, queue, ctx } = await directory.servedOf(c);
      if (!queue) return taskAmongPartitions(c, served, ctx, id);
      const task = await queue.admin.inspect(id);
      if (!task) throw new HttpError(404, `No task with id "${id}" in ${whereOf(ctx)}.`);
      return c.html(taskPage(ctx, task, now()));
    });

    // What a task's page script polls (task-live.ts): one inspect call; 404 once the task is gone.
    app.get(`${prefix}/task/:id/live.json`, async (c) => {
      const { queue, ctx } = await directory.queueOf(c);
      const id = c.req.param("id");
      const task = await queue.admin.inspect(id);
      if (!task) throw new HttpError(404, `No task with id "${id}" in ${whereOf(ctx)}.`);
      return c.json(taskLiveValues(ctx.base, task, now()));
    });

    app.get(`${prefix}/schedules`, async (c) => {
      const { queue, ctx } = await directory.queueOf(c);
      return c.html(schedulesPage(ctx, await queue.schedules.list(), now()));
    });

    app.get(`${prefix}/groups`, async (c) => {
      const { queue, ctx } = await directory.queueOf(c);
      const filter = groupFilterOf(c.req.query("group"));
      const view = await readGroups(queue, filter, c.req.query("cursor") || "0");
      return c.html(groupsPage(ctx, view, now()));
    });

    // What the groups page's script polls: the rows of the view's first read (one read of the
    // groups hash), for a view that made only that read.
    app.get(`${prefix}/groups/live.json`, async (c) => {
      const { queue, ctx } = await directory.queueOf(c);
      const filter = groupFilterOf(c.req.query("group"));
      const view = await readGroups(queue, filter, "0", 1);
      return c.json(groupsLiveValues(ctx, view, now()));
    });

    app.get(`${prefix}/search`, async (c) => {
      const { ctx } = await directory.servedOf(c);
      const id = (c.req.query("id") ?? "").trim();
      return c.redirect(`${ctx.base}/task/${encodeURIComponent(id)}`, 303);
    });
  }

  /**
   * The task `id` of a partitioned queue, looked up in every partition (an inspect each): the
   * partition's task page when one holds it, a page linking each when several do (a task's id is
   * unique within its routing key's partition), 404 when none does.
   */
  async function taskAmongPartitions(c: Context<Env>, served: ServedQueue, ctx: PageContext, id: string) {
    const inspected = await mapLimited(served.partitions, OVERVIEW_PARALLEL, async ({ partition, queue }) => ({
      partition,
      task: await queue.admin.inspect(id),
    }));
    const found = inspected.filter((each): each is { partition: number; task: TaskInfo } => each.task !== undefined);
    const pageOf = (partition: number) => `${partitionBase(served.name, partition)}/task/${encodeURIComponent(id)}`;
    if (found.length === 1) return c.redirect(pageOf(found[0].partition), 303);
    if (found.length === 0) {
      throw new HttpError(
        404,
        `No task with id "${id}" in any of the ${served.partitions.length} partitions of queue "${served.name}".`,
      );
    }
    const links = found.map(({ partition, task }) => ({
      href: pageOf(partition),
      text: `partition ${partition}: ${task.type} task${task.group === undefined ? "" : ` of group ${task.group}`}, ${task.state}`,
    }));
    const message = `${found.length} partitions of queue "${served.name}" hold a task "${id}" (tasks of different groups or flow keys):`;
    return c.html(messagePage(ctx, `Task ${id}`, message, links));
  }
}

/** What a page's "No task" says it looked in: the queue, or one partition of it. */
function whereOf(ctx: PageContext): string {
  const partition = ctx.partitioned?.partition;
  return partition === undefined ? `queue "${ctx.queueName}"` : `partition ${partition} of queue "${ctx.queueName}"`;
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
      return { name, queue, stats: (await servedStats(queue, at)).total };
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
        history = await servedHistory(entry.queue, at);
      } catch (error) {
        log(`leaseq dashboard: history of queue "${entry.name}": ${redact(String(error))}`);
      }
    }
    const base = queueBase(entry.name);
    return {
      name: entry.name,
      base,
      partitions: entry.queue.partitions.length,
      stats: entry.stats,
      history,
      error: entry.error,
    };
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
