import type { Queue } from "../shared/queue.js";
import type { ClaimedTask, SettleItem } from "../shared/types.js";
import { backoffDelayMs, PermanentError, type TaskRegistry, type TaskType } from "./task.js";

export interface DrainCounts {
  claimed: number;
  done: number;
  retried: number;
  failed: number;
  released: number;
  /** Leases lost to the reclaimer while held (the task may run again elsewhere). */
  lost: number;
}

export interface DrainOptions {
  queue: Queue;
  registry: TaskRegistry;
  claimBatch: number;
  /** Time left in the invocation, ms (context.getRemainingTimeInMillis). */
  remainingMs: () => number;
  safetyMarginMs: number;
  now?: () => number;
}

const DEFAULT_LEASE_MS = 60_000; // the queue's default policy, for types nobody declared

/**
 * Claims and runs batches until a claim comes back empty or the invocation cannot cover another
 * lease. Each batch runs in rank order and is settled in one call; while it runs, a heartbeat
 * extends the leases of its unsettled tasks so none expires under a slow handler.
 */
export async function drain(options: DrainOptions): Promise<DrainCounts> {
  const counts: DrainCounts = { claimed: 0, done: 0, retried: 0, failed: 0, released: 0, lost: 0 };
  const now = options.now ?? Date.now;
  const longestLease = Math.max(DEFAULT_LEASE_MS, ...Object.values(options.registry.types).map((t) => t.leaseMs));
  while (options.remainingMs() >= longestLease + options.safetyMarginMs) {
    const batch = await options.queue.claim({ count: options.claimBatch, now: now() });
    if (batch.length === 0) break;
    counts.claimed += batch.length;
    await runBatch(batch, options, now, counts);
  }
  return counts;
}

async function runBatch(
  batch: ClaimedTask[],
  options: DrainOptions,
  now: () => number,
  counts: DrainCounts,
): Promise<void> {
  const { queue, registry, safetyMarginMs } = options;
  const leaseOf = (task: ClaimedTask) => registry.types[task.type]?.leaseMs ?? DEFAULT_LEASE_MS;
  const pending = new Map(batch.map((task) => [task.id, task]));
  const lost = new Set<string>();
  const running = new Map<string, AbortController>();

  const heartbeat = async () => {
    const items = [...pending.values()].map((task) => ({ id: task.id, token: task.token, leaseMs: leaseOf(task) }));
    if (items.length === 0) return;
    try {
      for (const result of await queue.extend(items, { now: now() })) {
        const task = pending.get(result.id);
        if (task && result.status === "ok" && result.leaseDeadlineMs) task.leaseDeadlineMs = result.leaseDeadlineMs;
        else if (task) markLost(result.id);
      }
    } catch {
      // Redis unreachable for now: stop a handler only once its lease is about to run out.
      for (const task of pending.values()) if (task.leaseDeadlineMs - now() < safetyMarginMs) markLost(task.id);
    }
  };
  const markLost = (id: string) => {
    pending.delete(id);
    lost.add(id);
    running.get(id)?.abort(new Error(`lease of task ${id} was lost`));
  };
  let beat: Promise<void> = Promise.resolve();
  const interval = Math.max(250, Math.min(...batch.map(leaseOf)) / 3);
  const timer = setInterval(() => {
    beat = beat.then(heartbeat);
  }, interval);

  const settled: SettleItem[] = [];
  try {
    for (const [index, task] of batch.entries()) {
      if (lost.has(task.id)) continue;
      if (options.remainingMs() < leaseOf(task) + safetyMarginMs) {
        await release(batch.slice(index), options, now, counts, lost, pending);
        break;
      }
      const item = await runTask(task, registry.types[task.type], options, now, running, lost);
      if (item === undefined) continue;
      settled.push(item);
      if (registry.ordered && item.outcome !== "ack") {
        await release(batch.slice(index + 1), options, now, counts, lost, pending);
        break;
      }
    }
  } finally {
    clearInterval(timer);
    await beat;
  }
  counts.lost += lost.size;
  const live = settled.filter((item) => !lost.has(item.id));
  if (live.length === 0) return;
  for (const result of await queue.settle(live, { now: now() })) {
    if (result.status === "ok" || result.status === "already_done") {
      if (result.state === "done") counts.done++;
      else if (result.state === "failed") counts.failed++;
      else counts.retried++;
    } else counts.lost++;
  }
}

async function runTask(
  task: ClaimedTask,
  type: TaskType | undefined,
  options: DrainOptions,
  now: () => number,
  running: Map<string, AbortController>,
  lost: Set<string>,
): Promise<SettleItem | undefined> {
  const base = { id: task.id, token: task.token };
  if (type === undefined) {
    const known = Object.keys(options.registry.types).join(", ");
    return { ...base, outcome: "fail", error: `no handler for task type "${task.type}"; declared types: ${known}` };
  }
  const controller = new AbortController();
  running.set(task.id, controller);
  // The invocation ends before the handler would: abort it while there is time to settle.
  const deadline = setTimeout(
    () => controller.abort(new Error("the invocation is about to time out")),
    Math.max(0, options.remainingMs() - options.safetyMarginMs),
  );
  try {
    await type.handler({
      id: task.id,
      type: task.type,
      payload: JSON.parse(task.payload),
      attempt: task.attempt,
      maxAttempts: type.maxAttempts,
      leaseDeadlineMs: task.leaseDeadlineMs,
      signal: controller.signal,
    });
    return lost.has(task.id) ? undefined : { ...base, outcome: "ack" };
  } catch (error) {
    if (lost.has(task.id)) return undefined;
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if (error instanceof PermanentError) return { ...base, outcome: "fail", error: text };
    return { ...base, outcome: "retry", retryAtMs: now() + backoffDelayMs(type.backoff, task.attempt), error: text };
  } finally {
    clearTimeout(deadline);
    running.delete(task.id);
  }
}

async function release(
  tasks: ClaimedTask[],
  options: DrainOptions,
  now: () => number,
  counts: DrainCounts,
  lost: Set<string>,
  pending: Map<string, ClaimedTask>,
): Promise<void> {
  const unstarted = tasks.filter((task) => !lost.has(task.id));
  for (const task of unstarted) pending.delete(task.id);
  if (unstarted.length === 0) return;
  const results = await options.queue.release(unstarted, { now: now() });
  counts.released += results.filter((r) => r.status === "ok").length;
}
