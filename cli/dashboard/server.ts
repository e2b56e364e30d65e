// The operator dashboard: a Hono app over one queue or every queue of a store, and
// `startDashboard`, which serves it on a port. Each queue's pages are under /q/<queue>/; with one
// queue, "/" leads there and every other queue's path is 404; with a store, "/" lists its queues
// (listQueues at each request) and /q/<name>/ serves any of them. Security model (docs/dashboard.md): it binds 127.0.0.1 unless told otherwise; every request
// needs the access token (?token= once, then an HttpOnly SameSite=Strict cookie; or a Bearer
// header), compared in constant time; the Host header must name the server (no DNS rebinding);
// actions are POSTs carrying the process's CSRF token from the page and an Origin of the server;
// --read-only refuses them with 403; the Content-Security-Policy allows scripts and styles from the
// server itself only, and every value on a page is escaped by Hono's `html` template.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { LIMITS } from "../../shared/config.js";
import { InvalidInputError } from "../../shared/errors.js";
import { listQueues, Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { parseDuration, redact } from "../../shared/text.js";
import type { ItemResult, QueueHistory, QueueStats, TaskState } from "../../shared/types.js";
import { ASSETS } from "./assets.js";
import {
  actionsFor,
  type ListFilter,
  listPage,
  messagePage,
  overviewPage,
  type PageContext,
  type QueueRow,
  queuesPage,
  resultPage,
  type SiteContext,
  taskPage,
} from "./pages.js";
import { type DashboardQueue, mapLimited, queueBase, queueOfSegment, SCAN_DEFAULT, STATES } from "./queue.js";
import { schedulesPage } from "./schedules.js";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** Most tasks one "all matching" action touches. */
export const MATCHING_MAX = 10_000;

/** Most queues the all-queues overview shows: the busiest (by their tasks, all states together). */
export const OVERVIEW_QUEUES_MAX = 50;

/** Most queues whose stats the all-queues overview reads per request (the first by name). */
export const OVERVIEW_QUEUES_READ_MAX = 1000;

/** Queues read at once by the all-queues overview. */
const OVERVIEW_PARALLEL = 8;

export interface DashboardOptions {
  /** One queue: "/" leads to its pages, and every other queue's path is 404. */
  queue?: DashboardQueue;
  /**
   * Instead of `queue`, a store: the dashboard serves every leaseq queue on it (listQueues, which
   * needs `scanKeys`), "/" listing them.
   */
  store?: Store;
  /** Where the queues live, without secrets (describeConnection); shown in the header. */
  where: string;
  /** The access token (default: 24 random bytes, base64url). */
  token?: string;
  readOnly?: boolean;
  /**
   * The Host headers accepted (e.g. "127.0.0.1:8080"); anything else is refused with 403.
   * Undefined accepts any Host (a server bound to all interfaces cannot know its names).
   */
  allowedHosts?: Set<string>;
  now?: () => number;
  /** Where errors are logged (redacted); default stderr. */
  log?: (line: string) => void;
}

/** The Hono environment: a queue's page context, once its path resolved to a queue. */
export type Env = { Variables: { page?: PageContext } };

export interface Dashboard {
  app: Hono<Env>;
  token: string;
  csrf: string;
  /** The cookie that carries the token after the first request. */
  cookieName: string;
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Constant-time equality of two strings (of any lengths: their digests are compared). */
export function sameSecret(given: string | undefined, secret: string): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(digest(given), digest(secret));
}

export function newToken(): string {
  return randomBytes(24).toString("base64url");
}

/** An address to come back to after an action: a path on this server, nothing else. */
function safeBack(value: unknown, fallback: string): string {
  return typeof value === "string" && /^\/(?![/\\])[^\s]*$/.test(value) && value.length < 2000 ? value : fallback;
}

const text = (value: unknown) => (typeof value === "string" ? value : undefined);
const list = (value: unknown): string[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter(
    (each): each is string => typeof each === "string" && each !== "",
  );

export class HttpError extends Error {
  constructor(
    readonly status: 400 | 403 | 404,
    message: string,
  ) {
    super(message);
  }
}

export function createDashboard(options: DashboardOptions): Dashboard {
  const { queue: single, store, where } = options;
  if ((single === undefined) === (store === undefined)) {
    throw new InvalidInputError("createDashboard: give either a queue or a store");
  }
  if (store && typeof store.scanKeys !== "function") {
    throw new InvalidInputError("createDashboard: this store cannot SCAN for queues: give a queue");
  }
  const token = options.token ?? newToken();
  const csrf = randomBytes(24).toString("base64url");
  const readOnly = options.readOnly ?? false;
  const now = options.now ?? Date.now;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // Cookies are per host, not per port: a name of this token keeps two dashboards apart.
  const cookieName = `leaseq_dashboard_${digest(token).toString("hex").slice(0, 12)}`;
  const site: SiteContext = { where: redact(where), readOnly, csrf, allQueues: single === undefined };
  const contexts = new WeakMap<DashboardQueue, PageContext>();
  const pageOf = (queue: DashboardQueue): PageContext => {
    let ctx = contexts.get(queue);
    if (!ctx) {
      ctx = {
        ...site,
        queueName: queue.name,
        base: queueBase(queue.name),
      };
      contexts.set(queue, ctx);
    }
    return ctx;
  };

  // All-queues mode: the names listQueues found last (refreshed by each overview, and when a path
  // names a queue not among them), and a Queue for each name asked for.
  let known = new Set<string>();
  const opened = new Map<string, DashboardQueue>();
  const refreshKnown = async (): Promise<string[]> => {
    const names = await listQueues(store as Store);
    known = new Set(names);
    for (const name of opened.keys()) if (!known.has(name)) opened.delete(name);
    return names;
  };
  const queueNamed = (name: string): DashboardQueue => {
    let queue = opened.get(name);
    if (!queue) {
      queue = new Queue(store as Store, { name });
      opened.set(name, queue);
    }
    return queue;
  };

  /** The queue a path segment names, or 404: a bad name, another queue than a one-queue dashboard's, or one not on the store. */
  async function queueOfPath(segment: string): Promise<DashboardQueue> {
    const name = queueOfSegment(segment);
    // Not echoed: it is not a queue name, and may be anything.
    if (name === undefined)
      throw new HttpError(404, "No such queue: a queue name is 1-64 characters of A-Z a-z 0-9 _ . -");
    if (single) {
      if (name !== single.name) throw new HttpError(404, `This dashboard shows the queue "${single.name}" only.`);
      return single;
    }
    if (!known.has(name)) await refreshKnown();
    if (!known.has(name)) throw new HttpError(404, `No queue "${name}" on this backend.`);
    return queueNamed(name);
  }

  const app = new Hono<Env>();
  /** The queue of the request's path (:queue), set as the page context of its pages and errors. */
  const queueOf = async (c: { req: { param(name: "queue"): string }; set(key: "page", value: PageContext): void }) => {
    const queue = await queueOfPath(c.req.param("queue"));
    c.set("page", pageOf(queue));
    return { queue, ctx: pageOf(queue) };
  };

  app.use("*", async (c, next) => {
    await next();
    const headers = c.res.headers;
    headers.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    headers.set("X-Content-Type-Options", "nosniff");
    // Not no-referrer: with it, Chromium sends "Origin: null" on form POSTs, which the Origin check refuses.
    headers.set("Referrer-Policy", "same-origin");
    headers.set("X-Frame-Options", "DENY");
    headers.set("Cache-Control", "no-store");
  });

  app.use("*", async (c, next) => {
    const host = c.req.header("host");
    if (options.allowedHosts && (host === undefined || !options.allowedHosts.has(host.toLowerCase()))) {
      return c.text("403 Forbidden: unexpected Host header\n", 403);
    }
    const query = c.req.query("token");
    if (query !== undefined) {
      if (!sameSecret(query, token)) return c.text("401 Unauthorized: wrong token\n", 401);
      setCookie(c, cookieName, token, { path: "/", httpOnly: true, sameSite: "Strict" });
      if (c.req.method === "GET") {
        // Take the token out of the address bar (and the browser's history).
        const url = new URL(c.req.url);
        url.searchParams.delete("token");
        return c.redirect(`${url.pathname}${url.search}`, 303);
      }
      return next();
    }
    const bearer = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "")?.[1];
    if (sameSecret(bearer ?? getCookie(c, cookieName), token)) return next();
    return c.text("401 Unauthorized: open the URL with ?token= that `leaseq dashboard` printed\n", 401);
  });

  app.get("/assets/:name", (c) => {
    const asset = ASSETS[c.req.param("name")];
    if (!asset) return c.notFound();
    const { type, body } = asset();
    return c.body(body, 200, { "Content-Type": type });
  });

  app.get("/", async (c) => {
    if (single) return c.redirect(`${queueBase(single.name)}/`, 303);
    const at = now();
    const names = await refreshKnown();
    const filter = (c.req.query("name") ?? "").trim().slice(0, 64);
    const matching = filter ? names.filter((name) => name.toLowerCase().includes(filter.toLowerCase())) : names;
    const read = await mapLimited(matching.slice(0, OVERVIEW_QUEUES_READ_MAX), OVERVIEW_PARALLEL, async (name) => {
      const queue = queueNamed(name);
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
          history = await entry.queue.history({ now: at, minutes: 60 });
        } catch (error) {
          log(`leaseq dashboard: history of queue "${entry.name}": ${redact(String(error))}`);
        }
      }
      return { name: entry.name, base: queueBase(entry.name), stats: entry.stats, history, error: entry.error };
    });
    return c.html(
      queuesPage(site, {
        rows,
        found: names.length,
        matching: matching.length,
        read: read.length,
        shownMax: OVERVIEW_QUEUES_MAX,
        filter,
        now: at,
      }),
    );
  });

  app.get("/q/:queue", (c) => c.redirect(`${new URL(c.req.url).pathname}/`, 303));

  app.get("/q/:queue/", async (c) => {
    const { queue, ctx } = await queueOf(c);
    const at = now();
    const [stats, history] = await Promise.all([queue.stats({ now: at }), queue.history({ now: at, minutes: 60 })]);
    return c.html(overviewPage(ctx, stats, history, at));
  });

  app.get("/q/:queue/tasks/:state", async (c) => {
    const { queue, ctx } = await queueOf(c);
    const state = stateOf(c.req.param("state"));
    const filter: ListFilter = {
      type: c.req.query("type") || undefined,
      error: c.req.query("error") || undefined,
      olderThan: c.req.query("olderThan") || undefined,
    };
    const olderThanMs = durationOf(filter.olderThan);
    const filtered = filter.type !== undefined || filter.error !== undefined || olderThanMs !== undefined;
    const offset = integerOf(c.req.query("offset"), 0, 0, 1_000_000_000);
    const limit = integerOf(c.req.query("limit"), 50, 1, 500);
    const at = now();
    const stats = await queue.stats({ now: at });
    const href = (next: number) => {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(filter)) if (value) params.set(key, value);
      if (next > 0) params.set("offset", String(next));
      if (!filtered && limit !== 50) params.set("limit", String(limit));
      const search = params.toString();
      return `${ctx.base}/tasks/${state}${search ? `?${search}` : ""}`;
    };
    const self = `${new URL(c.req.url).pathname}${new URL(c.req.url).search}`;
    if (filtered) {
      const page = await queue.find(state, {
        ...filter,
        olderThanMs,
        now: at,
        cursor: offset,
        scan: SCAN_DEFAULT,
      });
      return c.html(
        listPage(ctx, {
          state,
          tasks: page.tasks,
          filter,
          filtered,
          offset,
          limit,
          nextHref: page.next === undefined ? undefined : href(page.next),
          prevHref: offset > 0 ? href(0) : undefined,
          total: stats[state],
          now: at,
          self,
        }),
      );
    }
    const tasks = await queue.list(state, { offset, limit });
    return c.html(
      listPage(ctx, {
        state,
        tasks,
        filter,
        filtered,
        offset,
        limit,
        nextHref: tasks.length === limit ? href(offset + limit) : undefined,
        prevHref: offset > 0 ? href(Math.max(0, offset - limit)) : undefined,
        total: stats[state],
        now: at,
        self,
      }),
    );
  });

  app.get("/q/:queue/task/:id", async (c) => {
    const { queue, ctx } = await queueOf(c);
    const id = c.req.param("id");
    const task = await queue.inspect(id);
    if (!task) throw new HttpError(404, `No task with id "${id}" in queue "${queue.name}".`);
    return c.html(taskPage(ctx, task, now()));
  });

  app.get("/q/:queue/schedules", async (c) => {
    const { queue, ctx } = await queueOf(c);
    return c.html(schedulesPage(ctx, await queue.listSchedules(), now()));
  });

  app.get("/q/:queue/search", async (c) => {
    const { ctx } = await queueOf(c);
    const id = (c.req.query("id") ?? "").trim();
    return c.redirect(`${ctx.base}/task/${encodeURIComponent(id)}`, 303);
  });

  app.post("/q/:queue/action", async (c) => {
    if (readOnly) throw new HttpError(403, "This dashboard is read-only: actions are refused.");
    const host = c.req.header("host");
    const origin = c.req.header("origin") ?? originOfReferer(c.req.header("referer"));
    if (host === undefined || origin !== `http://${host}`) {
      throw new HttpError(403, "Refused: the request does not come from this dashboard's pages (Origin).");
    }
    const form = await c.req.parseBody({ all: true });
    if (!sameSecret(text(form._csrf), csrf)) {
      throw new HttpError(403, "Refused: missing or wrong CSRF token; reload the page and try again.");
    }
    // Checked after the CSRF token: a forged request learns nothing of which queues exist.
    const { queue, ctx } = await queueOf(c);
    const action = text(form.action);
    const back = safeBack(form.back, `${ctx.base}/`);
    const at = now();
    if (action === "pause" || action === "resume") {
      const type = text(form.type)?.trim() || undefined;
      if (action === "pause") await queue.pause({ now: at, type });
      else await queue.resume({ now: at, type });
      const what = type ? `task type "${type}"` : `queue "${queue.name}"`;
      return c.html(resultPage(ctx, action === "pause" ? "Paused" : "Resumed", `${action}d ${what}`, [], back));
    }
    if (action === "schedule-pause" || action === "schedule-resume") {
      const name = text(form.schedule) ?? "";
      const pause = action === "schedule-pause";
      const status = pause
        ? await queue.pauseSchedule(name, { now: at })
        : await queue.resumeSchedule(name, { now: at });
      if (status === "unknown") throw new HttpError(404, `No schedule "${name}" in queue "${queue.name}".`);
      const summary =
        status === "done"
          ? `${pause ? "paused" : "resumed"} schedule "${name}"`
          : `schedule "${name}" was ${pause ? "paused already" : "not paused"} (unchanged)`;
      return c.html(resultPage(ctx, pause ? "Paused" : "Resumed", summary, [], back));
    }
    if (action === "schedule-run") {
      const name = text(form.schedule) ?? "";
      const ran = await queue.runScheduleNow(name, { now: at });
      if (!ran) throw new HttpError(404, `No schedule "${name}" in queue "${queue.name}".`);
      // The dashboard sends no wake-up (as for a requeue): a draining worker or the reclaimer's
      // next run starts it; `leaseq schedules run-now` sends one.
      const summary = `enqueued ${ran.id} (schedule "${name}"): it starts at the reclaimer's next run, or sooner if a worker is draining`;
      return c.html(resultPage(ctx, "Run now", summary, [], back));
    }
    if (action === "schedule-remove") {
      const name = text(form.schedule) ?? "";
      const status = await queue.removeSchedule(name, { now: at });
      if (status === "unknown") throw new HttpError(404, `No schedule "${name}" in queue "${queue.name}".`);
      return c.html(resultPage(ctx, "Removed", `removed schedule "${name}"; its tasks already made stay`, [], back));
    }
    if (action !== "requeue" && action !== "delete" && action !== "cancel" && action !== "skip") {
      throw new HttpError(400, `Unknown action "${action ?? ""}".`);
    }
    let ids = list(form.ids);
    let capped = false;
    // The list the tasks were chosen from: a delete takes only those still in its state (one that
    // moved on since the page was drawn, a requeued one say, is left alone: "not_in_state").
    const listed = text(form.state) ? stateOf(text(form.state) ?? "") : undefined;
    const deleteIn = listed === undefined || listed === "leased" ? {} : { state: listed, now: at };
    if (text(form.scope) === "matching") {
      const state = stateOf(text(form.state) ?? "");
      if (action === "skip" || !actionsFor(state).includes(action)) {
        throw new HttpError(400, `Cannot ${action} ${state} tasks.`);
      }
      ({ ids, capped } = await matchingIds(queue, state, {
        type: text(form.type) || undefined,
        error: text(form.error) || undefined,
        olderThanMs: durationOf(text(form.olderThan)),
        now: at,
      }));
    }
    if (ids.length === 0) throw new HttpError(400, "No tasks selected.");
    const results: ItemResult[] = [];
    for (let start = 0; start < ids.length; start += LIMITS.batchMax) {
      const batch = ids.slice(start, start + LIMITS.batchMax);
      if (action === "requeue") results.push(...(await queue.requeue(batch, { now: at })));
      else if (action === "skip") results.push(...(await queue.skip(batch, { now: at })));
      else if (action === "delete") results.push(...(await queue.delete(batch, deleteIn)));
      else results.push(...(await queue.cancel(batch, { now: at })));
    }
    const ok = results.filter((result) => result.status === "ok").length;
    const past = { requeue: "requeued", delete: "deleted", cancel: "cancelled", skip: "skipped" }[action];
    const summary = `${past} ${ok} of ${results.length} task${results.length === 1 ? "" : "s"}${capped ? ` (stopped at ${MATCHING_MAX}: run it again for more)` : ""}`;
    return c.html(resultPage(ctx, `${action[0].toUpperCase()}${action.slice(1)}`, summary, results, back));
  });

  // The path is not echoed back.
  app.notFound((c) => c.html(messagePage(c.get("page") ?? site, "Not found", "Nothing here."), 404));

  app.onError((error, c) => {
    const ctx = c.get("page") ?? site;
    if (error instanceof HttpError)
      return c.html(messagePage(ctx, errorTitle(error.status), error.message), error.status);
    if (error instanceof InvalidInputError || error instanceof RangeError) {
      return c.html(messagePage(ctx, "Bad request", redact(error.message)), 400);
    }
    log(`leaseq dashboard: ${c.req.method} ${c.req.path}: ${redact(String((error as Error).stack ?? error))}`);
    return c.html(messagePage(ctx, "Error", redact((error as Error).message ?? String(error))), 500);
  });

  /** The ids of the tasks in `state` matching a filter, up to MATCHING_MAX, read before anything changes. */
  async function matchingIds(
    queue: DashboardQueue,
    state: TaskState,
    filter: { type?: string; error?: string; olderThanMs?: number; now: number },
  ): Promise<{ ids: string[]; capped: boolean }> {
    const ids: string[] = [];
    let cursor: number | undefined = 0;
    for (let pages = 0; cursor !== undefined && pages < 10_000; pages++) {
      const page = await queue.find(state, { ...filter, cursor, scan: SCAN_DEFAULT });
      for (const task of page.tasks) ids.push(task.id);
      if (ids.length >= MATCHING_MAX) return { ids: ids.slice(0, MATCHING_MAX), capped: true };
      cursor = page.next;
    }
    return { ids, capped: false };
  }

  return { app, token, csrf, cookieName };
}

