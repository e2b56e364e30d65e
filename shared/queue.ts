import { DEFAULTS, LIMITS } from "./config.js";
import { InvalidInputError, itemStatus, toQueueError } from "./errors.js";
import { type QueueKeys, queueKeys } from "./keys.js";
import { SCRIPTS, type ScriptName } from "./scripts.js";
import type { Store } from "./store.js";
import {
  type ClaimedTask,
  type EnqueueResult,
  type ExtendResult,
  type ItemResult,
  type LeasePolicy,
  type ListedTask,
  type QueueStats,
  type ReclaimResult,
  type SettleItem,
  type SettleResult,
  STATE_BY_LETTER,
  type TaskInfo,
  type TaskInput,
  type TaskState,
  type TickResult,
} from "./types.js";
import {
  checkBatch,
  checkInteger,
  checkName,
  checkNow,
  checkPolicy,
  dueTime,
  serializePayload,
  shown,
} from "./validate.js";

export interface QueueOptions {
  /** Queue name, `^[A-Za-z0-9_.-]{1,64}$`; it is the hash tag of every key. */
  name: string;
  /** Strict order: a claim returns nothing while any task of the queue is leased or held. */
  ordered?: boolean;
  /** Lease and attempts per task type; types not listed get `defaultPolicy`. */
  policies?: Record<string, LeasePolicy>;
  defaultPolicy?: LeasePolicy;
  maxPayloadBytes?: number;
  maxErrorBytes?: number;
  clockSkewMs?: number;
  doneRetentionMs?: number;
  failedRetentionMs?: number;
  /** Key prefix before the `{queue}` tag. Default "leaseq". */
  keyPrefix?: string;
}

const ZSET_OF_STATE: Record<TaskState, keyof QueueKeys> = {
  ready: "ready",
  scheduled: "scheduled",
  leased: "leased",
  done: "done",
  failed: "failed",
};

/**
 * A leaseq queue on a store. Every method is one script call, atomic in Redis; inputs are
 * validated before anything is sent, so a rejected call leaves Redis unchanged.
 */
export class Queue {
  readonly name: string;
  readonly keys: QueueKeys;
  readonly ordered: boolean;
  private readonly policyArgs: string[];
  private readonly defaultPolicy: LeasePolicy;
  private readonly maxPayloadBytes: number;
  private readonly maxErrorBytes: number;
  private readonly clockSkewMs: number;
  private readonly doneRetentionMs: number;
  private readonly failedRetentionMs: number;

  constructor(
    private readonly store: Store,
    options: QueueOptions,
  ) {
    const where = "new Queue";
    this.keys = queueKeys(options.name, options.keyPrefix);
    this.name = options.name;
    this.ordered = options.ordered ?? false;
    this.defaultPolicy = checkPolicy(`${where} defaultPolicy`, options.defaultPolicy ?? DEFAULTS);
    this.policyArgs = Object.entries(options.policies ?? {}).flatMap(([type, policy]) => {
      checkName(where, "policy type", type, LIMITS.typeMaxBytes);
      const checked = checkPolicy(`${where} policy "${type}"`, policy);
      return [type, String(checked.leaseMs), String(checked.maxAttempts)];
    });
    this.maxPayloadBytes = checkInteger(
      where,
      "maxPayloadBytes",
      options.maxPayloadBytes ?? DEFAULTS.maxPayloadBytes,
      1,
      64 * 1024 * 1024,
    );
    this.maxErrorBytes = checkInteger(
      where,
      "maxErrorBytes",
      options.maxErrorBytes ?? DEFAULTS.maxErrorBytes,
      0,
      65536,
    );
    this.clockSkewMs = checkInteger(where, "clockSkewMs", options.clockSkewMs ?? DEFAULTS.clockSkewMs, 0, 3_600_000);
    this.doneRetentionMs = checkInteger(
      where,
      "doneRetentionMs",
      options.doneRetentionMs ?? DEFAULTS.doneRetentionMs,
      0,
      LIMITS.retentionMaxMs,
    );
    this.failedRetentionMs = checkInteger(
      where,
      "failedRetentionMs",
      options.failedRetentionMs ?? DEFAULTS.failedRetentionMs,
      0,
      LIMITS.retentionMaxMs,
    );
  }

