// One logical queue over N partitions (docs/partitions.md): each partition is a whole leaseq queue
// under a hash tag of its own (shared/partitions.ts), on a store of its own or sharing one. A task
// goes to the partition its routing key hashes to, so everything per key stays exact in one
// partition; a claim takes from one partition, chosen by the heads of two.
import { LIMITS } from "./config.js";
import { InvalidInputError } from "./errors.js";
import { checkPartitions, partitionOf, partitionTag, routingKey } from "./partitions.js";
import { type ClaimOptions, Queue } from "./queue.js";
import { mergeWakeTo, type QueueOptions } from "./queue-context.js";
import type { QueueSettings } from "./settings.js";
import type { Store } from "./store.js";
import { sumStats } from "./sum-stats.js";
import type {
  ClaimedTask,
  ClaimOutcome,
  EnqueueResult,
  ExtendResult,
  ItemResult,
  QueueStats,
  ReclaimResult,
  SettleItem,
  SettleResult,
  TaskInput,
  TickResult,
  WakeTo,
} from "./types.js";
import { checkBatch } from "./validate.js";

function earliest(first: number | undefined, ...others: Array<number | undefined>): number | undefined {
  let found = first;
  for (const value of others) if (value !== undefined && (found === undefined || value < found)) found = value;
  return found;
}

export interface PartitionedQueueOptions extends Omit<QueueOptions, "partitionTag"> {
  /** How many partitions, 1..64: 1 is the queue as it always was (its keys under `{<name>}`). */
  partitions: number;
  /**
   * A shrink under way: the count before it. The partitions from `partitions` up to this one get no
   * new task, and claims, settles and stats still cover them until `dropDrained` finds them empty
   * and drops them (docs/partitions.md).
   */
  shrinkingFrom?: number;
}

/** What a claim of a partitioned queue takes besides a plain claim's options. */
export interface PartitionedClaimOptions extends ClaimOptions {
  /**
   * The partition to claim from first: the one a wake-up named. Default: the better head of two
   * partitions drawn at random.
   */
  partition?: number;
  /**
   * The caller hands the queue back to wake-ups when it stops (handOff: a Lambda worker,
   * docs/wake-ups.md): a partition its claims leave is handed off at once, as it would be were the
   * caller to stop, since the caller may not come back to it. Default false: a consumer that polls
   * without wake-ups spends no call on it.
   */
  handsOff?: boolean;
}

/** A wake-up a partitioned queue asks for: when, and the partition it is for (the message names it). */
export interface PartitionWake {
  atMs: number;
  partition: number;
}

/**
 * A partitioned queue's claimOrNextDue: a queue's outcome (`wakeAtMs` the earliest of `wakes`), and
 * every wake-up to send, each naming its partition.
 */
export interface PartitionedClaimOutcome extends ClaimOutcome {
  wakes: PartitionWake[];
}

/** A partition's figures and the queue's sums (`oldest` ages: the largest of any partition). */
export interface PartitionedStats {
  total: QueueStats;
  partitions: QueueStats[];
}

/** The most claims in a row a partitioned queue sends to one partition without reading two heads again. */
export const STICKY_CLAIMS = 64;

/** The ready-set score's priority part (docs/storage.md: priority band × 2^42 + arrival or turn). */
const BAND = 2 ** 42;

/** A token of partition k > 0 is `<k>/<token>`; partition 0's is the queue's own, unchanged. */
function tokenFor(partition: number, token: string): string {
  return partition === 0 ? token : `${partition}/${token}`;
}

/** Each partition's places in `partitions` (the partition of each item, in order). */
function indexesBy(partitions: readonly number[]): Map<number, number[]> {
  const byPartition = new Map<number, number[]>();
  partitions.forEach((partition, index) => {
    const indexes = byPartition.get(partition);
    if (indexes) indexes.push(index);
    else byPartition.set(partition, [index]);
  });
  return byPartition;
}

/**
 * Partition `k` of the queue `options` names, as a Queue of its own (partition 0 is the queue as it
 * always was): what a PartitionedQueue holds, and what an operator's tool addresses one partition by.
 */
export function partitionQueue(store: Store, options: Omit<QueueOptions, "partitionTag">, k: number): Queue {
  return new Queue(store, { ...options, partitionTag: partitionTag(options.name, k) });
}

