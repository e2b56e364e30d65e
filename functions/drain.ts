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
  /** The drain stopped because its time ran out (ready work may be left), not because nothing was ready. */
  cutOff: boolean;
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
  /** An empty claim does not end the drain when work falls due within this long (and the time left allows). */
  lingerMs?: number;
  now?: () => number;
  /** Waits `ms` (tests pass a fake clock's). */
  sleep?: (ms: number) => Promise<void>;
}

/** Settle finished tasks at least this often while a batch runs: a crash then re-runs only the rest. */
export const DEFAULT_FLUSH_AFTER_MS = 1_000;

/** How long a draining worker waits for work falling due soon, by default. */
export const DEFAULT_LINGER_MS = 5_000;

/**
 * Claims and runs batches until a claim comes back empty (and nothing falls due within `lingerMs`)
 * or no declared task type's lease fits the time left. Each claim asks only for tasks whose lease
 * fits that time (judged per type, so one long type does not shrink the window of the others), and
 * each batch runs in rank order (see BatchRun).
 */
export async function drain(options: DrainOptions): Promise<DrainCounts> {
  const counts: DrainCounts = { claimed: 0, done: 0, retried: 0, failed: 0, released: 0, lost: 0, cutOff: false };
  const leases = Object.values(options.tasks.types).map((type) => type.leaseMs);
  if (leases.length === 0) return counts;
  const shortestLeaseMs = Math.min(...leases);
  const longestLeaseMs = Math.max(...leases);
  const now = options.now ?? Date.now;
  // A task of a type the queue declares that this worker has no handler for (another deployment's,
  // or a newer version's still rolling out) stays READY for a worker that has it.
  const types = Object.keys(options.tasks.types);
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const lingerMs = options.lingerMs ?? DEFAULT_LINGER_MS;
  for (;;) {
    const leftMs = options.remainingMs() - options.safetyMarginMs;
    if (leftMs < shortestLeaseMs) {
      counts.cutOff = true;
      break;
    }
    const { tasks: batch, nextDueMs }: { tasks: ClaimedTask[]; nextDueMs: number | undefined } =
      await options.queue.claimOrNextDue({
        count: options.claimBatch,
        now: now(),
        maxLeaseMs: Math.min(leftMs, 86_400_000),
        types,
      });
    if (batch.length === 0) {
      // Work falling due in a moment (a retry's backoff, a short delay): wait for it rather than
      // stop and be woken again, while a lease would still fit after the wait.
      const waitMs = nextDueMs === undefined ? Number.POSITIVE_INFINITY : Math.max(0, nextDueMs - now());
      if (waitMs <= lingerMs && leftMs - waitMs >= shortestLeaseMs) {
        await sleep(Math.max(waitMs, 20));
        continue;
      }
      // Some types' leases did not fit the time left: a fresh invocation may take them.
      counts.cutOff = leftMs < longestLeaseMs;
      break;
    }
    counts.claimed += batch.length;
    await new BatchRun(
      batch,
      { ...options, now, flushAfterMs: options.flushAfterMs ?? DEFAULT_FLUSH_AFTER_MS },
      counts,
    ).run();
  }
  return counts;
}