  /**
   * Adds tasks, idempotent by id: a known id (in any state, DONE within retention included) is
   * reported as `duplicate` and left untouched. Throws InvalidInputError, naming the task and field,
   * before anything is written when any task is malformed.
   */
  async enqueue(tasks: TaskInput[], options: { now: number }): Promise<EnqueueResult[]> {
    const where = "enqueue";
    const now = checkNow(where, options.now);
    checkBatch(where, tasks, LIMITS.batchMax);
    const args = [String(now), String(this.maxPayloadBytes)];
    for (const [index, task] of tasks.entries()) args.push(...this.taskArgs(`${where}: task ${index + 1}`, task, now));
    const reply = await this.run(
      "enqueue",
      [this.keys.task, this.keys.ready, this.keys.scheduled, this.keys.seq],
      args,
    );
    return tasks.map((task, i) => ({
      id: task.id,
      status: itemStatus(where, reply[2 * i]) === "duplicate" ? "duplicate" : "ok",
      state: STATE_BY_LETTER[String(reply[2 * i + 1])],
    }));
  }

  /**
   * Checks tasks as enqueue would, without sending anything: per task, undefined when it would be
   * accepted, else the message of the InvalidInputError enqueue would throw for it.
   */
  checkTasks(tasks: readonly TaskInput[], options: { now: number }): Array<string | undefined> {
    const now = checkNow("checkTasks", options.now);
    return tasks.map((task, index) => {
      try {
        this.taskArgs(`task ${index + 1}`, task, now);
        return undefined;
      } catch (error) {
        if (error instanceof InvalidInputError) return error.message;
        throw error;
      }
    });
  }

  private taskArgs(label: string, task: TaskInput, now: number): string[] {
    if (task === null || typeof task !== "object")
      throw new InvalidInputError(`${label} must be an object, got ${shown(task)}`);
    const id = checkName(label, "id", task.id, LIMITS.idMaxBytes);
    const at = `${label} (id ${id})`;
    return [
      id,
      checkName(at, "type", task.type, LIMITS.typeMaxBytes),
      String(checkInteger(at, "priority", task.priority ?? 0, LIMITS.priorityMin, LIMITS.priorityMax)),
      String(dueTime(at, task, now)),
      serializePayload(at, task.payload, this.maxPayloadBytes),
    ];
  }

  /**
   * Promotes due scheduled tasks, then leases up to `count` ready tasks in rank order, each for
   * its type's lease. With `maxLeaseMs` (the time the caller has left), only tasks whose lease fits
   * are taken; the others stay READY. Returns [] when nothing is ready or an ordered queue's gate is closed.
   */
  async claim(options: { count: number; now: number; maxLeaseMs?: number }): Promise<ClaimedTask[]> {
    const now = checkNow("claim", options.now);
    const count = checkInteger("claim", "count", options.count, 1, LIMITS.claimMax);
    const maxLeaseMs = checkInteger(
      "claim",
      "maxLeaseMs",
      options.maxLeaseMs ?? LIMITS.leaseMaxMs,
      1,
      LIMITS.leaseMaxMs,
    );
    const reply = await this.run(
      "claim",
      [this.keys.task, this.keys.ready, this.keys.scheduled, this.keys.leased, this.keys.hold, this.keys.solo],
      [
        String(now),
        String(count),
        this.ordered ? "1" : "0",
        String(DEFAULTS.promoteLimit),
        String(this.defaultPolicy.leaseMs),
        String(this.defaultPolicy.maxAttempts),
        String(maxLeaseMs),
        ...this.policyArgs,
      ],
    );
    const claimed: ClaimedTask[] = [];
    for (let i = 0; i < reply.length; i += 7) {
      const rank = Number(reply[i + 5]);
      claimed.push({
        id: String(reply[i]),
        type: String(reply[i + 1]),
        payload: String(reply[i + 2]),
        attempt: Number(reply[i + 3]),
        token: String(reply[i + 4]),
        rank,
        priority: Math.floor(rank / 2 ** 42) + LIMITS.priorityMin,
        leaseDeadlineMs: Number(reply[i + 6]),
      });
    }
    return claimed;
  }