export class PartitionedQueue {
  readonly name: string;
  /** The partitions, by number: each a whole queue under its own hash tag. */
  readonly partitions: readonly Queue[];
  /** The partitions new tasks go to: the first `routed` (the rest are draining in a shrink). */
  private readonly routed: number;
  /** The partition the last claim filled its batch from: the next one without a named partition goes there. */
  private filling: number | undefined;
  /** How many claims in a row went to `filling`. */
  private stuck = 0;
  /** The runner-up of the last choice between two heads, if it had READY tasks: tried once before reading again. */
  private spare: number | undefined;
  /** The partitions the last claim went to: handed back to wake-ups when a claim leaves them (or at handOff). */
  private lingering = new Set<number>();

  /**
   * `stores`: one store for every partition (a Redis Cluster, whose slots spread them over its
   * masters, or one server), or one per database (Upstash), partition k on `stores[k % length]`.
   */
  constructor(stores: Store | readonly Store[], options: PartitionedQueueOptions) {
    const { partitions: count, shrinkingFrom, ...queueOptions } = options ?? ({} as PartitionedQueueOptions);
    this.routed = checkPartitions("new PartitionedQueue", count);
    const n =
      shrinkingFrom === undefined ? this.routed : checkPartitions("new PartitionedQueue shrinkingFrom", shrinkingFrom);
    if (shrinkingFrom !== undefined && n <= this.routed) {
      throw new InvalidInputError(
        `new PartitionedQueue: shrinkingFrom (${n}) is the count before a shrink, so it must be more than partitions (${this.routed})`,
      );
    }
    const list = Array.isArray(stores) ? stores : [stores as Store];
    if (list.length === 0) throw new InvalidInputError("new PartitionedQueue: stores must name at least one store");
    this.partitions = Array.from({ length: n }, (_, k) => partitionQueue(list[k % list.length], queueOptions, k));
    this.name = this.partitions[0].name;
  }

  /** The queue's settings (every partition's: configure writes them into each). */
  get settings(): Queue["settings"] {
    return this.partitions[0].settings;
  }

  /** The partition a task belongs to: by its group, else its flow key, else its id. */
  partitionFor(task: Pick<TaskInput, "id" | "group" | "dedupe" | "debounce" | "throttle" | "singleton">): number {
    const flow = task.dedupe
      ? `d:${task.dedupe.key}`
      : task.debounce
        ? `b:${task.debounce.key}`
        : task.throttle
          ? `t:${task.throttle.key}`
          : task.singleton
            ? `s:${task.singleton.key}`
            : undefined;
    return partitionOf(routingKey({ id: task.id, group: task.group, flowKey: flow }), this.routed);
  }

  /** Writes the settings into every partition's config. */
  async configure(settings?: QueueSettings, options: { now?: number } = {}): Promise<boolean> {
    const changed = await Promise.all(this.partitions.map((queue) => queue.configure(settings, options)));
    return changed.some(Boolean);
  }

  /**
   * Enqueues each task into its partition (one call per partition with tasks, in parallel); the
   * results come back in the order of `tasks`. Every task is checked first, as enqueue checks it,
   * so a malformed one is refused (InvalidInputError naming it by its place in `tasks`) before any
   * partition is sent anything. Each partition's call is all-or-nothing; should one fail (its store
   * unreachable), the others' tasks are in, the error says which partition failed, and repeating
   * the call is safe: the tasks already in are answered `duplicate`.
   */
  async enqueue(tasks: TaskInput[], options: { now: number }): Promise<EnqueueResult[]> {
    return (await this.enqueueAndWake(tasks, options)).results;
  }

