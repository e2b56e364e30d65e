/**
 * The tasks every system gets: the same ids, type, priorities and payload bytes, so no system is
 * measured on lighter work. Priorities are mixed (four levels); BullMQ counts priority 1 as the
 * most urgent, so it gets the same order shifted by one.
 */
import { LIMITS } from "../shared/config.js";

export interface BenchTask {
  id: string;
  type: string;
  /** 0..3, lower runs sooner (leaseq's and the naive design's convention). */
  priority: number;
  payload: { to: string; template: string; pad?: string };
}

export const TASK_TYPE = "email";
export const PRIORITY_LEVELS = 4;
/** Arrival positions per priority level in the naive design's score, as in leaseq's rank. */
const SEQUENCE_SPAN = LIMITS.rankSpan;

export function taskId(index: number): string {
  return `task-${String(index).padStart(7, "0")}`;
}

/** The index a `taskId` was made from. */
export function taskIndex(id: string): number {
  return Number(id.slice(5));
}

export function taskPriority(index: number): number {
  return index % PRIORITY_LEVELS;
}

/** Task `index`; with `payloadBytes`, its payload padded (a `pad` field) to exactly that size. */
export function makeTask(index: number, payloadBytes?: number): BenchTask {
  const payload: BenchTask["payload"] = {
    to: `user-${String(index).padStart(7, "0")}@example.com`,
    template: "welcome",
  };
  if (payloadBytes !== undefined) {
    const base = JSON.stringify({ ...payload, pad: "" }).length;
    if (payloadBytes < base) throw new Error(`a padded payload is at least ${base} bytes`);
    payload.pad = padding(payloadBytes - base);
  }
  return { id: taskId(index), type: TASK_TYPE, priority: taskPriority(index), payload };
}

const paddings = new Map<number, string>();
/** One string per size, shared by every task of a round. */
function padding(length: number): string {
  let text = paddings.get(length);
  if (text === undefined) {
    text = "x".repeat(length);
    paddings.set(length, text);
  }
  return text;
}

/** Tasks `from` .. `to - 1`, their payloads padded to `payloadBytes` when given. */
export function makeTasks(from: number, to: number, payloadBytes?: number): BenchTask[] {
  const tasks: BenchTask[] = [];
  for (let i = from; i < to; i++) tasks.push(makeTask(i, payloadBytes));
  return tasks;
}

/**
 * The serialized payload, identical in every system (JSON text, 54 bytes for every task). It stays
 * under 64 bytes on purpose: BullMQ's job hash switches from listpack to hashtable encoding when a
 * field passes hash-max-listpack-value (64), which would more than double its memory per job (a
 * 68-byte payload measured ~850 bytes per job) — a cliff that would flatter leaseq.
 */
export function payloadText(task: BenchTask): string {
  return JSON.stringify(task.payload);
}

/** The naive design's score: priority first, then arrival, like leaseq's rank. */
export function naiveScore(index: number): number {
  return taskPriority(index) * SEQUENCE_SPAN + index;
}

/** Splits `items` into consecutive chunks of `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}
