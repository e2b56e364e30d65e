import type { Queue } from "../shared/queue.js";
import type { ClaimedTask } from "../shared/types.js";
import { BatchRun } from "./batch.js";
import type { TaskDeclaration } from "./tasks.js";

export interface DrainCounts {
  claimed: number;
  done: number;
  retried: number;
  failed: number;
  /** Given back unstarted (or cut off by the time budget): READY again, rank kept, attempt returned. */
  released: number;
  /** Leases lost to the reclaimer while held (the task may run again elsewhere). */
  lost: number;
}

export interface DrainOptions {
  queue: Queue;
  tasks: TaskDeclaration;
  claimBatch: number;
  /** Time left in the invocation, ms (context.getRemainingTimeInMillis). */
  remainingMs: () => number;
  /** Time kept free at the end of the invocation for the last settle. */
  safetyMarginMs: number;
  /** Finished tasks are settled once the first of them has waited this long (and at the batch's end). */
  flushAfterMs?: number;
  now?: () => number;
}

/** Settle finished tasks at least this often while a batch runs: a crash then re-runs only the rest. */
export const DEFAULT_FLUSH_AFTER_MS = 1_000;

/**
 * Claims and runs batches until a claim comes back empty or no declared task type's lease fits the
 * time left. Each claim asks only for tasks whose lease fits that time (judged per type, so one long
 * type does not shrink the window of the others), and each batch runs in rank order (see BatchRun).
 */
export async function drain(options: DrainOptions): Promise<DrainCounts> {
  const counts: DrainCounts = { claimed: 0, done: 0, retried: 0, failed: 0, released: 0, lost: 0 };
  const leases = Object.values(options.tasks.types).map((type) => type.leaseMs);
  if (leases.length === 0) return counts;
  const shortestLeaseMs = Math.min(...leases);
  const now = options.now ?? Date.now;
  for (;;) {
    const leftMs = options.remainingMs() - options.safetyMarginMs;
    if (leftMs < shortestLeaseMs) break;
    const batch: ClaimedTask[] = await options.queue.claim({
      count: options.claimBatch,
      now: now(),
      maxLeaseMs: Math.min(leftMs, 86_400_000),
    });
    if (batch.length === 0) break;
    counts.claimed += batch.length;
    await new BatchRun(
      batch,
      { ...options, now, flushAfterMs: options.flushAfterMs ?? DEFAULT_FLUSH_AFTER_MS },
      counts,
    ).run();
  }
  return counts;
}
