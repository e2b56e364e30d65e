import { randomBytes } from "node:crypto";
import { DEFAULTS, LIMITS, NAME_PATTERN, WAKE } from "./config.js";
import { InvalidInputError, itemStatus, toQueueError } from "./errors.js";
import { type QueueKeys, queueKeys, scriptKeys } from "./keys.js";
import { buildBody, parseBody } from "./records.js";
import { SCRIPTS, type ScriptName } from "./scripts.js";
import { configFields, type QueueSettings, type ResolvedSettings, resolveSettings } from "./settings.js";
import type { Store } from "./store.js";
import {
  type CheckProblem,
  type ClaimedTask,
  type EnqueueResult,
  type ExtendResult,
  type GroupStats,
  type ItemResult,
  type ListedTask,
  type QueueHistory,
  type QueueStats,
  type ReclaimResult,
  type SettleItem,
  type SettleResult,
  STATE_BY_LETTER,
  type TaskFilter,
  type TaskInfo,
  type TaskInput,
  type TaskState,
  type TickResult,
} from "./types.js";
import { checkBatch, checkInteger, checkName, checkNow, dueTime, serializePayload, shown } from "./validate.js";

export interface QueueOptions {
  /** Queue name, `^[A-Za-z0-9_.-]{1,64}$`; it is the hash tag of every key. */
  name: string;
  /** Key prefix before the `{queue}` tag. Default "leaseq". */
  keyPrefix?: string;
  /**
   * The settings this process expects (the caps it checks input against before sending). They
   * reach Redis only through `configure()`; the scripts follow the queue's config, whatever a
   * caller holds.
   */
  settings?: QueueSettings;
}

const OPTION_NAMES = ["name", "keyPrefix", "settings"];
const LISTABLE: TaskState[] = ["ready", "scheduled", "leased", "done", "failed", "corrupt"];

/**
 * A leaseq queue on a store. Every method is one script call, atomic in Redis; inputs are
 * validated before anything is sent, so a rejected call leaves Redis unchanged. What must be the
 * same for every caller (order, policies, retention, caps) is the queue's config in Redis, written
 * by `configure()`.
 */
export class Queue {
  readonly name: string;
  readonly keys: QueueKeys;
  /** The settings this process expects (defaults applied). */
  readonly settings: ResolvedSettings;
  private readonly keyList: string[];

  constructor(
    private readonly store: Store,
    options: QueueOptions,
  ) {
    const unknown = Object.keys(options ?? {}).filter((key) => !OPTION_NAMES.includes(key));
    if (unknown.length > 0) {
      throw new InvalidInputError(
        `new Queue: unknown option${unknown.length === 1 ? "" : "s"} ${unknown.map((key) => JSON.stringify(key)).join(", ")}: the options are ${OPTION_NAMES.join(", ")}; the queue's settings (order, policies, retention, caps) go in \`settings\` and reach Redis through configure()`,
      );
    }
    this.keys = queueKeys(options.name, options.keyPrefix);
    this.keyList = scriptKeys(this.keys);
    this.name = options.name;
    this.settings = resolveSettings("new Queue", options.settings);
  }

  /**
   * Writes `settings` (default: this Queue's) into the queue's config, where every script reads
   * them. Idempotent: the same settings again change nothing. Resolves to whether the config changed.
   * A type no longer declared keeps its policy a day (`now`, default the clock: docs/deploy.md).
   */
  async configure(settings?: QueueSettings, options: { now?: number } = {}): Promise<boolean> {
    const resolved = settings === undefined ? this.settings : resolveSettings("configure", settings);
    const { revision, fields } = configFields(resolved);
    const now = checkNow("configure", options.now ?? Date.now());
    const [changed] = await this.run("configure", [revision, String(now), ...fields]);
    return Number(changed) === 1;
  }

  /**
   * Adds tasks, idempotent by id: a known id (in any state, DONE within retention included) is
   * reported as `duplicate` and left untouched. Throws InvalidInputError, naming the task and field,
   * before anything is written when any task is malformed.
   */
  async enqueue(tasks: TaskInput[], options: { now: number }): Promise<EnqueueResult[]> {
    return (await this.enqueueAndWake(tasks, options)).results;
  }