  /**
   * Finishes leased tasks, each fenced by its token: ack → DONE (payload dropped); retry →
   * SCHEDULED at `retryAtMs` (READY if due) with its rank kept, or FAILED when its attempts are
   * used up; fail → FAILED. A stale token changes nothing and is reported per item.
   */
  async settle(items: SettleItem[], options: { now: number }): Promise<SettleResult[]> {
    const where = "settle";
    const now = checkNow(where, options.now);
    checkBatch(where, items, LIMITS.batchMax);
    const args = [String(now), String(this.maxErrorBytes), this.ordered ? "1" : "0"];
    items.forEach((item, index) => {
      const label = `${where}: item ${index + 1}`;
      const id = checkName(label, "id", item?.id, LIMITS.idMaxBytes);
      if (typeof item.token !== "string")
        throw new InvalidInputError(`${label} (id ${id}): token must be a string, got ${shown(item.token)}`);
      if (item.outcome === "ack") args.push(id, item.token, "ack", "0", "");
      else if (item.outcome === "retry") {
        const retryAt = checkInteger(`${label} (id ${id})`, "retryAtMs", item.retryAtMs, 0, 2 ** 52);
        args.push(id, item.token, "retry", String(retryAt), this.errorText(item.error));
      } else if (item.outcome === "fail") args.push(id, item.token, "fail", "0", this.errorText(item.error));
      else {
        throw new InvalidInputError(
          `${label} (id ${id}): outcome must be "ack", "retry" or "fail", got ${shown((item as { outcome: unknown }).outcome)}`,
        );
      }
    });
    const reply = await this.run(
      "settle",
      [
        this.keys.task,
        this.keys.leased,
        this.keys.scheduled,
        this.keys.ready,
        this.keys.done,
        this.keys.failed,
        this.keys.hold,
      ],
      args,
    );
    return items.map((item, i) => ({
      id: item.id,
      status: itemStatus(where, reply[2 * i]),
      state: STATE_BY_LETTER[String(reply[2 * i + 1])],
    }));
  }

  /** Acks tasks (settle with outcome "ack"). */
  async ack(tasks: Array<{ id: string; token: string }>, options: { now: number }): Promise<SettleResult[]> {
    return this.settle(
      tasks.map(({ id, token }) => ({ id, token, outcome: "ack" as const })),
      options,
    );
  }

  /** Pushes lease deadlines to now + leaseMs, fenced by token. */
  async extend(
    items: Array<{ id: string; token: string; leaseMs: number }>,
    options: { now: number },
  ): Promise<ExtendResult[]> {
    const where = "extend";
    const now = checkNow(where, options.now);
    checkBatch(where, items, LIMITS.batchMax);
    const args = [String(now)];
    items.forEach((item, index) => {
      const label = `${where}: item ${index + 1}`;
      const id = checkName(label, "id", item?.id, LIMITS.idMaxBytes);
      args.push(
        id,
        this.token(label, item.token),
        String(checkInteger(label, "leaseMs", item.leaseMs, 1, LIMITS.leaseMaxMs)),
      );
    });
    const reply = await this.run("extend", [this.keys.task, this.keys.leased], args);
    return items.map((item, i) => {
      const status = itemStatus(where, reply[2 * i]);
      return { id: item.id, status, leaseDeadlineMs: status === "ok" ? Number(reply[2 * i + 1]) : undefined };
    });
  }

