// The queues a dashboard serves, one or every queue of a store, and how a request's path finds its
// queue: /q/<segment>/ names it, and anything that is not a queue it serves is 404.
import { Queue } from "../../shared/queue.js";
import { listQueues } from "../../shared/queue-admin.js";
import type { Store } from "../../shared/store.js";
import { HttpError } from "./http.js";
import type { PageContext, SiteContext } from "./pages.js";
import { type DashboardQueue, queueBase, queueOfSegment } from "./queue.js";

/** What a handler needs of a request to find its queue (a Hono context). */
export interface QueueRequest {
  req: { param(name: "queue"): string };
  set(key: "page", value: PageContext): void;
}

export interface Directory {
  /** What every page knows of the dashboard. */
  site: SiteContext;
  /** The one queue shown, when the dashboard is not over a store. */
  single: DashboardQueue | undefined;
  /** All-queues mode: the store's queue names, listed afresh (listQueues). */
  refresh(): Promise<string[]>;
  /** All-queues mode: the queue of a name (one Queue per name while it is listed). */
  named(name: string): DashboardQueue;
  /** The queue of the request's path (:queue), set as the page context of its pages and errors; 404 when none. */
  queueOf(c: QueueRequest): Promise<{ queue: DashboardQueue; ctx: PageContext }>;
}

/** The directory over one queue, or over every queue of `store`; give exactly one of them. */
export function createDirectory(site: SiteContext, single: DashboardQueue | undefined, store?: Store): Directory {
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
  const refresh = async (): Promise<string[]> => {
    const names = await listQueues(store as Store);
    known = new Set(names);
    for (const name of opened.keys()) if (!known.has(name)) opened.delete(name);
    return names;
  };
  const named = (name: string): DashboardQueue => {
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
    if (!known.has(name)) await refresh();
    if (!known.has(name)) throw new HttpError(404, `No queue "${name}" on this backend.`);
    return named(name);
  }

  return {
    site,
    single,
    refresh,
    named,
    async queueOf(c) {
      const queue = await queueOfPath(c.req.param("queue"));
      c.set("page", pageOf(queue));
      return { queue, ctx: pageOf(queue) };
    },
  };
}