  /**
   * enqueue, and when a worker must be woken for what it added: `wakeAtMs`, the time to send a
   * wake-up for (now for ready work; a delayed task's due time within 15 minutes). Undefined when a
   * wake-up is arranged already (another producer's, a draining worker's) or the task is due later
   * than 15 minutes (the reclaimer arranges that one). The producer helper of `leaseq/lambda`
   * sends the wake-up (docs/wake-ups.md).
   */
  async enqueueAndWake(
    tasks: TaskInput[],
    options: { now: number },
  ): Promise<{ results: EnqueueResult[]; wakeAtMs: number | undefined }> {
    const where = "enqueue";
    const now = checkNow(where, options.now);
    checkBatch(where, tasks, LIMITS.batchMax);
    const args = [String(now), callId()];
    for (const [index, task] of tasks.entries()) args.push(...this.taskArgs(`${where}: task ${index + 1}`, task, now));
    const reply = await this.run("enqueue", args);
    const results = tasks.map((task, i) => ({
      id: task.id,
      status: itemStatus(where, reply[2 * i]) === "duplicate" ? ("duplicate" as const) : ("ok" as const),
      state: STATE_BY_LETTER[String(reply[2 * i + 1])],
    }));
    return { results, wakeAtMs: optionalTime(reply[2 * tasks.length]) };
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
    const type = checkName(at, "type", task.type, LIMITS.typeMaxBytes);
    const group = task.group === undefined ? "" : checkName(at, "group", task.group, LIMITS.groupMaxBytes);
    return [
      id,
      String(checkInteger(at, "priority", task.priority ?? 0, LIMITS.priorityMin, LIMITS.priorityMax)),
      String(dueTime(at, task, now)),
      buildBody(now, type, group, serializePayload(at, task.payload, this.settings.maxPayloadBytes)),
    ];
  }

  /**
   * Promotes due scheduled tasks, then leases up to `count` ready tasks in rank order, each for
   * its type's lease (the queue's config). With `maxLeaseMs` (the time the caller has left), only
   * tasks whose lease fits are taken; the others stay READY. Returns [] when nothing is ready or an
   * ordered queue's gate is closed. Safe to retry: a store resending it after a lost reply gets the
   * same batch back.
   */
  async claim(options: {
    count: number;
    now: number;
    maxLeaseMs?: number;
    types?: readonly string[];
  }): Promise<ClaimedTask[]> {
    return (await this.claimOrNextDue(options)).tasks;
  }

  /**
   * claim, and when nothing was leased: `nextDueMs`, when scheduled work next falls due (or an
   * ordered queue's hold ends), for a worker deciding whether to wait for it. With `types` (the task
   * types the caller has a handler for), a task of a type the queue declares but the caller lacks
   * (another deployment's, or a newer version's) stays READY for a caller that has it.
   */
  async claimOrNextDue(options: {
    count: number;
    now: number;
    maxLeaseMs?: number;
    types?: readonly string[];
  }): Promise<{ tasks: ClaimedTask[]; nextDueMs: number | undefined }> {
    const now = checkNow("claim", options.now);
    const count = checkInteger("claim", "count", options.count, 1, LIMITS.claimMax);
    const maxLeaseMs = checkInteger(
      "claim",
      "maxLeaseMs",
      options.maxLeaseMs ?? LIMITS.leaseMaxMs,
      1,
      LIMITS.leaseMaxMs,
    );
    const types = options.types ?? [];
    if (!Array.isArray(types) || types.length > LIMITS.batchMax) {
      throw new InvalidInputError(
        `claim: types must be an array of at most ${LIMITS.batchMax} task types, got ${shown(types)}`,
      );
    }
    for (const [index, type] of types.entries()) checkName(`claim: types[${index}]`, "type", type, LIMITS.typeMaxBytes);
    const claimId = randomBytes(12).toString("base64url");
    const reply = await this.run("claim", [
      String(now),
      String(count),
      String(maxLeaseMs),
      claimId,
      "0",
      String(DEFAULTS.promoteLimit),
      types.join(","),
    ]);
    if (reply.length === 1) return { tasks: [], nextDueMs: Number(reply[0]) };
    const claimed: ClaimedTask[] = [];
    for (let i = 0; i < reply.length; i += 5) {
      const token = String(reply[i + 3]);
      const rank = Number(token.slice(0, token.indexOf(".")));
      const body = parseBody(String(reply[i + 1]));
      claimed.push({
        id: String(reply[i]),
        type: body.type,
        group: body.group === "" ? undefined : body.group,
        payload: body.payload,
        attempt: Number(reply[i + 2]),
        token,
        rank,
        priority: Math.floor(rank / 2 ** 42) + LIMITS.priorityMin,
        leaseDeadlineMs: Number(reply[i + 4]),
      });
    }
    return { tasks: claimed, nextDueMs: undefined };
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
    const args = [String(now)];
    items.forEach((item, index) => {
      const label = `${where}: item ${index + 1}`;
      const id = checkName(label, "id", item?.id, LIMITS.idMaxBytes);
      if (typeof item.token !== "string")
        throw new InvalidInputError(`${label} (id ${id}): token must be a string, got ${shown(item.token)}`);
      if (item.outcome === "ack") args.push(id, item.token, "ack");
      else if (item.outcome === "retry") {
        const retryAt = checkInteger(`${label} (id ${id})`, "retryAtMs", item.retryAtMs, 0, LIMITS.timeMaxMs);
        args.push(id, item.token, "retry", String(retryAt), this.errorText(item.error));
      } else if (item.outcome === "fail") args.push(id, item.token, "fail", "0", this.errorText(item.error));
      else {
        throw new InvalidInputError(
          `${label} (id ${id}): outcome must be "ack", "retry" or "fail", got ${shown((item as { outcome: unknown }).outcome)}`,
        );
      }
    });
    const reply = await this.run("settle", args);
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
    const reply = await this.run("extend", args);
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
    const reply = await this.run("release", args);
    return items.map((item, i) => ({ id: item.id, status: itemStatus(where, reply[i]) }));
  }

