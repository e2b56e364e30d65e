import { expect } from "vitest";
import type { Queue } from "../../shared/queue.js";

/** Runs the queue's consistency check to its end (docs/design.md, "Checking a queue") and expects no problem. */
export async function expectClean(queue: Queue, now: number): Promise<void> {
  const problems = await queue.admin.checkAll({ now });
  expect(problems, "leaseq check").toEqual([]);
}

/** Whether the queue is drained at `now`: nothing ready, scheduled or leased, every task DONE or FAILED. */
export async function isDrained(queue: Queue, now: number): Promise<boolean> {
  const stats = await queue.stats({ now });
  return stats.ready + stats.scheduled + stats.leased === 0;
}
