import type { Command } from "commander";
import { LIMITS } from "../shared/config.js";
import type { Queue } from "../shared/queue.js";
import { queueName, withQueue } from "./connect.js";
import { wakeWorker } from "./wake.js";

/**
 * Runs `requeue` on the command's queue and, when it requeued any task (`count`), reads whether the
 * queue is paused: its requeued tasks then wait for a resume, which wakes a worker itself.
 */
export async function requeueing<T>(
  command: Command,
  requeue: (queue: Queue) => Promise<T>,
  count: (result: T) => number,
): Promise<{ result: T; paused: boolean }> {
  return withQueue(command, async (queue) => {
    const result = await requeue(queue);
    const paused = count(result) > 0 && (await queue.stats({ now: Date.now() })).paused;
    return { result, paused };
  });
}

/** After `count` tasks were requeued READY: the wake-up `leaseq resume` would send, or when they start. */
export async function wakeForRequeued(command: Command, count: number, paused: boolean): Promise<void> {
  if (count === 0) return;
  if (paused) {
    console.log(`queue "${queueName(command)}" is paused: the requeued tasks start once it is resumed (leaseq resume)`);
    return;
  }
  await wakeWorker(Date.now(), "the requeued tasks");
}

/**
 * Requeues the tasks FAILED at the start, page by page. It stops after that many, so tasks that
 * fail again meanwhile are not chased forever.
 */
export async function requeueAllFailed(queue: Queue): Promise<number> {
  const failedAtStart = (await queue.stats({ now: Date.now() })).failed;
  let requeued = 0;
  while (requeued < failedAtStart) {
    const page = await queue.list("failed", { limit: Math.min(LIMITS.batchMax, failedAtStart - requeued) });
    if (page.length === 0) break;
    const results = await queue.requeue(
      page.map((task) => task.id),
      { now: Date.now() },
    );
    const ok = results.filter((result) => result.status === "ok").length;
    // A page none of which could be requeued was taken meanwhile (e.g. trimmed): nothing left to do.
    if (ok === 0) break;
    requeued += ok;
  }
  return requeued;
}