  /** Returns up to `limit` expired leases (deadline < now − the queue's clock skew) to READY or FAILED. */
  async reclaim(options: { now: number; limit?: number }): Promise<ReclaimResult> {
    const now = checkNow("reclaim", options.now);
    const limit = this.limit("reclaim", options.limit);
    const reply = await this.run("reclaim", [String(now), String(limit)]);
    const result: ReclaimResult = { reclaimed: [], failed: [], more: reply.length / 2 >= limit };
    for (let i = 0; i < reply.length; i += 2) {
      (reply[i + 1] === "F" ? result.failed : result.reclaimed).push(String(reply[i]));
    }
    return result;
  }

  /** Moves up to `limit` due scheduled tasks to READY; returns how many moved. */
  async promote(options: { now: number; limit?: number }): Promise<number> {
    const now = checkNow("promote", options.now);
    const [promoted] = await this.run("promote", [String(now), String(this.limit("promote", options.limit))]);
    return Number(promoted);
  }

  /**
   * Deletes DONE and FAILED tasks older than their retention (the queue's config, or the one given
   * for this call), at most `limit` of each.
   */
  async trim(options: {
    now: number;
    limit?: number;
    doneRetentionMs?: number;
    failedRetentionMs?: number;
  }): Promise<{ done: number; failed: number }> {
    const where = "trim";
    const now = checkNow(where, options.now);
    const retention = (field: "doneRetentionMs" | "failedRetentionMs") =>
      options[field] === undefined
        ? "-1"
        : String(checkInteger(where, field, options[field], 0, LIMITS.retentionMaxMs));
    const reply = await this.run("trim", [
      String(now),
      String(this.limit(where, options.limit)),
      retention("doneRetentionMs"),
      retention("failedRetentionMs"),
    ]);
    return { done: Number(reply[0]), failed: Number(reply[1]) };
  }

  /** Counts per state and the ages operators alarm on. Read-only. */
  async stats(options: { now: number }): Promise<QueueStats> {
    const now = checkNow("stats", options.now);
    return parseStats(await this.run("stats", [String(now)]), 0);
  }

  /** One reclaimer pass in one call: reclaim, promote, trim, then stats. */
  /**
   * One reclaimer pass in one call: reclaim, promote, trim, then stats. With `wakeHorizonMs` (the
   * time to the reclaimer's next run, at most 15 minutes), it also arranges a wake-up for what
   * falls due before then: `wakeAtMs` says when to send it (docs/wake-ups.md).
   */
  async tick(options: { now: number; limit?: number; wakeHorizonMs?: number }): Promise<TickResult> {
    const now = checkNow("tick", options.now);
    const horizon = checkInteger("tick", "wakeHorizonMs", options.wakeHorizonMs ?? 0, 0, WAKE.horizonMaxMs);
    const reply = await this.run("tick", [
      String(now),
      String(this.limit("tick", options.limit)),
      String(horizon),
      `tick-${callId()}`,
    ]);
    return {
      reclaimed: Number(reply[0]),
      reclaimFailed: Number(reply[1]),
      promoted: Number(reply[2]),
      doneTrimmed: Number(reply[3]),
      failedTrimmed: Number(reply[4]),
      ...parseStats(reply, 5),
      wakeAtMs: optionalTime(reply[16]),
    };
  }

