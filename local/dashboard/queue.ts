// What the dashboard needs of a queue: the methods of shared/queue.ts it calls. Some controls
// (history, cancel, pause, resume) are optional here, so a page can be rendered over a narrower
// queue (it says so on the page, and refuses the action with 501).
import type { ItemResult, ListedTask, QueueStats, TaskInfo, TaskState } from "../../shared/types.js";

export const STATES: readonly TaskState[] = ["ready", "scheduled", "leased", "done", "failed", "corrupt"];

/** DONE and FAILED per bucket (a minute) from `startMs`. */
export interface History {
  startMs: number;
  bucketMs: number;
  done: number[];
  failed: number[];
}

export interface FindOptions {
  type?: string;
  /** A substring of the last error. */
  error?: string;
  olderThanMs?: number;
  now: number;
  /** Where to resume a scan (the `next` of the previous page); 0 or undefined: from the start. */
  cursor?: number;
  /** How many entries of the state to look at in this call. */
  scan?: number;
}

export interface FindPage {
  tasks: ListedTask[];
  /** The cursor of the next page, or undefined when the scan reached the end of the state. */
  next: number | undefined;
}

export type DashboardStats = QueueStats & { paused?: boolean; pausedTypes?: string[] };

export interface DashboardQueue {
  readonly name: string;
  stats(options: { now: number }): Promise<DashboardStats>;
  list(state: TaskState, options?: { offset?: number; limit?: number }): Promise<ListedTask[]>;
  inspect(id: string): Promise<TaskInfo | undefined>;
  requeue(ids: string[], options: { now: number }): Promise<ItemResult[]>;
  delete(ids: string[]): Promise<ItemResult[]>;
  history?(options: { now: number; minutes: number }): Promise<History>;
  find(state: TaskState, options: FindOptions): Promise<FindPage>;
  cancel?(ids: string[], options: { now: number }): Promise<ItemResult[]>;
  pause?(options: { now: number; type?: string }): Promise<unknown>;
  resume?(options: { now: number; type?: string }): Promise<unknown>;
}

/** Entries one find call looks at, unless told. */
export const SCAN_DEFAULT = 1000;

/** One page of the tasks in `state` that match the filter (the queue's `find`: bounded, resumable). */
export function findTasks(queue: DashboardQueue, state: TaskState, options: FindOptions): Promise<FindPage> {
  return queue.find(state, options);
}

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