function errorTitle(status: number): string {
  return { 400: "Bad request", 403: "Forbidden", 404: "Not found" }[status] ?? "Error";
}

function originOfReferer(referer: string | undefined): string | undefined {
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return undefined;
  }
}

function stateOf(value: string): TaskState {
  if (!(STATES as readonly string[]).includes(value)) throw new HttpError(404, `No state "${value}".`);
  return value as TaskState;
}

function durationOf(value: string | undefined): number | undefined {
  try {
    return parseDuration(value);
  } catch (error) {
    throw new HttpError(400, (error as Error).message);
  }
}

function integerOf(value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new HttpError(400, `Expected an integer from ${min} to ${max}, got "${value}".`);
  }
  return n;
}

export interface StartOptions extends Omit<DashboardOptions, "allowedHosts"> {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
}

export interface RunningDashboard extends Dashboard {
  /** The address to open, with the token: http://127.0.0.1:8080/?token=… */
  url: string;
  port: number;
  close(): Promise<void>;
}

const WILDCARDS = new Set(["0.0.0.0", "::", "[::]"]);
const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/** Serves the dashboard; resolves once it listens (rejects when the port is taken). */
export async function startDashboard(options: StartOptions): Promise<RunningDashboard> {
  const host = options.host ?? "127.0.0.1";
  const allowedHosts = WILDCARDS.has(host) ? undefined : new Set<string>();
  const dashboard = createDashboard({ ...options, allowedHosts });
  const server = createAdaptorServer({ fetch: dashboard.app.fetch, overrideGlobalObjects: false });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 8080, host.replace(/^\[(.*)\]$/, "$1"), () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  if (allowedHosts) {
    const names = LOOPBACK.has(host) ? ["127.0.0.1", "localhost", "[::1]"] : [shownHost.toLowerCase()];
    for (const name of names) allowedHosts.add(`${name}:${port}`);
  }
  return {
    ...dashboard,
    url: `http://${shownHost}:${port}/?token=${encodeURIComponent(dashboard.token)}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        const http = server as import("node:http").Server;
        http.close(() => resolve());
        http.closeAllConnections?.();
      }),
  };
}