  /**
   * enqueue, and the wake-ups its partitions asked for (a queue's enqueueAndWake, per partition):
   * `wakes` for this deployment's wake queue, `wakeTo` for other deployments' (a shared queue),
   * each naming its partition. `traceparent` as a queue's enqueueAndWake takes it.
   */
  async enqueueAndWake(
    tasks: TaskInput[],
    options: { now: number; traceparent?: string },
  ): Promise<{ results: EnqueueResult[]; wakes: PartitionWake[]; wakeTo: WakeTo[] }> {
    checkBatch("enqueue", tasks, LIMITS.batchMax);
    const problem = this.checkTasks(tasks, options).find((message) => message !== undefined);
    if (problem !== undefined) throw new InvalidInputError(`enqueue: ${problem}`);
    const wakes: PartitionWake[] = [];
    const wakeTo: WakeTo[] = [];
    const results = await this.fanOut(
      tasks,
      indexesBy(tasks.map((task) => this.partitionFor(task))),
      async (queue, own, partition) => {
        const answer = await queue.enqueueAndWake(own, options);
        if (answer.wakeAtMs !== undefined) wakes.push({ atMs: answer.wakeAtMs, partition });
        mergeWakeTo(
          wakeTo,
          answer.wakeTo.map((wake) => ({ ...wake, partition })),
        );
        return answer.results;
      },
      (others) => `the tasks of ${others} other partition(s) were enqueued; repeating the call is safe`,
    );
    return { results, wakes, wakeTo };
  }

  /** Checks tasks as enqueue would, sending nothing (a queue's checkTasks: every partition checks alike). */
  checkTasks(tasks: readonly TaskInput[], options: { now: number }): Array<string | undefined> {
    return this.partitions[0].checkTasks(tasks, options);
  }

  /**
   * Runs `call` on each partition's share of `items` (their indexes by partition), all at once; the
   * answers come back in the order of `items`. When a partition's call fails, its error is thrown
   * naming the partition and, by `done`, what the others' calls did (they are not undone).
   */
  private async fanOut<T, R>(
    items: readonly T[],
    byPartition: ReadonlyMap<number, readonly number[]>,
    call: (queue: Queue, own: T[], partition: number) => Promise<R[]>,
    done: (others: number) => string,
  ): Promise<R[]> {
    const results: R[] = new Array(items.length);
    const calls = [...byPartition];
    const settled = await Promise.allSettled(
      calls.map(async ([partition, indexes]) => {
        const answered = await call(
          this.partitions[partition],
          indexes.map((index) => items[index]),
          partition,
        );
        answered.forEach((result, i) => {
          results[indexes[i]] = result;
        });
      }),
    );
    const failed = settled.findIndex((outcome) => outcome.status === "rejected");
    if (failed >= 0) {
      const error = (settled[failed] as PromiseRejectedResult).reason;
      const others = settled.filter((outcome) => outcome.status === "fulfilled").length;
      if (error instanceof Error) {
        error.message = `partition ${calls[failed][0]} of ${this.partitions.length}: ${error.message} (${done(others)})`;
      }
      throw error;
    }
    return results;
  }

  /**
   * The priority band of the head of each of `partitions`' READY tasks (Infinity when none): the
   * queue's own read-only `list` of one task, whose score's priority part (score / 2^42) orders
   * heads across partitions.
   */
  private async heads(partitions: readonly number[]): Promise<Array<{ partition: number; band: number }>> {
    return Promise.all(
      partitions.map(async (partition) => {
        const [head] = await this.partitions[partition].admin.list("ready", { limit: 1 });
        return { partition, band: head ? Math.floor(head.score / BAND) : Number.POSITIVE_INFINITY };
      }),
    );
  }

  /**
   * The partition to claim from without a wake-up naming one: of two drawn at random, the one whose
   * head has the higher priority, the first drawn when they tie (power of two choices). Reads two
   * heads, never every partition's.
   */
  async choosePartition(random: () => number = Math.random): Promise<number> {
    return (await this.drawTwo(random)).better;
  }

  /** choosePartition's choice, and the other partition drawn when it has READY tasks (its runner-up). */
  private async drawTwo(
    random: () => number,
    not: number,
  ): Promise<{ better: number | undefined; other: number | undefined }>;
  private async drawTwo(random: () => number): Promise<{ better: number; other: number | undefined }>;
  private async drawTwo(
    random: () => number,
    not?: number,
  ): Promise<{ better: number | undefined; other: number | undefined }> {
    // With `not` (a second partition for a claim): drawn from the others, and only one with READY tasks.
    const choices = [...this.partitions.keys()].filter((partition) => partition !== not);
    const n = choices.length;
    if (n === 1) return not === undefined ? { better: choices[0], other: undefined } : this.withWork(choices);
    const first = Math.floor(random() * n);
    const second = (first + 1 + Math.floor(random() * (n - 1))) % n;
    const [a, b] = await this.heads([choices[first], choices[second]]);
    const [better, other] = b.band < a.band ? [b, a] : [a, b];
    const otherWithWork = other.band === Number.POSITIVE_INFINITY ? undefined : other.partition;
    if (not !== undefined && better.band === Number.POSITIVE_INFINITY) return { better: undefined, other: undefined };
    return { better: better.partition, other: otherWithWork };
  }