  /**
   * A worker stops draining: arranges the wake-up it would have been (for the ready work it leaves
   * when `cutOff`, its time having run out; else for when scheduled work or an ordered queue's
   * hold falls due within `horizonMs`). Resolves to the time to send that wake-up for, or undefined.
   */
  async rest(options: { now: number; horizonMs?: number; cutOff?: boolean }): Promise<number | undefined> {
    const now = checkNow("rest", options.now);
    const horizon = checkInteger("rest", "horizonMs", options.horizonMs ?? WAKE.horizonMaxMs, 0, WAKE.horizonMaxMs);
    const reply = await this.run("rest", [String(now), String(horizon), options.cutOff ? "1" : "0", callId()]);
    return Number(reply) >= 0 ? Number(reply) : undefined;
  }

  /** One task's state and record, or undefined when the id is unknown. A quarantined one is "corrupt". */
  async inspect(id: string): Promise<TaskInfo | undefined> {
    checkName("inspect", "id", id, LIMITS.idMaxBytes);
    const reply = await this.run("inspect", [id]);
    if (reply.length === 0) return undefined;
    return {
      id,
      state: STATE_BY_LETTER[String(reply[0])],
      type: String(reply[1]),
      group: String(reply[2]) === "" ? undefined : String(reply[2]),
      priority: Number(reply[3]),
      attempts: Number(reply[4]),
      maxAttempts: Number(reply[5]),
      atMs: Number(reply[6]),
      lastError: String(reply[7]),
      payload: String(reply[8]),
      rank: Number(reply[9]),
      enqueuedAtMs: Number(reply[10]),
    };
  }

  /** Sends FAILED tasks back to READY with their original rank and fresh attempts. */
  async requeue(ids: string[], options: { now: number }): Promise<ItemResult[]> {
    const now = checkNow("requeue", options.now);
    this.checkIds("requeue", ids);
    const reply = await this.run("requeue", [String(now), ...ids]);
    return ids.map((id, i) => ({ id, status: itemStatus("requeue", reply[i]) }));
  }

  /**
   * Deletes tasks by id, records included: READY, SCHEDULED, DONE, FAILED or quarantined ones. A
   * LEASED task is refused (status "leased"): a worker is running it. With `state`, a task no longer
   * in that state (it moved on since a filter found it) is left alone ("not_in_state"). `now` lets
   * the script forget a wake-up arranged only for what it deleted.
   */
  async delete(
    ids: string[],
    options: { state?: Exclude<TaskState, "leased">; now?: number } = {},
  ): Promise<ItemResult[]> {
    this.checkIds("delete", ids);
    const state = options.state ?? "";
    if (state !== "" && (!LISTABLE.includes(state) || state === ("leased" as TaskState))) {
      throw new InvalidInputError(
        `delete: state must be one of ${LISTABLE.filter((s) => s !== "leased").join(", ")}, got ${shown(state)}`,
      );
    }
    const now = options.now === undefined ? 0 : checkNow("delete", options.now);
    const reply = await this.run("delete", [String(now), state, ...ids]);
    return ids.map((id, i) => ({ id, status: itemStatus("delete", reply[i]) }));
  }

  /**
   * Brings quarantined tasks (see `list("corrupt")`) back to READY when their body can still be
   * read; "unrepairable" when it cannot (only delete is left then).
   */
  async repair(ids: string[], options: { now: number }): Promise<ItemResult[]> {
    const now = checkNow("repair", options.now);
    this.checkIds("repair", ids);
    const reply = await this.run("repair", [String(now), ...ids]);
    return ids.map((id, i) => ({ id, status: itemStatus("repair", reply[i]) }));
  }