  /** Gives back claimed tasks that were never started: READY again, rank kept, attempt returned. */
  async release(items: Array<{ id: string; token: string }>, options: { now: number }): Promise<ItemResult[]> {
    const where = "release";
    const now = checkNow(where, options.now);
    checkBatch(where, items, LIMITS.batchMax);
    const args = [String(now)];
    items.forEach((item, index) => {
      const label = `${where}: item ${index + 1}`;
      args.push(checkName(label, "id", item?.id, LIMITS.idMaxBytes), this.token(label, item.token));
    });
    const reply = await this.run("release", [this.keys.task, this.keys.leased, this.keys.ready], args);
    return items.map((item, i) => ({ id: item.id, status: itemStatus(where, reply[i]) }));
  }

  /** Returns up to `limit` expired leases (deadline < now - clock skew) to READY or FAILED. */
  async reclaim(options: { now: number; limit?: number }): Promise<ReclaimResult> {
    const now = checkNow("reclaim", options.now);
    const limit = checkInteger("reclaim", "limit", options.limit ?? DEFAULTS.maintenanceLimit, 1, 10_000);
    const reply = await this.run(
      "reclaim",
      [this.keys.task, this.keys.leased, this.keys.ready, this.keys.failed, this.keys.solo],
      [String(now), String(this.clockSkewMs), String(limit)],
    );
    const result: ReclaimResult = { reclaimed: [], failed: [], more: reply.length / 2 >= limit };
    for (let i = 0; i < reply.length; i += 2) {
      (reply[i + 1] === "F" ? result.failed : result.reclaimed).push(String(reply[i]));
    }
    return result;
  }

  /** Moves up to `limit` due scheduled tasks to READY; returns how many moved. */
  async promote(options: { now: number; limit?: number }): Promise<number> {
    const now = checkNow("promote", options.now);
    const limit = checkInteger("promote", "limit", options.limit ?? DEFAULTS.maintenanceLimit, 1, 10_000);
    const reply = await this.run(
      "promote",
      [this.keys.task, this.keys.scheduled, this.keys.ready],
      [String(now), String(limit)],
    );
    return Number(reply);
  }

  /** Deletes DONE and FAILED tasks older than their retention (at most `limit` of each). */
  async trim(options: { now: number; limit?: number }): Promise<{ done: number; failed: number }> {
    const now = checkNow("trim", options.now);
    const limit = checkInteger("trim", "limit", options.limit ?? DEFAULTS.maintenanceLimit, 1, 10_000);
    const reply = await this.run(
      "trim",
      [this.keys.task, this.keys.done, this.keys.failed],
      [String(now), String(this.doneRetentionMs), String(this.failedRetentionMs), String(limit)],
    );
    return { done: Number(reply[0]), failed: Number(reply[1]) };
  }

  /** Counts per state and the ages operators alarm on. Read-only. */
  async stats(options: { now: number }): Promise<QueueStats> {
    const now = checkNow("stats", options.now);
    return parseStats(await this.run("stats", this.stateKeys(), [String(now)]), 0);
  }

  /** One reclaimer pass in one call: reclaim, promote, trim, then stats. */
  async tick(options: { now: number; limit?: number }): Promise<TickResult> {
    const now = checkNow("tick", options.now);
    const limit = checkInteger("tick", "limit", options.limit ?? DEFAULTS.maintenanceLimit, 1, 10_000);
    const reply = await this.run(
      "tick",
      [...this.stateKeys(), this.keys.solo],
      [
        String(now),
        String(this.clockSkewMs),
        String(limit),
        String(this.doneRetentionMs),
        String(this.failedRetentionMs),
      ],
    );
    return {
      reclaimed: Number(reply[0]),
      reclaimFailed: Number(reply[1]),
      promoted: Number(reply[2]),
      doneTrimmed: Number(reply[3]),
      failedTrimmed: Number(reply[4]),
      ...parseStats(reply, 5),
    };
  }

  /** One task's state and record, or undefined when the id is unknown. */
  async inspect(id: string): Promise<TaskInfo | undefined> {
    checkName("inspect", "id", id, LIMITS.idMaxBytes);
    const reply = await this.run("inspect", [this.keys.task], [id]);
    if (reply.length === 0) return undefined;
    return {
      id,
      state: STATE_BY_LETTER[String(reply[0])],
      type: String(reply[1]),
      priority: Number(reply[2]),
      attempts: Number(reply[3]),
      maxAttempts: Number(reply[4]),
      atMs: Number(reply[5]),
      lastError: String(reply[6]),
      payload: String(reply[7]),
      rank: Number(reply[8]),
    };
  }