  /** The one partition of `choices` when its READY head exists. */
  private async withWork(choices: number[]): Promise<{ better: number | undefined; other: undefined }> {
    const [head] = await this.heads(choices);
    return { better: head.band === Number.POSITIVE_INFINITY ? undefined : head.partition, other: undefined };
  }

  /**
   * Leases up to `count` tasks (see claimOrNextDue): their tokens carry their partition, so settle,
   * extend and release go back to it.
   */
  async claim(options: PartitionedClaimOptions): Promise<ClaimedTask[]> {
    return (await this.claimOrNextDue(options)).tasks;
  }

  /**
   * Leases up to `count` tasks, as a queue's claimOrNextDue does, from at most two partitions. The
   * first: `options.partition` (a wake-up's, which `woken` answers); else the one this queue's last
   * claim filled its batch from, while it keeps filling them, for at most STICKY_CLAIMS claims in a
   * row (no read to choose); after a short claim, the runner-up of the last choice once, if it had
   * READY tasks; else the better of two (choosePartition), so a higher-priority head elsewhere is
   * drawn within about STICKY_CLAIMS claims. When the first has no task for it, `count` is asked
   * of a second chosen the same way (never the first again, and only one with READY tasks): a
   * worker drains the partition its wake-up named, then others with work. (A short claim is not
   * topped up from a second: two smaller claims cost more commands than the next claim's one.) `wakes`: the wake-ups to send, each naming its
   * partition: what a claim asked for (another worker, for types this one had no room for), and,
   * with `handsOff`, the hand-off of each partition this queue's claims went to and no longer do
   * (docs/wake-ups.md: leaving a partition hands it back to wake-ups, as a worker that stops does).
   */
  async claimOrNextDue(options: PartitionedClaimOptions): Promise<PartitionedClaimOutcome> {
    const { partition: named, handsOff, ...claimOptions } = options;
    const first = await this.nextPartition(named === undefined ? undefined : this.checkPartition("claim", named));
    const wakes: PartitionWake[] = [];
    const claimed = new Set<number>([first]);
    const outcome = await this.claimFrom(first, claimOptions, wakes);
    // Only a claim that could lease something goes on to a second partition (one with room for
    // nothing asked only whether tasks wait).
    const room = Object.values(claimOptions.room ?? {});
    const roomLeft = room.length === 0 || room.some((n) => n > 0);
    if (outcome.tasks.length === 0 && roomLeft && this.partitions.length > 1 && !outcome.soloWaiting) {
      const second = await this.nextPartition(undefined, first);
      if (second !== undefined) {
        claimed.add(second);
        // The wake-up was answered by the first claim.
        const more = await this.claimFrom(second, { ...claimOptions, woken: false }, wakes);
        outcome.tasks.push(...more.tasks);
        outcome.soloWaiting ||= more.soloWaiting;
        outcome.nextDueMs = earliest(outcome.nextDueMs, more.nextDueMs);
      }
    }
    // Partitions claimed from before and not now: a claim there may have left an `active` mark
    // saying a worker looks again soon (one that lingers, or leased some of what it asked for),
    // which this one may not, so each is handed back to wake-ups (its hand-off arranges the wake-up
    // the work left there needs).
    const left = [...this.lingering].filter((partition) => !claimed.has(partition));
    this.lingering = claimed;
    if (handsOff) wakes.push(...(await this.handOffEach(left, { now: claimOptions.now })));
    return { ...outcome, wakeAtMs: earliest(undefined, ...wakes.map((wake) => wake.atMs)), wakes };
  }

  /** One partition's claim, its tokens made the partitioned queue's; the wake-up it asks for added to `wakes`. */
  private async claimFrom(
    partition: number,
    options: ClaimOptions,
    wakes: PartitionWake[],
  ): Promise<PartitionedClaimOutcome> {
    const outcome = await this.partitions[partition].claimOrNextDue(options);
    const full = outcome.tasks.length >= options.count;
    this.stuck = full && partition === this.filling ? this.stuck + 1 : 1;
    this.filling = full ? partition : undefined;
    if (outcome.wakeAtMs !== undefined) wakes.push({ atMs: outcome.wakeAtMs, partition });
    return {
      ...outcome,
      tasks: outcome.tasks.map((task) => ({ ...task, token: tokenFor(partition, task.token) })),
      wakes: [],
    };
  }