  /**
   * Stops tasks from running (again): READY, SCHEDULED and LEASED ones end FAILED with the error
   * "cancelled", the lease revoked (its worker's settle is answered "stale_token"). DONE tasks are
   * "already_done", FAILED ones "already_failed"; `requeue` brings a cancelled task back.
   */
  async cancel(ids: string[], options: { now: number }): Promise<ItemResult[]> {
    const now = checkNow("cancel", options.now);
    this.checkIds("cancel", ids);
    const reply = await this.run("cancel", [String(now), ...ids]);
    return ids.map((id, i) => ({ id, status: itemStatus("cancel", reply[i]) }));
  }

  /**
   * Pauses the queue (its claims lease nothing), or with `type` one task type (its tasks stay
   * READY, the others are claimed). The reclaimer still reclaims, promotes and trims. Resolves to
   * whether it changed anything. The state is in the queue's config: `stats()` shows it.
   */
  async pause(options: { now: number; type?: string }): Promise<boolean> {
    return (await this.pauseOrResume("pause", options)).changed;
  }

  /**
   * Resumes what `pause` paused. `wakeAtMs` is set when ready work is waiting and no worker is
   * arranged to look: send a wake-up (the producer's `wake()`), or the reclaimer's next run kicks one.
   */
  async resume(options: { now: number; type?: string }): Promise<{ changed: boolean; wakeAtMs: number | undefined }> {
    return this.pauseOrResume("resume", options);
  }

  private async pauseOrResume(action: "pause" | "resume", options: { now: number; type?: string }) {
    const now = checkNow(action, options.now);
    if (options.type !== undefined) checkName(action, "type", options.type, LIMITS.typeMaxBytes);
    const reply = await this.run("pause", [String(now), action, options.type ?? "", callId()]);
    return { changed: Number(reply[0]) === 1, wakeAtMs: optionalTime(reply[1]) };
  }

  /**
   * Tasks finished per minute over the last `minutes` (default 60, at most 240), oldest first, from
   * the finish times of the DONE and FAILED sets (what retention trimmed is not counted). Read-only.
   */
  async history(options: { now: number; minutes?: number }): Promise<QueueHistory> {
    const now = checkNow("history", options.now);
    const minutes = checkInteger("history", "minutes", options.minutes ?? 60, 1, LIMITS.historyMinutesMax);
    const reply = await this.run("history", [String(now), String(minutes)]);
    const done: number[] = [];
    const failed: number[] = [];
    for (let i = 1; i < reply.length; i += 2) {
      done.push(Number(reply[i]));
      failed.push(Number(reply[i + 1]));
    }
    return { startMs: Number(reply[0]), bucketMs: 60_000, done, failed };
  }

  /**
   * A page of the queue's groups with their counts: the groups with READY or leased tasks (others
   * have no record). Pass the returned `next` as `cursor` to go on; undefined at the end. `count`
   * (1-1000, default 100) is about how many groups one call reads.
   */
  async groups(
    options: { cursor?: string; count?: number } = {},
  ): Promise<{ groups: GroupStats[]; next: string | undefined }> {
    const cursor = options.cursor ?? "0";
    if (typeof cursor !== "string" || !/^\d{1,20}$/.test(cursor)) {
      throw new InvalidInputError(`groups: cursor must be a cursor a previous call returned, got ${shown(cursor)}`);
    }
    const count = checkInteger("groups", "count", options.count ?? 100, 1, 1000);
    const reply = await this.run("groups", [cursor, String(count)]);
    const groups: GroupStats[] = [];
    for (let i = 1; i < reply.length; i += 5) {
      groups.push({
        type: String(reply[i]),
        group: String(reply[i + 1]),
        leased: Number(reply[i + 2]),
        ready: Number(reply[i + 3]),
        parked: Number(reply[i + 4]),
      });
    }
    const next = String(reply[0]);
    return { groups, next: next === "0" ? undefined : next };
  }

