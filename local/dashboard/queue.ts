// What the dashboard needs of a queue: the methods of shared/queue.ts it calls. The queue controls
// (history, find, cancel, pause, resume) are optional here, so the dashboard also runs against a
// Queue without them (it says so on the page, and refuses the action with 501).
import { InvalidInputError } from "../../shared/errors.js";
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
  find?(state: TaskState, options: FindOptions): Promise<FindPage>;
  cancel?(ids: string[], options: { now: number }): Promise<ItemResult[]>;
  pause?(options: { now: number; type?: string }): Promise<unknown>;
  resume?(options: { now: number; type?: string }): Promise<unknown>;
}

/** Entries one find call looks at, unless told. */
export const SCAN_DEFAULT = 1000;

/**
 * One page of the tasks in `state` that match the filter: the queue's own `find` when it has one,
 * else `findByList` (the same contract over `list` pages).
 */
export function findTasks(queue: DashboardQueue, state: TaskState, options: FindOptions): Promise<FindPage> {
  if (typeof queue.find === "function") return queue.find(state, options);
  return findByList(queue, state, options);
}

/**
 * `find` over `list`, for a queue without it: reads `scan` entries from `cursor` and keeps the
 * matches. `olderThanMs` compares the listed time (due, finished, quarantined): not for READY
 * (ordered by rank) or LEASED (by deadline) tasks.
 */
export async function findByList(queue: DashboardQueue, state: TaskState, options: FindOptions): Promise<FindPage> {
  if (options.olderThanMs !== undefined && (state === "ready" || state === "leased")) {
    throw new InvalidInputError(
      `find: olderThanMs applies to scheduled, done, failed or corrupt tasks, not ${state} ones`,
    );
  }
  const cursor = options.cursor ?? 0;
  const scan = Math.min(1000, options.scan ?? SCAN_DEFAULT);
  const before = options.olderThanMs === undefined ? undefined : options.now - options.olderThanMs;
  const page = await queue.list(state, { offset: cursor, limit: scan });
  const tasks = page.filter(
    (task) =>
      (options.type === undefined || task.type === options.type) &&
      (options.error === undefined || task.lastError.includes(options.error)) &&
      (before === undefined || task.score < before),
  );
  return { tasks, next: page.length < scan ? undefined : cursor + page.length };
}

/**
 * A duration as typed in a filter: plain milliseconds ("1500"), or a number with ms, s, m, h or d
 * ("90s", "5m", "1.5h"). Undefined for empty text; throws RangeError when it cannot be read.
 */
export function parseDuration(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$/i.exec(text);
  if (!match) throw new RangeError(`not a duration: "${text}" (e.g. 1500, 90s, 5m, 2h, 1d)`);
  const unit = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };
  return Math.round(Number(match[1]) * unit[(match[2]?.toLowerCase() ?? "ms") as keyof typeof unit]);
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