  /**
   * The partition the next claim goes to (see claimOrNextDue): `named`, else the filling one, else
   * the spare, else the better of two drawn. With `not`: a second partition for the same claim, or
   * undefined when the draw finds no other with READY tasks.
   */
  private async nextPartition(named: undefined, not: number): Promise<number | undefined>;
  private async nextPartition(named: number | undefined): Promise<number>;
  private async nextPartition(named: number | undefined, not?: number): Promise<number | undefined> {
    let partition: number | undefined;
    if (named !== undefined) partition = named;
    else if (this.filling !== undefined && this.filling !== not && this.stuck < STICKY_CLAIMS) partition = this.filling;
    else if (this.spare !== undefined && this.spare !== not && (not !== undefined || this.filling === undefined)) {
      partition = this.spare;
    } else {
      // The other partition drawn, when it has READY tasks: where the next claim goes should this
      // one come back short, without reading heads again.
      const drawn = not === undefined ? await this.drawTwo(Math.random) : await this.drawTwo(Math.random, not);
      partition = drawn.better;
      this.spare = drawn.other;
    }
    if (partition === this.spare) this.spare = undefined;
    return partition;
  }

  /**
   * Hands the partitions this queue's claims lingered on back to wake-ups (a worker stopping, as a
   * queue's handOff), and with `woken` the one `partition` names (0 by default: a wake-up naming
   * none), whose wake-up started the worker and no claim answered. Resolves to the wake-ups to send.
   */
  async handOff(options: {
    now: number;
    horizonMs?: number;
    cutOff?: boolean;
    woken?: boolean;
    partition?: number;
  }): Promise<PartitionWake[]> {
    const { partition: named, ...handOffOptions } = options;
    const woken = options.woken ? this.checkPartition("handOff", named ?? 0) : undefined;
    const partitions = [...this.lingering];
    this.lingering = new Set();
    if (woken !== undefined && !partitions.includes(woken)) partitions.push(woken);
    return this.handOffEach(partitions, handOffOptions, woken);
  }

  private async handOffEach(
    partitions: readonly number[],
    options: { now: number; horizonMs?: number; cutOff?: boolean },
    woken?: number,
  ): Promise<PartitionWake[]> {
    const wakes = await Promise.all(
      partitions.map(async (partition) => {
        const atMs = await this.partitions[partition].handOff({ ...options, woken: partition === woken });
        return atMs === undefined ? [] : [{ atMs, partition }];
      }),
    );
    return wakes.flat();
  }

  private checkPartition(where: string, partition: unknown): number {
    if (
      typeof partition !== "number" ||
      !Number.isInteger(partition) ||
      partition < 0 ||
      partition >= this.partitions.length
    ) {
      throw new InvalidInputError(
        `${where}: partition must be an integer from 0 to ${this.partitions.length - 1}, got ${JSON.stringify(partition)}`,
      );
    }
    return partition;
  }

  /**
   * Runs `call` on each partition's items, by the partition their tokens name, each item with its
   * partition's token; the answers come back in the order of `items`. `check` sees every item
   * first (a Queue's settleArgs, extendArgs or releaseArgs), so a malformed item, or a token of no
   * partition of this queue, is refused by its place in `items` before any partition is sent its part.
   */
  private async perPartition<T extends { id: string; token: string }, R>(
    where: string,
    items: readonly T[],
    check: (queue: Queue, items: T[]) => unknown,
    call: (queue: Queue, items: T[]) => Promise<R[]>,
  ): Promise<R[]> {
    checkBatch(where, items, LIMITS.batchMax);
    const own: T[] = [];
    const partitions: number[] = [];
    items.forEach((item, at) => {
      // A token that is not a string stays as it is, for the items' check to refuse by its type.
      const token = typeof item?.token === "string" ? item.token : "";
      const slash = token.indexOf("/");
      const partition = slash < 0 ? 0 : Number(token.slice(0, slash));
      if (!Number.isInteger(partition) || partition < 0 || partition >= this.partitions.length) {
        throw new InvalidInputError(
          `${where}: item ${at + 1} (id ${JSON.stringify(String(item?.id).slice(0, 130))}) has a token of no partition of this queue (${this.partitions.length} partitions): ${JSON.stringify(token.slice(0, 80))}`,
        );
      }
      own.push(slash < 0 ? item : { ...item, token: token.slice(slash + 1) });
      partitions.push(partition);
    });
    check(this.partitions[0], own);
    return this.fanOut(
      own,
      indexesBy(partitions),
      call,
      (others) => `the items of ${others} other partition(s) were carried out`,
    );
  }

