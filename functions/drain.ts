import type { Queue } from "../shared/queue.js";
import type { ClaimedTask, SettleItem } from "../shared/types.js";
import { type RunOutcome, runTask, Stop } from "./task-run.js";
import type { DeclaredTaskType, TaskDeclaration } from "./tasks.js";
import type { TakenWakeUp, WakeListen } from "./wake-listen.js";
import { type WorkQueue, workQueueOf } from "./work-queue.js";

export interface DrainCounts {
  claimed: number;
  /** Handlers started (an attempt each). */
  started: number;
  done: number;
  retried: number;
  failed: number;
  /** Given back unstarted (a lease found lost before its start): READY again, rank kept, attempt returned. */
  released: number;
  /** Leases lost while held (the task may run again elsewhere). */
  lost: number;
  /** The drain stopped because its time ran out (ready work may be left), not because nothing was ready. */
  cutOff: boolean;
  /** A wake-up started it and none of its claims answered it (it made none): its hand-off must. */
  unanswered?: boolean;
  /** Wake-ups it took from the wake queue itself while its tasks ran (`listen`). */
  wakeUpsTaken: number;
}

export interface DrainOptions {
  /** A queue, or a partitioned queue (its partitions as one: docs/partitions.md). */
  queue: Queue | WorkQueue;
  /** The partition the wake-up or drain invocation named (a partitioned queue's): the first claim's. */
  partition?: number;
  tasks: TaskDeclaration;
  /** The most tasks one claim asks for (it asks for no more than the free slots). */
  claimBatch: number;
  /** Time left in the invocation, ms (context.getRemainingTimeInMillis). */
  remainingMs: () => number;
  /** Time kept free at the end of the invocation for the last settle. */
  safetyMarginMs: number;
  /**
   * Finished tasks without a group are settled together once the first of them has waited this long
   * (a task of a group, or of an ordered queue, at once: the next of its group waits for it).
   */
  flushAfterMs?: number;
  /** An empty claim does not end the drain when work falls due within this long (and the time left allows). */
  lingerMs?: number;
  /** While it has free slots and found work within `lingerMs`, the drain claims again at least this often (at most `lingerMs`). */
  pollMs?: number;
  now?: () => number;
  /** Waits `ms` (tests pass a fake clock's). */
  sleep?: (ms: number) => Promise<void>;
  /** Told the earliest deadline of the leases the drain holds, each time it moves (undefined: it holds none). */
  onLeases?: (earliestDeadlineMs: number | undefined) => void;
  /**
   * Sends a wake-up a claim asked for: another worker, for tasks of this worker's types it runs as
   * many of as it may (`forTypes`: those types, when that is why they were left); on a partitioned
   * queue, for `partition`.
   */
  wake?: (atMs: number, forTypes?: string[], partition?: number) => Promise<void>;
  /** The drain stops looking for new work while tasks still run: hand the queue back to wake-ups. */
  handOff?: (cutOff: boolean, woken: boolean) => Promise<void>;
  /** A wake-up started this invocation: its first claim answers it (docs/wake-ups.md). */
  woken?: boolean;
  /**
   * Takes a wake-up from the wake queue (functions/wake-listen.ts): once the drain has handed the
   * queue back to wake-ups, a free slot listens for them rather than leave them for an invocation
   * the event source may not start while this one runs. Each one taken claims (answering it).
   */
  listen?: WakeListen;
  /** Before the claim a taken wake-up asks for: return expired leases (it may be a crash watch come back). */
  /** A run ended (not lost): its type, how long it waited READY, how long it ran, its outcome (metrics). */
  onRun?: (run: { type: string; waitedMs: number; runMs: number; outcome: SettleItem["outcome"] }) => void;
  reclaim?: () => Promise<void>;
}

/** Settle finished tasks at least this often: a crash then re-runs only the rest. */
export const DEFAULT_FLUSH_AFTER_MS = 1_000;

/** How long a draining worker waits for work falling due soon, by default. */
export const DEFAULT_LINGER_MS = 5_000;

/** How often a worker with free slots looks for new work, by default, while it lingers. */
export const DEFAULT_POLL_MS = 1_000;

/** How long a drain that got only wake-ups for types it has no room for waits before it listens again. */
const LISTEN_PAUSE_MS = 1_000;

