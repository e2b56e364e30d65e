// The queues a dashboard serves, one or every queue of a store, and how a request's path finds its
// queue: /q/<segment>/ names it, and anything that is not a queue it serves is 404. A partitioned
// queue (docs/partitions.md) is served as one: /q/<segment>/ is its overview, the sum of its
// partitions, and /q/<segment>/p/<k>/ partition k's pages, where its lists, tasks and actions are.
import { partitionQueue } from "../../shared/partitioned-queue.js";
import { listQueuePartitions } from "../../shared/queue-admin.js";
import type { Store } from "../../shared/store.js";
import { HttpError, type Link } from "./http.js";
import type { PageContext, SiteContext } from "./pages.js";
import { type DashboardQueue, partitionBase, queueBase, queueOfSegment, type ServedQueue } from "./queue.js";

/** What a handler needs of a request to find its queue (a Hono context). */
export interface QueueRequest {
  req: { param(name: "queue" | "partition"): string | undefined; path: string; url: string; method: string };
  set(key: "page", value: PageContext): void;
}

/** A request's queue, the partition its path names, and the context of its pages. */
export interface Served {
  served: ServedQueue;
  /** The partition the path names (/p/<k>/); undefined when it names none. */
  partition: number | undefined;
  /** The queue the pages act on: the partition's, or the only one; undefined on a partitioned queue's overview. */
  queue: DashboardQueue | undefined;
  ctx: PageContext;
}

export interface Directory {
  /** What every page knows of the dashboard. */
  site: SiteContext;
  /** The one queue shown, when the dashboard is not over a store. */
  single: ServedQueue | undefined;
  /** All-queues mode: the store's queue names, listed afresh (listQueuePartitions). */
  refresh(): Promise<string[]>;
  /** All-queues mode: the queue of a name, with the partitions the last listing found of it. */
  named(name: string): ServedQueue;
  /**
   * The queue of the request's path (:queue) and the partition it names (:partition), set as the
   * page context of its pages and errors; 404 when none, or when the partition is not one of the
   * queue's.
   */
  servedOf(c: QueueRequest): Promise<Served>;
  /**
   * The one queue the request's pages act on: the partition the path names, or a queue of one
   * partition; 404 as servedOf, and for a partitioned queue's path naming no partition (its page
   * links the same page of each partition).
   */
  queueOf(c: QueueRequest): Promise<{ queue: DashboardQueue; ctx: PageContext }>;
}

/** The directory over one queue, or over every queue of `store`; give exactly one of them. */
export function createDirectory(site: SiteContext, single: ServedQueue | undefined, store?: Store): Directory {
  const contexts = new WeakMap<ServedQueue, Map<number | undefined, PageContext>>();
  const pageOf = (served: ServedQueue, partition: number | undefined): PageContext => {
    const byPartition = contexts.get(served) ?? new Map<number | undefined, PageContext>();
    contexts.set(served, byPartition);
    let ctx = byPartition.get(partition);
    if (!ctx) {
      const { name } = served;
      const partitions = served.partitions.map((each) => each.partition);
      ctx = {
        ...site,
        queueName: name,
        base: partition === undefined ? queueBase(name) : partitionBase(name, partition),
        ...(partitions.length > 1 ? { partitioned: { partitions, queueBase: queueBase(name), partition } } : {}),
      };
      byPartition.set(partition, ctx);
    }
    return ctx;
  };

  // All-queues mode: the queues listQueuePartitions found last, with their partitions (refreshed by
  // each overview, and when a path names a queue not among them), and a ServedQueue for each name
  // asked for, made again when its partitions change.
  let known = new Map<string, number[]>();
  const opened = new Map<string, ServedQueue>();
  const refresh = async (): Promise<string[]> => {
    const found = await listQueuePartitions(store as Store);
    known = new Map(found.map(({ name, partitions }) => [name, partitions]));
    for (const name of opened.keys()) if (!known.has(name)) opened.delete(name);
    return found.map(({ name }) => name);
  };
  const named = (name: string): ServedQueue => {
    const numbers = known.get(name) ?? [0];
    let served = opened.get(name);
    if (!served || served.partitions.map((each) => each.partition).join() !== numbers.join()) {
      served = {
        name,
        partitions: numbers.map((partition) => ({
          partition,
          queue: partitionQueue(store as Store, { name }, partition),
        })),
      };
      opened.set(name, served);
    }
    return served;
  };

  /** The queue a path segment names, or 404: a bad name, another queue than a one-queue dashboard's, or one not on the store. */
  async function queueOfPath(segment: string): Promise<ServedQueue> {
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

  async function servedOf(c: QueueRequest): Promise<Served> {
    const served = await queueOfPath(c.req.param("queue") ?? "");
    c.set("page", pageOf(served, undefined));
    const partition = partitionOfPath(served, c.req.param("partition"));
    const ctx = pageOf(served, partition);
    c.set("page", ctx);
    const queue =
      partition !== undefined
        ? served.partitions.find((each) => each.partition === partition)?.queue
        : served.partitions.length === 1
          ? served.partitions[0].queue
          : undefined;
    return { served, partition, queue, ctx };
  }

  return {
    site,
    single,
    refresh,
    named,
    servedOf,
    async queueOf(c) {
      const { served, queue, ctx } = await servedOf(c);
      if (queue) return { queue, ctx };
      // A GET is offered the same page of each partition; an action names its partition in its path.
      const base = queueBase(served.name);
      // The path after /q/<segment>, however the segment was written (%7E for ~, say).
      const rest = c.req.path.replace(/^\/q\/[^/]*/, "");
      const links: Link[] =
        c.req.method === "GET"
          ? served.partitions.map(({ partition }) => ({
              href: `${partitionBase(served.name, partition)}${rest}${new URL(c.req.url).search}`,
              text: `partition ${partition}`,
            }))
          : [];
      throw new HttpError(
        404,
        `Queue "${served.name}" has ${served.partitions.length} partitions: its task lists, tasks, groups, schedules and actions are each partition's, under ${base}/p/<partition>/.`,
        links,
      );
    },
  };
}

/**
 * The partition a path's /p/<k>/ names (undefined without one), or 404: a queue of one partition
 * has none, and a partitioned one only those it has. A segment that is not a number is not echoed.
 */
function partitionOfPath(served: ServedQueue, segment: string | undefined): number | undefined {
  if (segment === undefined) return undefined;
  const numbers = served.partitions.map((each) => each.partition);
  if (numbers.length === 1) {
    throw new HttpError(
      404,
      `Queue "${served.name}" has one partition: its pages are under ${queueBase(served.name)}/.`,
    );
  }
  const partition = /^(0|[1-9][0-9]{0,2})$/.test(segment) ? Number(segment) : undefined;
  if (partition === undefined || !numbers.includes(partition)) {
    const asked = partition === undefined ? "the path names none of them" : `no partition ${partition}`;
    throw new HttpError(
      404,
      `Queue "${served.name}" has ${numbers.length} partitions, ${partitionsText(numbers)}: ${asked}.`,
    );
  }
  return partition;
}

/** A queue's partition numbers as words: "0 to 2", or each when they are not 0..n-1 ("0, 2 and 5"). */
export function partitionsText(numbers: readonly number[]): string {
  if (numbers.every((partition, at) => partition === at)) return `0 to ${numbers.length - 1}`;
  return `${numbers.slice(0, -1).join(", ")} and ${numbers[numbers.length - 1]}`;
}
