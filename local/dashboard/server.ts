// The operator dashboard: a Hono app over one queue, and `startDashboard`, which serves it on a
// port. Security model (docs/dashboard.md): it binds 127.0.0.1 unless told otherwise; every request
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
import type { ItemResult, TaskState } from "../../shared/types.js";
import { redact } from "../cli/errors.js";
import { ASSETS } from "./assets.js";
import {
  actionsFor,
  type ListFilter,
  listPage,
  messagePage,
  overviewPage,
  type PageContext,
  resultPage,
  taskPage,
} from "./pages.js";
import { type DashboardQueue, findTasks, parseDuration, SCAN_DEFAULT, STATES } from "./queue.js";

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

export interface DashboardOptions {
  queue: DashboardQueue;
  /** Where the queue lives, without secrets (describeConnection); shown in the header. */
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

export interface Dashboard {
  app: Hono;
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
function safeBack(value: unknown): string {
  return typeof value === "string" && /^\/(?![/\\])[^\s]*$/.test(value) && value.length < 2000 ? value : "/";
}

const text = (value: unknown) => (typeof value === "string" ? value : undefined);
const list = (value: unknown): string[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter(
    (each): each is string => typeof each === "string" && each !== "",
  );

class HttpError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 501,
    message: string,
  ) {
    super(message);
  }
}

export function createDashboard(options: DashboardOptions): Dashboard {
  const { queue, where } = options;
  const token = options.token ?? newToken();
  const csrf = randomBytes(24).toString("base64url");
  const readOnly = options.readOnly ?? false;
  const now = options.now ?? Date.now;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // Cookies are per host, not per port: a name of this token keeps two dashboards apart.
  const cookieName = `leaseq_dashboard_${digest(token).toString("hex").slice(0, 12)}`;
  const ctx: PageContext = {
    queueName: queue.name,
    where: redact(where),
    readOnly,
    csrf,
    can: {
      history: typeof queue.history === "function",
      find: typeof queue.find === "function",
      cancel: typeof queue.cancel === "function",
      pause: typeof queue.pause === "function" && typeof queue.resume === "function",
    },
  };

  const app = new Hono();

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
    const at = now();
    const [stats, history] = await Promise.all([
      queue.stats({ now: at }),
      queue.history ? queue.history({ now: at, minutes: 60 }) : Promise.resolve(undefined),
    ]);
    return c.html(overviewPage(ctx, stats, history, at));
  });

  app.get("/tasks/:state", async (c) => {
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
      return `/tasks/${state}${search ? `?${search}` : ""}`;
    };
    const self = `${new URL(c.req.url).pathname}${new URL(c.req.url).search}`;
    if (filtered) {
      const page = await findTasks(queue, state, {
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

  app.get("/task/:id", async (c) => {
    const id = c.req.param("id");
    const task = await queue.inspect(id);
    if (!task) throw new HttpError(404, `No task with id "${id}" in queue "${queue.name}".`);
    return c.html(taskPage(ctx, task, now()));
  });

  app.get("/search", (c) => {
    const id = (c.req.query("id") ?? "").trim();
    return c.redirect(`/task/${encodeURIComponent(id)}`, 303);
  });

  app.post("/action", async (c) => {
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
    const action = text(form.action);
    const back = safeBack(form.back);
    const at = now();
    if (action === "pause" || action === "resume") {
      if (!queue.pause || !queue.resume) throw new HttpError(501, "This queue version cannot pause.");
      const type = text(form.type)?.trim() || undefined;
      if (action === "pause") await queue.pause({ now: at, type });
      else await queue.resume({ now: at, type });
      const what = type ? `task type "${type}"` : `queue "${queue.name}"`;
      return c.html(resultPage(ctx, action === "pause" ? "Paused" : "Resumed", `${action}d ${what}`, [], back));
    }
    if (action !== "requeue" && action !== "delete" && action !== "cancel") {
      throw new HttpError(400, `Unknown action "${action ?? ""}".`);
    }
    let ids = list(form.ids);
    let capped = false;
    if (text(form.scope) === "matching") {
      const state = stateOf(text(form.state) ?? "");
      if (!actionsFor(state, ctx.can).includes(action)) {
        throw new HttpError(400, `Cannot ${action} ${state} tasks.`);
      }
      ({ ids, capped } = await matchingIds(state, {
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
      else if (action === "delete") results.push(...(await queue.delete(batch)));
      else {
        if (!queue.cancel) throw new HttpError(501, "This queue version cannot cancel tasks.");
        results.push(...(await queue.cancel(batch, { now: at })));
      }
    }
    const ok = results.filter((result) => result.status === "ok").length;
    const past = { requeue: "requeued", delete: "deleted", cancel: "cancelled" }[action];
    const summary = `${past} ${ok} of ${results.length} task${results.length === 1 ? "" : "s"}${capped ? ` (stopped at ${MATCHING_MAX}: run it again for more)` : ""}`;
    return c.html(resultPage(ctx, `${action[0].toUpperCase()}${action.slice(1)}`, summary, results, back));
  });

  app.notFound((c) => c.html(messagePage(ctx, "Not found", `Nothing at ${c.req.path}.`), 404));

  app.onError((error, c) => {
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
    state: TaskState,
    filter: { type?: string; error?: string; olderThanMs?: number; now: number },
  ): Promise<{ ids: string[]; capped: boolean }> {
    const ids: string[] = [];
    let cursor: number | undefined = 0;
    for (let pages = 0; cursor !== undefined && pages < 10_000; pages++) {
      const page = await findTasks(queue, state, { ...filter, cursor, scan: SCAN_DEFAULT });
      for (const task of page.tasks) ids.push(task.id);
      if (ids.length >= MATCHING_MAX) return { ids: ids.slice(0, MATCHING_MAX), capped: true };
      cursor = page.next;
    }
    return { ids, capped: false };
  }

  return { app, token, csrf, cookieName };
}

function errorTitle(status: number): string {
  return { 400: "Bad request", 403: "Forbidden", 404: "Not found", 501: "Not available" }[status] ?? "Error";
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