/** A started task's lease is confirmed (its first heartbeat) this soon after its start, unless settled first. */
const CONFIRM_AFTER_MS = 1_000;

/** One task this drain holds the lease of: running, or finished and not settled yet. */
interface Held {
  task: ClaimedTask;
  type: DeclaredTaskType;
  controller: AbortController;
  startedAt: number;
  /** When the lease was last extended (or claimed); 0 before its first heartbeat confirmed it. */
  extendedAt: number;
  running: boolean;
  /** Progress its handler reported (JSON text) that no heartbeat has carried yet. */
  progress?: string;
}

/**
 * Claims and runs tasks concurrently until a claim comes back empty (and nothing falls due within
 * `lingerMs`) or no type's timeout fits the time left. A claim asks only for free slots (the
 * declaration's `concurrency`, each type's own) and for types whose timeout fits the time left, and
 * every task it returns starts at once: no task waits LEASED behind another. A slot freed claims
 * again. A heartbeat extends every lease held (every third of its type's heartbeatMs, the first a
 * second after its start), which also confirms the lease (a reclaim then charges its attempt).
 */
export async function drain(options: DrainOptions): Promise<DrainCounts> {
  return new Drain({ ...options, queue: workQueueOf(options.queue) }).run();
}

class Drain {
  readonly counts: DrainCounts = {
    claimed: 0,
    started: 0,
    done: 0,
    retried: 0,
    failed: 0,
    released: 0,
    lost: 0,
    cutOff: false,
    wakeUpsTaken: 0,
  };
  private readonly held = new Map<string, Held>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly perType = new Map<string, number>();
  private finished: SettleItem[] = [];
  private firstFinishedAt = 0;
  private urgent = false;
  private chain: Promise<unknown> = Promise.resolve();
  private changed!: Promise<void>;
  private notify!: () => void;
  private beat: NodeJS.Timeout | undefined;
  private soloRunning = false;
  private soloWaiting = false;
  private probedFull = false;
  private handedOff = false;
  private answered = false;
  /** The long poll for a wake-up, while one is out; the wake-ups it took, for the next claim. */
  private listening: { controller: AbortController; taken: Promise<void>; pause?: boolean } | undefined;
  private readonly taken: TakenWakeUp[] = [];
  private listenOff = false;
  /**
   * Only wake-ups for types this drain had no room for came: given back, and no listening until a
   * run ends or LISTEN_PAUSE_MS pass (it would take the same ones again at once).
   */
  private listenPausedUntil = 0;
  private lastWorkAt: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly lingerMs: number;
  private readonly pollMs: number;
  private readonly flushAfterMs: number;

