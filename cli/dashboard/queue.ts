// What the dashboard needs of a queue (the library's Queue: the methods it calls), and the helpers
// of its paths.
import type { Queue } from "../../shared/queue.js";
import { LISTABLE } from "../../shared/queue-admin.js";
import type { TaskState } from "../../shared/types.js";

/** The task states, in the order the pages show them. */
export const STATES: readonly TaskState[] = LISTABLE;

export type DashboardQueue = Pick<Queue, "name" | "stats"> & {
  readonly admin: Pick<
    Queue["admin"],
    | "list"
    | "inspect"
    | "requeue"
    | "amend"
    | "skip"
    | "delete"
    | "cancel"
    | "pause"
    | "resume"
    | "history"
    | "find"
    | "groups"
  >;
  readonly schedules: Pick<Queue["schedules"], "list" | "pause" | "resume" | "runNow" | "remove">;
};

/**
 * A queue as the dashboard serves it: its partitions by number (docs/partitions.md), each a whole
 * queue (partitionQueue). A queue of one partition, partition 0, is a queue as it always was.
 */
export interface ServedQueue {
  readonly name: string;
  /** Ascending by number, partition 0 first. */
  readonly partitions: ReadonlyArray<{ readonly partition: number; readonly queue: DashboardQueue }>;
}

/** The route prefixes of a queue's pages: the queue's own, and one partition's (a partitioned queue's lists, tasks, actions). */
export const QUEUE_PREFIXES = ["/q/:queue", "/q/:queue/p/:partition"] as const;

/** Tasks one find call looks at. */
export const SCAN_DEFAULT = 1000;

/** A queue name leaseq accepts (as the Queue constructor checks it): `^[A-Za-z0-9_.-]{1,64}$`. */
export function isQueueName(value: unknown): value is string {
  return typeof value === "string" && value.length >= 1 && value.length <= 64 && /^[A-Za-z0-9_.-]+$/.test(value);
}

/**
 * The path segment of a queue's pages, /q/<segment>/. The name itself, but for the valid names "."
 * and "..", which a browser would resolve as path steps (even as %2E): those are written with "~"
 * for each dot ("~" is never in a queue name, so nothing else can clash).
 */
export function queueSegment(name: string): string {
  return name === "." || name === ".." ? name.replaceAll(".", "~") : name;
}

/** The queue name of a path segment, or undefined when it names no possible queue. */
export function queueOfSegment(segment: string): string | undefined {
  if (segment === "~" || segment === "~~") return segment.replaceAll("~", ".");
  if (segment === "." || segment === "..") return undefined;
  return isQueueName(segment) ? segment : undefined;
}

/** Where a queue's pages are: /q/<segment> (its overview is that and "/"). */
export function queueBase(name: string): string {
  return `/q/${queueSegment(name)}`;
}

/** Where partition `partition` of a partitioned queue has its pages: /q/<segment>/p/<partition>. */
export function partitionBase(name: string, partition: number): string {
  return `${queueBase(name)}/p/${partition}`;
}

/** Runs `work` over `items` with at most `limit` at once; the results in the items' order. */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return results;
}
