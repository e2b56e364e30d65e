import { type ClaimOptions, Queue } from "../shared/queue.js";
import type { ClaimOutcome, EnqueueResult, TaskInput, WakeTo } from "../shared/types.js";

/** A wake-up to send: when, and on a partitioned queue the partition it is for (the message names it). */
export interface Wake {
  atMs: number;
  partition?: number;
}

/**
 * What the functions consume through: a queue, or a partitioned queue's partitions as one
 * (shared/partitioned-queue.ts, loaded only for one: docs/partitions.md). Its wake-ups come as lists,
 * each naming its partition; its tokens carry theirs.
 */
export interface WorkQueue
  extends Pick<Queue, "name" | "settings" | "checkTasks" | "settle" | "extend" | "release" | "reclaim"> {
  enqueueAndWake(
    tasks: TaskInput[],
    options: { now: number; traceparent?: string },
  ): Promise<{ results: EnqueueResult[]; wakes: Wake[]; wakeTo: WakeTo[] }>;
  /**
   * `partition`: the one a wake-up named, claimed from first (a queue of one partition has only 0);
   * `handsOff`: the caller hands off as it stops, so a partition its claims leave is handed off at once.
   */
  claimOrNextDue(
    options: ClaimOptions & { partition?: number; handsOff?: boolean },
  ): Promise<ClaimOutcome & { wakes: Wake[] }>;
  handOff(options: { now: number; cutOff?: boolean; woken?: boolean; partition?: number }): Promise<Wake[]>;
}

const wakeList = (atMs: number | undefined): Wake[] => (atMs === undefined ? [] : [{ atMs }]);

/** A queue of one partition as a WorkQueue: its own methods, their wake-ups as lists. */
export function plainWorkQueue(queue: Queue): WorkQueue {
  return Object.assign(Object.create(queue) as Queue, {
    async enqueueAndWake(tasks: TaskInput[], options: { now: number; traceparent?: string }) {
      const { wakeAtMs, ...answer } = await queue.enqueueAndWake(tasks, options);
      return { ...answer, wakes: wakeList(wakeAtMs) };
    },
    async claimOrNextDue(options: ClaimOptions) {
      const outcome = await queue.claimOrNextDue(options);
      return { ...outcome, wakes: wakeList(outcome.wakeAtMs) };
    },
    async handOff(options: { now: number; cutOff?: boolean; woken?: boolean }) {
      return wakeList(await queue.handOff(options));
    },
  });
}

/** `queue` as a WorkQueue: a Queue wrapped (plainWorkQueue), a WorkQueue (a partitioned queue) as it is. */
export function workQueueOf(queue: Queue | WorkQueue): WorkQueue {
  return queue instanceof Queue ? plainWorkQueue(queue) : queue;
}