  constructor(private readonly options: DrainOptions & { queue: WorkQueue }) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
    this.lingerMs = options.lingerMs ?? DEFAULT_LINGER_MS;
    // At least one look within the linger: past it the drain hands off, and the producers' wake-ups
    // (a free slot takes them) bring new work rather than a poll.
    this.pollMs = Math.max(20, Math.min(options.pollMs ?? DEFAULT_POLL_MS, this.lingerMs));
    this.flushAfterMs = options.flushAfterMs ?? DEFAULT_FLUSH_AFTER_MS;
    this.lastWorkAt = this.now();
    this.reset();
  }

  async run(): Promise<DrainCounts> {
    const types = Object.entries(this.options.tasks.types);
    if (types.length === 0) return this.counts;
    // The invocation's end may come sooner than a run's own budget said (a local stack shutting
    // down reports no time left): every run is told to stop then, so the drain ends within its margin.
    const budget = setInterval(() => {
      if (this.options.remainingMs() - this.options.safetyMarginMs > 0) return;
      for (const held of this.held.values()) {
        if (held.running) held.controller.abort(new Stop("budget", "the invocation is about to time out"));
      }
    }, 250);
    try {
      for (;;) {
        const leftMs = this.options.remainingMs() - this.options.safetyMarginMs;
        // Types whose run still fits: a fresh invocation takes the others.
        const fitting = types.filter(([, type]) => type.timeoutMs <= leftMs).map(([name]) => name);
        if (fitting.length < types.length) this.counts.cutOff = true;
        if (fitting.length === 0) break;
        // Settled before the next claim when it matters: a task of a group (its next one waits for it),
        // a retry due now (the claim may take it again), nothing else running, or the oldest waited long.
        const aged = this.finished.length > 0 && this.now() - this.firstFinishedAt >= this.flushAfterMs;
        if (this.urgent || aged || (this.finished.length > 0 && this.running.size === 0)) {
          await this.serial(() => this.flush()).catch(() => {});
        }
        const outcome = await this.claim(fitting, leftMs);
        if (outcome.filled) continue;
        if (this.running.size === 0 && this.finished.length > 0) {
          // A task finished while the claim was out: its settle may let its group's next task out,
          // so it is settled and the drain claims again rather than stop with that task left READY.
          const unsettled = this.finished.length;
          await this.serial(() => this.flush()).catch(() => {});
          if (this.finished.length < unsettled) continue;
        }
        if (this.running.size === 0) {
          // Nothing runs: wait for work falling due in a moment (a retry's backoff, a short delay)
          // rather than stop and be woken again, while the time left allows.
          const waitMs = outcome.nextDueMs === undefined ? Number.POSITIVE_INFINITY : outcome.nextDueMs - this.now();
          if (waitMs > this.lingerMs || leftMs - Math.max(0, waitMs) < Math.min(...this.timeouts(fitting))) break;
          await this.sleep(Math.max(waitMs, 20));
          continue;
        }
        await this.waitWhileRunning(outcome.nextDueMs);
      }
    } finally {
      // Handlers stop at their timeout or the invocation's end at the latest; then the last settle.
      this.listening?.controller.abort();
      await Promise.all(this.running.values());
      // A wake-up taken and not answered goes back to the queue for another worker.
      await Promise.all(this.taken.splice(0).map((wakeUp) => wakeUp.giveBack()));
      clearInterval(budget);
      clearTimeout(this.beat);
      await this.serial(() => this.flush()).catch(() => {});
    }
    if (this.options.woken && !this.answered) this.counts.unanswered = true;
    return this.counts;
  }

  private timeouts(names: string[]): number[] {
    return names.map((name) => this.options.tasks.types[name].timeoutMs);
  }

  /**
   * One claim for the free slots, each task it returns started at once. `filled`: it took all it
   * asked for (more may be ready). No claim while a solo task runs, or while one waits and others run.
   */
  private async claim(fitting: string[], leftMs: number): Promise<{ filled: boolean; nextDueMs: number | undefined }> {
    const { tasks, queue, claimBatch } = this.options;
    const free = tasks.concurrency - this.running.size;
    if (free <= 0 || this.soloRunning || (this.soloWaiting && this.running.size > 0)) {
      return { filled: false, nextDueMs: undefined };
    }
    // Types with a limit of their own get the room they have left; every type at its limit: one
    // claim that leases nothing still tells whether their tasks wait (and wakes another worker for
    // them), once until a slot of theirs frees.
    const room: Record<string, number> = {};
    let eligible = 0;
    for (const name of fitting) {
      const limit = this.options.tasks.types[name].concurrency;
      const left = limit === undefined ? free : Math.min(limit - (this.perType.get(name) ?? 0), free);
      if (limit !== undefined) room[name] = Math.max(0, left);
      if (left > 0) eligible++;
    }
    if (eligible === 0 && this.probedFull) return { filled: false, nextDueMs: undefined };
    const count = eligible === 0 ? 1 : Math.min(free, claimBatch);
    // A wake-up this drain took while its tasks ran: the claim is made for it, after a reclaim (it
    // may be the crash watch of a worker that died, come back).
    const taken = this.taken.shift();
    if (taken) await this.serial(() => this.options.reclaim?.() ?? Promise.resolve()).catch(() => {});
    let outcome: Awaited<ReturnType<WorkQueue["claimOrNextDue"]>>;
    // The partition a wake-up named: the one it was sent for (the first claim answers the one that
    // started the invocation, as a drain invocation's first claim goes where it named).
    const partition = taken ? taken.partition : this.answered ? undefined : this.options.partition;
    try {
      outcome = await this.serial(() =>
        queue.claimOrNextDue({
          partition,
          // A partitioned queue hands off each partition this drain's claims leave (docs/partitions.md).
          handsOff: true,
          count,
          now: this.now(),
          maxLeaseMs: Math.min(leftMs, 86_400_000),
          types: fitting,
          room,
          busy: this.running.size > 0,
          lingers: !this.handedOff,
          woken: taken !== undefined || (this.options.woken === true && !this.answered),
        }),
      );
    } catch (error) {
      if (taken) this.taken.unshift(taken);
      throw error;
    }
    await taken?.done();
    this.answered = true;
    this.probedFull = eligible === 0;
    this.soloWaiting = outcome.soloWaiting;
    if (outcome.wakes.length > 0) {
      // For another worker: one with room for the types this one had none left for, when that is
      // why tasks were left (a claim that filled its free slots left work for any worker).
      const short = Object.keys(room).filter(
        (name) => room[name] - outcome.tasks.filter((task) => task.type === name).length <= 0,
      );
      const forTypes = outcome.tasks.length < count && short.length > 0 ? short : undefined;
      for (const wake of outcome.wakes) await this.options.wake?.(wake.atMs, forTypes, wake.partition).catch(() => {});
    }
    this.counts.claimed += outcome.tasks.length;
    for (const task of outcome.tasks) this.start(task);
    if (outcome.tasks.length > 0) {
      this.lastWorkAt = this.now();
      this.handedOff = false;
      this.leasesChanged();
    }
    return { filled: eligible > 0 && outcome.tasks.length === count, nextDueMs: outcome.nextDueMs };
  }

  /**
   * Tasks run, nothing more was ready: wait for a slot to free, for work due within the linger, or
   * (while work came within the linger) for the next poll. Past the linger, the drain stops looking
   * for new work (it hands the queue back to wake-ups) and claims again as its tasks finish.
   */
  private async waitWhileRunning(nextDueMs: number | undefined): Promise<void> {
    const now = this.now();
    const polling = now - this.lastWorkAt <= this.lingerMs;
    if (!polling && !this.handedOff) {
      this.handedOff = true;
      await this.options.handOff?.(this.counts.cutOff, false).catch(() => {});
    }
    const waits: number[] = [];
    if (polling) waits.push(this.pollMs);
    if (nextDueMs !== undefined && nextDueMs - now <= this.lingerMs) waits.push(Math.max(20, nextDueMs - now));
    if (this.finished.length > 0) waits.push(Math.max(0, this.firstFinishedAt + this.flushAfterMs - now));
    const waitMs = waits.length > 0 ? Math.min(...waits) : undefined;
    const changed = this.changed;
    if (!polling) this.listen();
    if (waitMs === undefined) await changed;
    else await Promise.race([changed, this.sleep(waitMs)]);
  }

  /**
   * A slot free for some type, the queue handed back to wake-ups: listen for one on the wake queue
   * (one long poll at a time). A wake-up taken wakes the drain to claim; taken when the slots have
   * filled meanwhile, it goes back at once. A listen that came back empty within a second (SQS
   * unreachable, something not a wake-up in the queue) is not tried again in this drain.
   */
  private listen(): void {
    const { listen } = this.options;
    // A pause a run ending cut short (listenPausedUntil 0) is over.
    if (this.listening?.pause && this.now() >= this.listenPausedUntil) this.listening = undefined;
    if (!listen || this.listening || this.listenOff || !this.hasRoom()) return;
    if (this.now() < this.listenPausedUntil) {
      // Listen again once the pause is over (a run ending ends it sooner, and wakes the drain).
      const pause = {
        controller: new AbortController(),
        pause: true,
        taken: this.sleep(this.listenPausedUntil - this.now()).then(() => {
          if (this.listening !== pause) return;
          this.listening = undefined;
          this.notify();
          this.reset();
        }),
      };
      this.listening = pause;
      return;
    }
    const controller = new AbortController();
    const since = this.now();
    const maxWaitMs = this.options.remainingMs() - this.options.safetyMarginMs;
    if (maxWaitMs < 1_000) return;
    const taken = listen(controller.signal, maxWaitMs).then(async (wakeUps) => {
      this.listening = undefined;
      if (wakeUps.length === 0) {
        if (this.now() - since < 1_000 && !controller.signal.aborted) this.listenOff = true;
        return;
      }
      // One it can claim for (a wake-up for any work, or for a type it has room for); the others
      // are another worker's: back at once.
      const usable = controller.signal.aborted
        ? -1
        : wakeUps.findIndex((wakeUp) => !wakeUp.forTypes || wakeUp.forTypes.some((name) => this.hasRoom(name)));
      const [used] = usable < 0 ? [] : wakeUps.splice(usable, 1);
      await Promise.all(wakeUps.map((wakeUp) => wakeUp.giveBack()));
      if (!used) {
        this.listenPausedUntil = this.now() + LISTEN_PAUSE_MS;
        this.notify();
        this.reset();
        return;
      }
      this.counts.wakeUpsTaken++;
      this.taken.push(used);
      this.notify();
      this.reset();
    });
    this.listening = { controller, taken };
  }

  /** A claim now could lease something (of type `only`): a slot free, no solo task in the way, a type with room. */
  private hasRoom(only?: string): boolean {
    const { tasks } = this.options;
    if (tasks.concurrency - this.running.size <= 0 || this.soloRunning) return false;
    if (this.soloWaiting && this.running.size > 0) return false;
    return Object.entries(tasks.types).some(
      ([name, type]) =>
        (only === undefined || name === only) &&
        (type.concurrency === undefined || (this.perType.get(name) ?? 0) < type.concurrency),
    );
  }

  /** Starts a claimed task now: its handler runs, and its slot frees when it is settled or lost. */
  private start(task: ClaimedTask): void {
    const type = this.options.tasks.types[task.type];
    const controller = new AbortController();
    const now = this.now();
    const held: Held = { task, type, controller, startedAt: now, extendedAt: 0, running: true };
    this.held.set(task.id, held);
    if (type === undefined) {
      // The claim leaves alone the tasks of types the queue declares that this worker lacks: this
      // one's type is declared by no deployment of the queue, so no worker will ever run it.
      const known = Object.keys(this.options.tasks.types).join(", ");
      held.running = false;
      this.finish(
        {
          id: task.id,
          token: task.token,
          outcome: "fail",
          error: `no handler for task type "${task.type}", and the queue declares no such type; this worker's types: ${known}`,
        },
        true,
      );
      return;
    }
    // Never start on a lease that may be lost: less than a third of it left (a claim's reply that
    // came late) leaves no time for the first heartbeat to land.
    if (task.leaseDeadlineMs - now <= type.heartbeatMs / 3) {
      this.held.delete(task.id);
      this.serial(() => this.options.queue.release([task], { now: this.now() }))
        .then((results) => {
          this.counts.released += results.filter((result) => result.status === "ok").length;
        })
        .catch(() => {});
      return;
    }
    if (task.solo) this.soloRunning = true;
    this.perType.set(task.type, (this.perType.get(task.type) ?? 0) + 1);
    this.counts.started++;
    const invocationEnd = now + this.options.remainingMs() - this.options.safetyMarginMs;
    const timeoutAt = type.stopsAtTimeout ? now + type.timeoutMs : Number.POSITIVE_INFINITY;
    const run = runTask(task, type, controller, {
      queue: this.options.queue.name,
      now: this.now,
      stopAtMs: Math.min(timeoutAt, invocationEnd),
      stopReason: timeoutAt < invocationEnd ? "timeout" : "budget",
      maxResultBytes: this.options.queue.settings.maxResultBytes,
      onProgress: (text) => {
        held.progress = text;
      },
    }).then((outcome) => this.ended(held, outcome));
    this.running.set(task.id, run);
    this.scheduleBeat();
  }

  /** A run ended: its slot is free; its outcome waits for the next settle (at once for a task of a group). */
  private ended(held: Held, outcome: RunOutcome): void {
    const { task } = held;
    held.running = false;
    this.running.delete(task.id);
    this.perType.set(task.type, (this.perType.get(task.type) ?? 1) - 1);
    this.probedFull = false;
    if (task.solo) this.soloRunning = false;
    this.listenPausedUntil = 0;
    if (outcome === "lost") this.held.delete(task.id);
    else {
      this.options.onRun?.({
        type: task.type,
        waitedMs: task.waitedMs,
        runMs: this.now() - held.startedAt,
        outcome: outcome.outcome,
      });
      this.finish(outcome, task.group !== undefined || this.options.tasks.ordered);
    }
    this.notify();
    this.reset();
  }

  private finish(item: SettleItem, urgent: boolean): void {
    if (this.finished.length === 0) this.firstFinishedAt = this.now();
    this.finished.push(item);
    if (urgent) this.urgent = true;
    this.scheduleBeat();
  }

  private reset(): void {
    this.changed = new Promise<void>((resolve) => {
      this.notify = resolve;
    });
  }

  /** Every Redis call of the drain runs in one chain: a settle, a heartbeat and a claim never overlap. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => {});
    return next;
  }

  /** Settles the finished tasks in one call; kept for the next when it fails (their leases are extended meanwhile). */
  private async flush(): Promise<void> {
    const items = this.finished;
    this.finished = [];
    this.urgent = false;
    if (items.length === 0) return;
    let results: Awaited<ReturnType<WorkQueue["settle"]>>;
    try {
      results = await this.options.queue.settle(items, { now: this.now() });
    } catch (error) {
      if (this.finished.length === 0) this.firstFinishedAt = this.now();
      this.finished.unshift(...items);
      throw error;
    }
    for (const result of results) {
      this.held.delete(result.id);
      if (result.status === "ok" || result.status === "already_done") {
        if (result.state === "done") this.counts.done++;
        else if (result.state === "failed") this.counts.failed++;
        else this.counts.retried++;
      } else this.counts.lost++;
    }
    this.leasesChanged();
  }

  /** The next heartbeat: a lease's third of its heartbeat since its last extension, a confirmation, a flush. */
  private scheduleBeat(): void {
    clearTimeout(this.beat);
    let at = Number.POSITIVE_INFINITY;
    for (const held of this.held.values()) {
      if (held.type === undefined) continue;
      // A third of the lease gone (from its deadline: a claim's reply may come late), and a lease
      // not confirmed yet a second after its start.
      const due = held.task.leaseDeadlineMs - (2 * held.type.heartbeatMs) / 3;
      at = Math.min(at, held.extendedAt === 0 ? Math.min(held.startedAt + CONFIRM_AFTER_MS, due) : due);
    }
    if (this.finished.length > 0) at = Math.min(at, this.firstFinishedAt + this.flushAfterMs);
    if (at === Number.POSITIVE_INFINITY) return;
    this.beat = setTimeout(
      () => {
        this.serial(() => this.heartbeat())
          .catch(() => {})
          .finally(() => this.scheduleBeat());
      },
      Math.max(0, at - this.now()),
    );
  }

  /** Settles what finished, then extends every lease still held; a lease lost stops its handler. */
  private async heartbeat(): Promise<void> {
    await this.flush().catch(() => {});
    const held = [...this.held.values()].filter((entry) => entry.type !== undefined);
    if (held.length === 0) return;
    const now = this.now();
    const sent = held.map((entry) => entry.progress);
    try {
      const results = await this.options.queue.extend(
        held.map(({ task, type, progress }) => ({
          id: task.id,
          token: task.token,
          leaseMs: type.heartbeatMs,
          ...(progress === undefined ? {} : { progress: JSON.parse(progress) as unknown }),
        })),
        { now },
      );
      for (const [index, result] of results.entries()) {
        const entry = held[index];
        if (result.status === "ok" && result.leaseDeadlineMs) {
          entry.task.leaseDeadlineMs = result.leaseDeadlineMs;
          entry.extendedAt = now;
          if (entry.progress === sent[index]) entry.progress = undefined; // sent; a newer one waits for the next beat
        } else this.lose(entry);
      }
    } catch {
      // Redis unreachable for now: stop a handler only once its lease is about to run out.
      for (const entry of held) {
        if (entry.task.leaseDeadlineMs - this.now() < this.options.safetyMarginMs) this.lose(entry);
      }
    }
    this.leasesChanged();
  }

  /** A lease this drain held is lost: its handler is told to stop, and nothing of it is settled. */
  private lose(entry: Held): void {
    if (!this.held.delete(entry.task.id)) return;
    this.counts.lost++;
    this.finished = this.finished.filter((item) => item.id !== entry.task.id);
    if (entry.running) entry.controller.abort(new Stop("lost", `lease of task ${entry.task.id} was lost`));
  }

  private leasesChanged(): void {
    let earliest: number | undefined;
    for (const { task } of this.held.values())
      earliest = Math.min(earliest ?? Number.POSITIVE_INFINITY, task.leaseDeadlineMs);
    this.options.onLeases?.(earliest);
  }
}