  async settle(items: SettleItem[], options: { now: number }): Promise<SettleResult[]> {
    return this.perPartition(
      "settle",
      items,
      (queue, all) => queue.settleArgs(all),
      (queue, own) => queue.settle(own, options),
    );
  }

  async ack(tasks: Array<{ id: string; token: string }>, options: { now: number }): Promise<SettleResult[]> {
    return this.perPartition(
      "ack",
      tasks,
      (queue, all) => queue.settleArgs(all.map(({ id, token }) => ({ id, token, outcome: "ack" as const }))),
      (queue, own) => queue.ack(own, options),
    );
  }

  async extend(items: Parameters<Queue["extend"]>[0], options: { now: number }): Promise<ExtendResult[]> {
    return this.perPartition(
      "extend",
      items,
      (queue, all) => queue.extendArgs(all),
      (queue, own) => queue.extend(own, options),
    );
  }

  async release(items: Array<{ id: string; token: string }>, options: { now: number }): Promise<ItemResult[]> {
    return this.perPartition(
      "release",
      items,
      (queue, all) => queue.releaseArgs(all),
      (queue, own) => queue.release(own, options),
    );
  }

  /** The reclaimer's work on every partition: expired leases back, each partition to its end. */
  async reclaim(options: { now: number; limit?: number }): Promise<ReclaimResult> {
    const all = await Promise.all(this.partitions.map((queue) => queue.reclaim(options)));
    return {
      reclaimed: all.flatMap((result) => result.reclaimed),
      failed: all.flatMap((result) => result.failed),
      more: all.some((result) => result.more),
    };
  }

  /**
   * The reclaimer's pass on every partition (Queue.tick: expired leases back, due tasks promoted,
   * retention trimmed): each partition's result, by number. A process that consumes without the
   * Lambda reclaimer runs it periodically, so a partition whose claims are rare still has its due
   * tasks promoted and its expired leases returned.
   */
  async tick(options: { now: number; limit?: number; wakeHorizonMs?: number }): Promise<TickResult[]> {
    return Promise.all(this.partitions.map((queue) => queue.tick(options)));
  }

  /**
   * A shrink's end: each partition being drained (from `partitions` on) that holds no task waiting
   * or running (READY, parked, SCHEDULED, LEASED, set aside as corrupt) is dropped, keys and
   * finished records with it; the others are named as still draining. Drop them all, then deploy
   * the count without `shrinkingFrom`.
   */
  async dropDrained(_options: { now: number }): Promise<{ dropped: number[]; draining: number[] }> {
    return dropDrainedPartitions(this.partitions.slice(this.routed), this.routed);
  }

  /** Each partition's figures, and their sums (ages: the oldest of any partition). */
  async stats(options: { now: number }): Promise<PartitionedStats> {
    const partitions = await Promise.all(this.partitions.map((queue) => queue.stats(options)));
    return { total: sumStats(partitions), partitions };
  }
}

/**
 * Drops each of `queues` (partitions `first` on, a shrink's) that holds no task waiting or running,
 * the check and the drop one script (queue.admin.drop `only: "drained"`), so a task a producer of
 * the count before adds meanwhile is never dropped; names the others as still draining (one with
 * no key left, dropped before, is neither).
 */
export async function dropDrainedPartitions(
  queues: readonly Queue[],
  first: number,
): Promise<{ dropped: number[]; draining: number[] }> {
  const dropped: number[] = [];
  const draining: number[] = [];
  for (const [i, queue] of queues.entries()) {
    const deleted = await queue.admin.drop({ confirm: queue.name, only: "drained" });
    // 0: nothing there (dropped before), neither dropped now nor draining.
    if (deleted < 0) draining.push(first + i);
    else if (deleted > 0) dropped.push(first + i);
  }
  return { dropped, draining };
}