  /**
   * The tasks of `state` that match `filter`, reading at most `scan` (default 1000) of the state's
   * tasks from `cursor` on, in the state's order: bounded per call and resumable, `next` being the
   * cursor to go on from (undefined at the end). `olderThanMs` (scheduled, done, failed, corrupt):
   * the task's time (due, finished, quarantined) is more than this before `now`.
   */
  async find(state: TaskState, filter: TaskFilter): Promise<{ tasks: ListedTask[]; next: number | undefined }> {
    const scan = checkInteger("find", "scan", filter.scan ?? 1000, 1, 1000);
    const cursor = checkInteger("find", "cursor", filter.cursor ?? 0, 0, 1_000_000_000);
    if (filter.type !== undefined) checkName("find", "type", filter.type, LIMITS.typeMaxBytes);
    if (filter.group !== undefined) checkName("find", "group", filter.group, LIMITS.groupMaxBytes);
    if (filter.error !== undefined && (typeof filter.error !== "string" || filter.error === "")) {
      throw new InvalidInputError(`find: error must be a non-empty substring, got ${shown(filter.error)}`);
    }
    let before: number | undefined;
    if (filter.olderThanMs !== undefined) {
      if (state === "ready" || state === "leased") {
        throw new InvalidInputError(
          `find: olderThanMs selects by finish, due or quarantine time: scheduled, done, failed or corrupt tasks, not ${state} ones (ordered by rank or lease deadline)`,
        );
      }
      const now = checkNow("find", filter.now ?? Number.NaN);
      before = now - checkInteger("find", "olderThanMs", filter.olderThanMs, 0, LIMITS.timeMaxMs);
    }
    const page = await this.list(state, { offset: cursor, limit: scan });
    const tasks = page.filter(
      (task) =>
        (filter.type === undefined || task.type === filter.type) &&
        (filter.group === undefined || task.group === filter.group) &&
        (filter.error === undefined || task.lastError.includes(filter.error)) &&
        (before === undefined || task.score < before),
    );
    return { tasks, next: page.length < scan ? undefined : cursor + page.length };
  }

  /**
   * Deletes up to `limit` (default 1000) tasks of `state` from the head of its order, records
   * included, and resolves to how many it deleted: call again until 0 to purge the state. LEASED
   * tasks are not purged (cancel them).
   */
  async purge(state: Exclude<TaskState, "leased">, options: { limit?: number; now?: number } = {}): Promise<number> {
    if (!LISTABLE.includes(state) || state === ("leased" as TaskState)) {
      throw new InvalidInputError(
        `purge: state must be one of ${LISTABLE.filter((s) => s !== "leased").join(", ")}, got ${shown(state)}`,
      );
    }
    const limit = checkInteger("purge", "limit", options.limit ?? 1000, 1, LIMITS.batchMax);
    const page = await this.list(state, { limit });
    if (page.length === 0) return 0;
    // Only what is still in `state` when the delete runs: a task requeued meanwhile stays.
    const results = await this.delete(
      page.map((task) => task.id),
      { state, ...(options.now === undefined ? {} : { now: options.now }) },
    );
    return results.filter((result) => result.status === "ok").length;
  }

  /** A page of the tasks in `state`, in that state's order. */
  async list(state: TaskState, options: { offset?: number; limit?: number } = {}): Promise<ListedTask[]> {
    if (!LISTABLE.includes(state)) {
      throw new InvalidInputError(`list: state must be one of ${LISTABLE.join(", ")}, got ${shown(state)}`);
    }
    const offset = checkInteger("list", "offset", options.offset ?? 0, 0, 1_000_000_000);
    const limit = checkInteger("list", "limit", options.limit ?? 100, 1, 1000);
    const reply = await this.run("list", [state, String(offset), String(limit)]);
    const tasks: ListedTask[] = [];
    for (let i = 0; i < reply.length; i += 6) {
      tasks.push({
        id: String(reply[i]),
        score: Number(reply[i + 1]),
        type: String(reply[i + 2]),
        attempts: Number(reply[i + 3]),
        lastError: String(reply[i + 4]),
        group: String(reply[i + 5]) === "" ? undefined : String(reply[i + 5]),
      });
    }
    return tasks;
  }

  /**
   * One step of the queue's consistency check (docs/design.md "Checking a queue"): reads at most
   * `count` records (1-1000, default 1000) from `cursor` (undefined: the start) and reports every
   * broken invariant it finds among them; `next` is the cursor to go on from, undefined once the
   * check is complete. With `repair`, what can be repaired safely is repaired in the same step (each
   * problem says whether it was). Bounded and resumable: a large queue is checked in many steps.
   */
  async check(options: {
    now: number;
    cursor?: string;
    count?: number;
    repair?: boolean;
  }): Promise<{ problems: CheckProblem[]; next: string | undefined }> {
    const now = checkNow("check", options.now);
    const cursor = options.cursor ?? "";
    if (typeof cursor !== "string" || cursor.length > 64 || (cursor !== "" && !/^[a-z]+:[\d:]+$/.test(cursor))) {
      throw new InvalidInputError(`check: cursor must be one a previous check returned, got ${shown(cursor)}`);
    }
    const count = checkInteger("check", "count", options.count ?? LIMITS.checkPageMax, 1, LIMITS.checkPageMax);
    const reply = await this.run("check", [String(now), cursor, String(count), options.repair ? "1" : "0"]);
    const problems: CheckProblem[] = [];
    for (let i = 1; i + 3 < reply.length; i += 4) {
      problems.push({
        code: String(reply[i]),
        subject: String(reply[i + 1]),
        detail: String(reply[i + 2]),
        repaired: Number(reply[i + 3]) === 1,
      });
    }
    const next = String(reply[0] ?? "");
    return { problems, next: next === "" ? undefined : next };
  }