  /** Sends FAILED tasks back to READY with their original rank and fresh attempts. */
  async requeue(ids: string[], options: { now: number }): Promise<ItemResult[]> {
    const now = checkNow("requeue", options.now);
    checkBatch("requeue", ids, LIMITS.batchMax);
    for (const [index, id] of ids.entries()) checkName(`requeue: id ${index + 1}`, "id", id, LIMITS.idMaxBytes);
    const reply = await this.run("requeue", [this.keys.task, this.keys.failed, this.keys.ready], [String(now), ...ids]);
    return ids.map((id, i) => ({ id, status: itemStatus("requeue", reply[i]) }));
  }

  /** A page of the tasks in `state`, in that state's order. */
  async list(state: TaskState, options: { offset?: number; limit?: number } = {}): Promise<ListedTask[]> {
    const zset = ZSET_OF_STATE[state];
    if (zset === undefined) {
      throw new InvalidInputError(
        `list: state must be one of ${Object.keys(ZSET_OF_STATE).join(", ")}, got ${shown(state)}`,
      );
    }
    const offset = checkInteger("list", "offset", options.offset ?? 0, 0, 1_000_000_000);
    const limit = checkInteger("list", "limit", options.limit ?? 100, 1, 1000);
    const reply = await this.run("list", [this.keys.task, this.keys[zset]], [String(offset), String(limit)]);
    const tasks: ListedTask[] = [];
    for (let i = 0; i < reply.length; i += 4) {
      tasks.push({
        id: String(reply[i]),
        score: Number(reply[i + 1]),
        type: String(reply[i + 2]),
        attempts: Number(reply[i + 3]),
      });
    }
    return tasks;
  }

  /**
   * Deletes the whole queue: every task in every state and every key of it. Irreversible, so the
   * caller repeats the queue's name as `confirm`; returns how many keys existed. Throws
   * InvalidInputError before anything is sent when `confirm` is not the name.
   */
  async drop(options: { confirm: string }): Promise<number> {
    if (options?.confirm !== this.name) {
      throw new InvalidInputError(
        `drop: confirm must repeat the queue name "${this.name}" exactly, got ${shown(options?.confirm)}`,
      );
    }
    const [deleted] = await this.run("drop", Object.values(this.keys), [options.confirm, this.name]);
    return Number(deleted);
  }

  private stateKeys(): string[] {
    const k = this.keys;
    return [k.task, k.ready, k.scheduled, k.leased, k.done, k.failed];
  }

  private token(label: string, token: unknown): string {
    if (typeof token !== "string" || token.length === 0 || token.length > 64) {
      throw new InvalidInputError(`${label}: token must be the string a claim returned, got ${shown(token)}`);
    }
    return token;
  }

  private errorText(error: unknown): string {
    const text = typeof error === "string" ? error : String(error);
    const bytes = Buffer.from(text);
    if (bytes.length <= this.maxErrorBytes) return text;
    // Cut on a character boundary so the stored text stays valid UTF-8.
    return bytes
      .subarray(0, this.maxErrorBytes)
      .toString()
      .replace(/\uFFFD+$/, "");
  }

  private async run(name: ScriptName, keys: string[], args: string[]): Promise<unknown[]> {
    try {
      const reply = await this.store.evalScript(SCRIPTS[name], keys, args);
      return Array.isArray(reply) ? reply : [reply];
    } catch (error) {
      throw toQueueError(name, error);
    }
  }
}

function parseStats(reply: unknown[], offset: number): QueueStats {
  const n = (i: number) => Number(reply[offset + i]);
  return {
    ready: n(0),
    scheduled: n(1),
    leased: n(2),
    done: n(3),
    failed: n(4),
    oldestReadyAgeMs: n(5),
    mostOverdueLeaseMs: n(6),
    dueScheduled: n(7),
  };
}
