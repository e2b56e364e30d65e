// The operator dashboard: a Hono app over one queue or every queue of a store, and
// `startDashboard`, which serves it on a port. Each queue's pages are under /q/<queue>/; with one
// queue, "/" leads there and every other queue's path is 404; with a store, "/" lists its queues
// (listQueuePartitions at each request) and /q/<name>/ serves any of them. A partitioned queue's
// overview sums its partitions, and each partition's pages are under /q/<queue>/p/<k>/. Security model (docs/dashboard.md):
// it binds 127.0.0.1 unless told otherwise; every request needs the access token, and the Host
// header must name the server (auth.ts); actions are POSTs carrying the process's CSRF token and an
// Origin of the server, refused with 403 by --read-only; every value on a page is escaped by Hono's
// `html` template. This module wires them: auth.ts, routes.ts (the pages), actions.ts (the POSTs),
// directory.ts (which queue a path names).
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";
import { InvalidInputError } from "../../shared/errors.js";
import { PARTITIONS_MAX } from "../../shared/partitions.js";
import type { Store } from "../../shared/store.js";
import { redact } from "../../shared/text.js";
import { registerActions } from "./actions.js";
import { cookieNameOf, newToken, requireAccess, securityHeaders } from "./auth.js";
import { createDirectory } from "./directory.js";
import { type Env, errorTitle, HttpError } from "./http.js";
import { REFRESH_MS_DEFAULT } from "./live.js";
import { messagePage, type SiteContext } from "./pages.js";
import type { DashboardQueue, ServedQueue } from "./queue.js";
import { registerRoutes } from "./routes.js";

export interface DashboardOptions {
  /** One queue: "/" leads to its pages, and every other queue's path is 404. */
  queue?: DashboardQueue;
  /**
   * Instead of `queue`, one partitioned queue (docs/partitions.md): its partitions by number,
   * partition k at index k (partitionQueue). Its overview sums them; each partition's pages are
   * under /q/<queue>/p/<k>/. One partition is `queue`.
   */
  partitions?: readonly DashboardQueue[];
  /**
   * Instead of `queue`, a store: the dashboard serves every leaseq queue on it (listQueues, which
   * needs `scanKeys`), "/" listing them.
   */
  store?: Store;
  /** Where the queues live, without secrets (describeConnection); shown in the header. */
  where: string;
  /** The access token (default: 24 random bytes, base64url). */
  token?: string;
  /** The command that prints the URL with the token, named by a 401 (default `leaseq dashboard`). */
  startedBy?: string;
  readOnly?: boolean;
  /**
   * How often an open queue overview, task page or groups page reads its values again (one stats
   * call, one inspect, one read of the groups hash: their live.json), in ms; 0 turns live updates off. Default REFRESH_MS_DEFAULT (5 s).
   */
  refreshMs?: number;
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
  app: Hono<Env>;
  token: string;
  csrf: string;
  /** The cookie that carries the token after the first request. */
  cookieName: string;
}

/**
 * The dashboard's app; throws InvalidInputError unless given exactly one of a queue, a partitioned
 * queue's partitions (1 to PARTITIONS_MAX, of one name) and a store that can SCAN.
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const { store, where } = options;
  if ([options.queue, options.partitions, store].filter((given) => given !== undefined).length !== 1) {
    throw new InvalidInputError("createDashboard: give one of a queue, a partitioned queue's partitions and a store");
  }
  const single = servedOf(options.queue ? [options.queue] : options.partitions);
  if (store && typeof store.scanKeys !== "function") {
    throw new InvalidInputError("createDashboard: this store cannot SCAN for queues: give a queue");
  }
  const token = options.token ?? newToken();
  const csrf = newToken();
  const readOnly = options.readOnly ?? false;
  const now = options.now ?? Date.now;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const refreshMs = options.refreshMs ?? REFRESH_MS_DEFAULT;
  if (!Number.isInteger(refreshMs) || refreshMs < 0) {
    throw new InvalidInputError(`createDashboard: refreshMs must be an integer of ms, 0 or more, got ${refreshMs}`);
  }
  const cookieName = cookieNameOf(token);
  const site: SiteContext = { where: redact(where), readOnly, csrf, allQueues: single === undefined, refreshMs };
  const directory = createDirectory(site, single, store);

  const app = new Hono<Env>();
  app.use("*", securityHeaders);
  const startedBy = options.startedBy ?? "leaseq dashboard";
  app.use("*", requireAccess({ token, cookieName, allowedHosts: options.allowedHosts, startedBy }));
  registerRoutes(app, { directory, now, log });
  registerActions(app, { directory, now, readOnly, csrf });

  // The path is not echoed back.
  app.notFound((c) => c.html(messagePage(c.get("page") ?? site, "Not found", "Nothing here."), 404));

  app.onError((error, c) => {
    const ctx = c.get("page") ?? site;
    if (error instanceof HttpError)
      return c.html(messagePage(ctx, errorTitle(error.status), error.message, error.links), error.status);
    if (error instanceof InvalidInputError || error instanceof RangeError) {
      return c.html(messagePage(ctx, "Bad request", redact(error.message)), 400);
    }
    log(`leaseq dashboard: ${c.req.method} ${c.req.path}: ${redact(String((error as Error).stack ?? error))}`);
    return c.html(messagePage(ctx, "Error", redact((error as Error).message ?? String(error))), 500);
  });

  return { app, token, csrf, cookieName };
}

/** The queue of `partitions` (partition k at index k); undefined without them. Throws InvalidInputError for a wrong list. */
function servedOf(partitions: readonly DashboardQueue[] | undefined): ServedQueue | undefined {
  if (partitions === undefined) return undefined;
  const name = partitions[0]?.name;
  if (partitions.length < 1 || partitions.length > PARTITIONS_MAX || partitions.some((queue) => queue.name !== name)) {
    throw new InvalidInputError(
      `createDashboard: partitions must be 1 to ${PARTITIONS_MAX} partitions of one queue, got ${partitions.length} of the queues ${JSON.stringify([...new Set(partitions.map((queue) => queue.name))])}`,
    );
  }
  return { name, partitions: partitions.map((queue, partition) => ({ partition, queue })) };
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
