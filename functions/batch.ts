import type { ClaimedTask, SettleItem } from "../shared/types.js";
import type { DrainCounts, DrainOptions } from "./drain.js";
import { callHandler, failureOf } from "./handler-call.js";
import { backoffDelayMs, type DeclaredTaskType } from "./tasks.js";

type BatchOptions = DrainOptions & { now: () => number; flushAfterMs: number };

/** Why a handler stopped early; `budget` means the invocation is about to end. */
class Stop extends Error {
  constructor(
    readonly reason: "lost" | "budget",
    message: string,
  ) {
    super(message);
  }
}

/**
 * Runs one claimed batch in rank order. While it runs, a heartbeat extends the leases of every task
 * not yet settled, and finished tasks are settled in small coalesced calls (with the heartbeat, or
 * once the oldest finished one has waited `flushAfterMs`), so a crash late in the batch re-runs only
 * what had not finished: batch-mates are never failed by association. A handler the time budget
 * cuts off has used an attempt ("did not finish within the invocation"); the tasks after it that
 * never started are released (attempt given back). Every Redis call of the batch runs in one chain,
 * so a flush and a heartbeat never overlap.
 */
export class BatchRun {
  /** Leased by this batch and not settled yet: what the heartbeat extends. */
  private readonly held = new Map<string, ClaimedTask>();
  private readonly finished: SettleItem[] = [];
  private firstFinishedAt = 0;
  private readonly lost = new Set<string>();
  private readonly running = new Map<string, AbortController>();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly batch: ClaimedTask[],
    private readonly options: BatchOptions,
    private readonly counts: DrainCounts,
  ) {
    for (const task of batch) this.held.set(task.id, task);
  }

  async run(): Promise<void> {
    const { tasks, now } = this.options;
    const leases = this.batch.map((task) => this.leaseOf(task));
    const timer = setInterval(() => void this.serial(() => this.heartbeat()), Math.max(250, Math.min(...leases) / 3));
    try {
      for (const [index, task] of this.batch.entries()) {
        if (this.lost.has(task.id)) continue;
        if (this.options.remainingMs() - this.options.safetyMarginMs < this.leaseOf(task)) {
          await this.releaseFrom(index);
          break;
        }
        const startedAt = now();
        const outcome = await this.runTask(task, tasks.types[task.type]);
        if (outcome === "lost") continue;
        if (outcome === "budget") {
          // Cut off by the invocation's end: an attempt, like a throw, so a task that always
          // overruns ends FAILED after its attempts instead of looping; the rest go back unstarted.
          this.finish(this.overran(task, now() - startedAt));
          await this.releaseFrom(index + 1);
          break;
        }
        this.finish(outcome);
        if (tasks.ordered && outcome.outcome !== "ack") {
          // Strict order: nothing after a failure may complete before it does.
          await this.serial(() => this.flush());
          await this.releaseFrom(index + 1);
          break;
        }
        if (now() - this.firstFinishedAt >= this.options.flushAfterMs) await this.serial(() => this.flush());
      }
    } finally {
      clearInterval(timer);
      await this.serial(() => this.flush());
    }
    this.counts.lost += this.lost.size;
  }

  /** The settle of a run cut off by the invocation's end: a retry with backoff, or FAILED on its last attempt. */
  private overran(task: ClaimedTask, ranMs: number): SettleItem {
    const type = this.options.tasks.types[task.type];
    return {
      id: task.id,
      token: task.token,
      outcome: "retry",
      retryAtMs: this.options.now() + (type ? backoffDelayMs(type.backoff, task.attempt) : 0),
      error: `did not finish within the invocation (${ranMs} ms)`,
    };
  }

  private leaseOf(task: ClaimedTask): number {
    return this.options.tasks.types[task.type]?.leaseMs ?? task.leaseDeadlineMs - this.options.now();
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => {});
    return next;
  }

  private finish(item: SettleItem): void {
    if (this.finished.length === 0) this.firstFinishedAt = this.options.now();
    this.finished.push(item);
  }

  private async runTask(
    task: ClaimedTask,
    type: DeclaredTaskType | undefined,
  ): Promise<SettleItem | "lost" | "budget"> {
    const base = { id: task.id, token: task.token };
    if (type === undefined) {
      // The claim leaves alone the tasks of types the queue declares that this worker lacks: this
      // one's type is declared by no deployment of the queue, so no worker will ever run it.
      const known = Object.keys(this.options.tasks.types).join(", ");
      return {
        ...base,
        outcome: "fail",
        error: `no handler for task type "${task.type}", and the queue declares no such type; this worker's types: ${known}`,
      };
    }
    const controller = new AbortController();
    this.running.set(task.id, controller);
    // The invocation ends before the handler would: stop it while there is time to release it.
    const deadline = setTimeout(
      () => controller.abort(new Stop("budget", "the invocation is about to time out")),
      Math.max(0, this.options.remainingMs() - this.options.safetyMarginMs),
    );
    try {
      const handled = callHandler(type, task, controller.signal);
      // Settled late, after the race below: nothing left to report it to.
      handled.catch(() => {});
      // The invocation's end does not wait for a handler that ignores its signal: the run is
      // settled while there is time (the handler goes on in the background until the freeze).
      await Promise.race([handled, budgetEnd(controller.signal)]);
      if (this.lost.has(task.id)) return "lost";
      return { ...base, outcome: "ack" };
    } catch (error) {
      if (this.lost.has(task.id)) return "lost";
      const stop = controller.signal.reason;
      if (controller.signal.aborted && stop instanceof Stop && stop.reason === "budget") return "budget";
      const failure = failureOf(error);
      if (failure.permanent) return { ...base, outcome: "fail", error: failure.reason };
      const retryAtMs = this.options.now() + backoffDelayMs(type.backoff, task.attempt);
      return { ...base, outcome: "retry", retryAtMs, error: failure.reason };
    } finally {
      clearTimeout(deadline);
      this.running.delete(task.id);
    }
  }

  /** Settles the finished tasks in one call. */
  private async flush(): Promise<void> {
    const items = this.finished.splice(0).filter((item) => !this.lost.has(item.id));
    if (items.length === 0) return;
    let results: Awaited<ReturnType<BatchOptions["queue"]["settle"]>>;
    try {
      results = await this.options.queue.settle(items, { now: this.options.now() });
    } catch (error) {
      // Kept for the next flush: the heartbeat keeps their leases alive meanwhile.
      this.finished.unshift(...items);
      throw error;
    }
    for (const result of results) {
      this.held.delete(result.id);
      if (result.status === "ok" || result.status === "already_done") {
        if (result.state === "done") this.counts.done++;
        else if (result.state === "failed") this.counts.failed++;
        else this.counts.retried++;
      } else this.lost.add(result.id);
    }
  }

  /** Extends every lease still held; a lease the reclaimer took is lost and its handler stopped. */
  private async heartbeat(): Promise<void> {
    await this.flush().catch(() => {});
    const items = [...this.held.values()]
      .filter((task) => !this.lost.has(task.id))
      .map((task) => ({ id: task.id, token: task.token, leaseMs: this.leaseOf(task) }));
    if (items.length === 0) return;
    try {
      for (const result of await this.options.queue.extend(items, { now: this.options.now() })) {
        const task = this.held.get(result.id);
        if (task && result.status === "ok" && result.leaseDeadlineMs) task.leaseDeadlineMs = result.leaseDeadlineMs;
        else if (task) this.markLost(result.id);
      }
    } catch {
      // Redis unreachable for now: stop a handler only once its lease is about to run out.
      const now = this.options.now();
      for (const task of this.held.values()) {
        if (task.leaseDeadlineMs - now < this.options.safetyMarginMs) this.markLost(task.id);
      }
    }
  }

  private markLost(id: string): void {
    this.held.delete(id);
    this.lost.add(id);
    this.running.get(id)?.abort(new Stop("lost", `lease of task ${id} was lost`));
  }

  /** Gives back the tasks from `index` on that are still held: READY again, rank kept, attempt returned. */
  private async releaseFrom(index: number): Promise<void> {
    const tasks = this.batch.slice(index).filter((task) => this.held.has(task.id) && !this.lost.has(task.id));
    if (tasks.length === 0) return;
    for (const task of tasks) this.held.delete(task.id);
    const results = await this.serial(() => this.options.queue.release(tasks, { now: this.options.now() }));
    this.counts.released += results.filter((result) => result.status === "ok").length;
  }
}

/** Rejects when `signal` aborts because the invocation is about to end; never resolves. */
function budgetEnd(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    signal.addEventListener(
      "abort",
      () => {
        if (signal.reason instanceof Stop && signal.reason.reason === "budget") reject(signal.reason);
      },
      { once: true },
    );
  });
}