  /**
   * The whole consistency check, step after step (see check): every problem found, each once. On a
   * live queue a task may move between steps; check again what it reports before acting on it.
   */
  async checkAll(options: { now: number; repair?: boolean; count?: number }): Promise<CheckProblem[]> {
    const found = new Map<string, CheckProblem>();
    let cursor: string | undefined;
    do {
      const step = await this.check({ ...options, ...(cursor === undefined ? {} : { cursor }) });
      for (const problem of step.problems) found.set(`${problem.code}\0${problem.subject}\0${problem.detail}`, problem);
      cursor = step.next;
    } while (cursor !== undefined);
    return [...found.values()];
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
    const [deleted] = await this.run("drop", [options.confirm, this.name]);
    return Number(deleted);
  }

  private checkIds(where: string, ids: string[]): void {
    checkBatch(where, ids, LIMITS.batchMax);
    for (const [index, id] of ids.entries()) checkName(`${where}: id ${index + 1}`, "id", id, LIMITS.idMaxBytes);
  }

  private limit(where: string, limit: number | undefined): number {
    return checkInteger(where, "limit", limit ?? DEFAULTS.maintenanceLimit, 1, LIMITS.maintenanceMax);
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
    if (bytes.length <= this.settings.maxErrorBytes) return text;
    // Cut on a character boundary so the stored text stays valid UTF-8.
    return bytes
      .subarray(0, this.settings.maxErrorBytes)
      .toString()
      .replace(/\uFFFD+$/, "");
  }

  private async run(name: ScriptName, args: string[]): Promise<unknown[]> {
    try {
      const reply = await this.store.evalScript(SCRIPTS[name], this.keyList, args);
      return Array.isArray(reply) ? reply : [reply];
    } catch (error) {
      throw toQueueError(name, error);
    }
  }
}

/**
 * An id for one call, the same on every sending of it: a script that arranges a wake-up records it
 * with the mark, so a store's repeat after a lost reply is told the same wake-up (lua/lib/wake-ups.lua).
 */
function callId(): string {
  return randomBytes(9).toString("base64url");
}

/** A time a script answered, or undefined for its "" (none). */
function optionalTime(value: unknown): number | undefined {
  return value === "" || value === undefined || value === null ? undefined : Number(value);
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
    corrupt: n(8),
    paused: n(9) === 1,
    pausedTypes: String(reply[offset + 10] ?? "") === "" ? [] : String(reply[offset + 10]).split(","),
  };
}

/**
 * The names of the leaseq queues on the store's server (their config keys), sorted: SCAN, so for
 * operators, not for a hot path. Needs a store with `scanKeys` (both stores have it).
 */
export async function listQueues(store: Store, options: { keyPrefix?: string } = {}): Promise<string[]> {
  if (!store.scanKeys) throw new InvalidInputError("listQueues: this store cannot SCAN (no scanKeys)");
  const prefix = options.keyPrefix ?? "leaseq";
  const suffix = queueKeys("q", prefix).config.slice(`${prefix}:{q}`.length);
  const names = new Set<string>();
  let cursor = "0";
  do {
    const [next, keys] = await store.scanKeys(cursor, `${prefix}:{*}${suffix}`, 1000);
    for (const key of keys) {
      const name = key.slice(prefix.length + 2, key.length - suffix.length - 1);
      // A key that only looks like one (a name leaseq would refuse) is not a queue of leaseq's.
      if (key.endsWith(`}${suffix}`) && NAME_PATTERN.test(name) && name.length <= LIMITS.queueNameMaxBytes) {
        names.add(name);
      }
    }
    cursor = next;
  } while (cursor !== "0");
  return [...names].sort();
}
