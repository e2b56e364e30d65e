import { randomBytes } from "node:crypto";
import { DEFAULTS, LIMITS, SINGLETON_GROUP_PREFIX, WAKE } from "./config.js";
import { InvalidInputError, itemStatus } from "./errors.js";
import { checkFlow, type FlowEntry, flowRuns } from "./flow.js";
import type { QueueKeys } from "./keys.js";
import { itemArgs, readReply, replyRows } from "./protocol/index.js";
import type { QueueAdmin } from "./queue-admin.js";
import { callId, optionalTime, QueueContext, type QueueOptions, readWakeUps } from "./queue-context.js";
import { QueueSchedules } from "./queue-schedules.js";
import { buildBody, parseBody, priorityOfRank } from "./records.js";
import { configFields, type QueueSettings, type ResolvedSettings, resolveSettings } from "./settings.js";
import type { Store } from "./store.js";
import { isTraceparent, withBatchSpan, withSendSpan } from "./tracing.js";
import {
  type ClaimedTask,
  type ClaimOutcome,
  type EnqueueResult,
  type ExtendResult,
  type ItemResult,
  type QueueStats,
  type ReclaimResult,
  type ResultDeclaration,
  type SettleItem,
  type SettleResult,
  STATE_BY_LETTER,
  type TaskInput,
  type TaskResults,
  type TaskStanding,
  type TickResult,
  type WakeTo,
} from "./types.js";
import {
  checkBatch,
  checkGroup,
  checkId,
  checkInteger,
  checkName,
  checkNow,
  checkTaskFields,
  dueTime,
  serializePayload,
  shown,
} from "./validate.js";

export type { QueueOptions } from "./queue-context.js";

/** What a claim takes (Queue.claim, Queue.claimOrNextDue). */
export interface ClaimOptions {
  count: number;
  now: number;
  /** The time the caller has left: only tasks whose lease fits it are leased. */
  maxLeaseMs?: number;
  /** The task types the caller has a handler for (default: any). */
  types?: readonly string[];
  /**
   * Types among `types` the caller may run only so many more of now (its per-type concurrency): at
   * most that many are leased, the rest stay READY, and `wakeAtMs` says to wake another worker.
   */
  room?: Readonly<Record<string, number>>;
  /** The caller runs other tasks now: a solo task is left for a caller running none. */
  busy?: boolean;
  /**
   * A wake-up brought this claim, which answers it (docs/wake-ups.md): the first claim of an
   * invocation a wake-up started, or one a running worker makes for a wake-up it took.
   */
  woken?: boolean;
  /**
   * Whether the caller looks again soon on its own when this claim leases nothing (default true):
   * the claim then marks it active, and work made ready meanwhile needs no wake-up. A worker that
   * handed the queue back to wake-ups (docs/wake-ups.md) passes false.
   */
  lingers?: boolean;
}

/**
 * A leaseq queue on a store: what workers, producers and the reclaimer call. A worker claims tasks
 * with a lease, then settles them (ack, retry, fail), extends or releases them; a producer
 * enqueues; the reclaimer brings back what an expired lease left, promotes due tasks and trims.
 * `queue.schedules` sets and plans the queue's schedules; `queue.admin` holds the operator's verbs
 * (inspect, list, requeue, cancel, pause, check, ...).
 *
 * Every method is one script call, atomic in Redis; inputs are validated before anything is sent,
 * so a rejected call leaves Redis unchanged. What must be the same for every caller (order,
 * policies, retention, caps) is the queue's config in Redis, written by `configure()`.
 */
export class Queue {
  readonly name: string;
  readonly keys: QueueKeys;
  /** The settings this process expects (defaults applied). */
  readonly settings: ResolvedSettings;
  /** The queue's schedules (docs/schedules.md): set, remove, pause, resume, runNow, syncDeclared, list, plan. */
  readonly schedules: QueueSchedules;
  /** The operator's verbs: inspect, list, find, groups, history, requeue, skip, cancel, delete, purge, ... */
  readonly admin: QueueAdmin;
  private readonly context: QueueContext;

  constructor(store: Store, options: QueueOptions) {
    this.context = new QueueContext(store, options);
    this.name = this.context.name;
    this.keys = this.context.keys;
    this.settings = this.context.settings;
    this.schedules = new QueueSchedules(this.context, (tasks, enqueueOptions) =>
      this.enqueueAndWake(tasks, enqueueOptions),
    );
    // Imported at its first call: the Lambda functions seldom need it, and their cold-start bundles
    // stay under their limit without it (test/functions/bundle.test.ts).
    const context = this.context;
    this.admin = loadedOnUse(async () => new (await import("./queue-admin.js")).QueueAdmin(context));
  }

  /**
   * Promotes due scheduled tasks, then leases up to `count` ready tasks in rank order, each for
   * its type's lease (the queue's config). With `maxLeaseMs` (the time the caller has left), only
   * tasks whose lease fits are taken; the others stay READY. Returns [] when nothing is ready or an
   * ordered queue's gate is closed. Safe to retry: a store resending it after a lost reply gets the
   * same batch back.
   */
  async claim(options: ClaimOptions): Promise<ClaimedTask[]> {
    return (await this.claimOrNextDue(options)).tasks;
  }

  /**
   * claim, and what it answers besides: `nextDueMs` when nothing was leased, when scheduled work
   * next falls due (or an ordered queue's hold ends), for a worker deciding whether to wait for it.
   * With `types` (the task types the caller has a handler for), a task of a type the queue declares
   * but the caller lacks (another deployment's, or a newer version's) stays READY for a caller that
   * has it; with `room` (the most of some types the caller may run more of now), the rest of those
   * stay READY too, and `wakeAtMs` says to wake another worker for them now. With `busy` (the caller runs other tasks
   * now), a task that stalled twice (solo) stays READY for a caller running none: `soloWaiting`.
   */
  async claimOrNextDue(options: ClaimOptions): Promise<ClaimOutcome> {
    const now = checkNow("claim", options.now);
    const count = checkInteger("claim", "count", options.count, 1, LIMITS.claimMax);
    const maxLeaseMs = checkInteger(
      "claim",
      "maxLeaseMs",
      options.maxLeaseMs ?? LIMITS.leaseMaxMs,
      1,
      LIMITS.leaseMaxMs,
    );
    const types = checkTypeList("types", options.types);
    const room = Object.entries(options.room ?? {});
    checkTypeList(
      "room",
      room.map(([type]) => type),
    );
    for (const [type, n] of room) checkInteger(`claim: room["${type}"]`, "room", n, 0, 9999);
    const claimId = randomBytes(12).toString("base64url");
    return withBatchSpan(
      this.name,
      "receive",
      async (): Promise<ClaimOutcome> => {
        const reply = await this.context.run("claim", {
          now: String(now),
          count: String(count),
          maxLeaseMs: String(maxLeaseMs),
          claimId,
          repeat: "0",
          promoteLimit: String(DEFAULTS.promoteLimit),
          types: types.join(","),
          busy: options.busy ? "1" : "0",
          woken: options.woken ? "1" : "0",
          lingers: options.lingers === false ? "0" : "1",
          room: room.map(([type, n]) => `${type}:${n}`).join(","),
        });
        const { rows, next, soloWaiting, wakeAt } = readReply("claim", reply);
        const tasks = rows.map((record) => claimedTask(now, record));
        return {
          tasks,
          nextDueMs: optionalTime(next),
          soloWaiting: soloWaiting === "1",
          wakeAtMs: optionalTime(wakeAt),
        };
      },
      (outcome) => outcome.tasks.length,
    );
  }

  /**
   * Finishes leased tasks, each fenced by its token: ack → DONE (payload dropped); retry →
   * SCHEDULED at `retryAtMs` (READY if due) with its rank kept, or FAILED when its attempts are
   * used up; fail → FAILED. A stale token changes nothing and is reported per item.
   */
  async settle(items: SettleItem[], options: { now: number }): Promise<SettleResult[]> {
    const where = "settle";
    const now = checkNow(where, options.now);
    const args = this.settleArgs(items);
    return withBatchSpan(
      this.name,
      "settle",
      async () => {
        const reply = await this.context.run("settle", { now: String(now) }, args);
        return replyRows("settle", reply, items.length).map((record, i) => ({
          id: items[i].id,
          status: itemStatus(where, record.status),
          state: STATE_BY_LETTER[String(record.state)],
        }));
      },
      () => items.length,
    );
  }

  /**
   * settle's items checked and encoded as its script takes them, sending nothing: throws
   * InvalidInputError naming the first malformed item (a partitioned queue checks a whole batch so
   * before it sends any partition its part).
   */
  settleArgs(items: SettleItem[]): string[] {
    const maxErrorBytes = this.settings.maxErrorBytes;
    return leasedItemArgs("settle", items, (item, id, label) => {
      if (typeof item.token !== "string")
        throw new InvalidInputError(`${label} (id ${id}): token must be a string, got ${shown(item.token)}`);
      const { token } = item;
      if (item.outcome === "ack") {
        if (item.result === undefined) return itemArgs("settle", { id, token, outcome: "ack" });
        return itemArgs("settle", {
          id,
          token,
          outcome: "done",
          retryAtMs: "0",
          error: resultText(`${label} (id ${id})`, item.result, this.settings.maxResultBytes),
        });
      }
      if (item.outcome === "retry") {
        const retryAt = checkInteger(`${label} (id ${id})`, "retryAtMs", item.retryAtMs, 0, LIMITS.timeMaxMs);
        return itemArgs("settle", {
          id,
          token,
          outcome: "retry",
          retryAtMs: String(retryAt),
          error: errorText(item.error, maxErrorBytes),
        });
      }
      if (item.outcome === "fail") {
        return itemArgs("settle", {
          id,
          token,
          outcome: "fail",
          retryAtMs: "0",
          error: errorText(item.error, maxErrorBytes),
        });
      }
      throw new InvalidInputError(
        `${label} (id ${id}): outcome must be "ack", "retry" or "fail", got ${shown((item as { outcome: unknown }).outcome)}`,
      );
    });
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
    items: Array<{ id: string; token: string; leaseMs: number; progress?: unknown }>,
    options: { now: number },
  ): Promise<ExtendResult[]> {
    const where = "extend";
    const now = checkNow(where, options.now);
    const args = this.extendArgs(items);
    const reply = await this.context.run("extend", { now: String(now) }, args);
    return replyRows("extend", reply, items.length).map((record, i) => {
      const status = itemStatus(where, record.status);
      return { id: items[i].id, status, leaseDeadlineMs: status === "ok" ? Number(record.deadline) : undefined };
    });
  }

  /** extend's items checked and encoded, sending nothing (settleArgs). */
  extendArgs(items: Array<{ id: string; token: string; leaseMs: number; progress?: unknown }>): string[] {
    return leasedItemArgs("extend", items, (item, id, label) =>
      itemArgs("extend", {
        id,
        token: checkToken(label, item.token),
        leaseMs: String(checkInteger(label, "leaseMs", item.leaseMs, 1, LIMITS.leaseMaxMs)),
        progress: item.progress === undefined ? "" : progressText(`${label} (id ${id})`, item.progress),
      }),
    );
  }

  /** release's items checked and encoded, sending nothing (settleArgs). */
  releaseArgs(items: Array<{ id: string; token: string }>): string[] {
    return leasedItemArgs("release", items, (item, id, label) =>
      itemArgs("release", { id, token: checkToken(label, item.token) }),
    );
  }

  /** Gives back claimed tasks that were never started: READY again, rank kept, attempt returned. */
  async release(items: Array<{ id: string; token: string }>, options: { now: number }): Promise<ItemResult[]> {
    const where = "release";
    const now = checkNow(where, options.now);
    const args = this.releaseArgs(items);
    const reply = await this.context.run("release", { now: String(now) }, args);
    return replyRows("release", reply, items.length).map((record, i) => ({
      id: items[i].id,
      status: itemStatus(where, record.status),
    }));
  }

  /**
   * A worker stops draining and hands the queue back to wake-ups: arranges the wake-up it would
   * have been (for the ready work it leaves when `cutOff`, its time having run out; else for when
   * scheduled work or an ordered queue's hold falls due within `horizonMs`). Resolves to the time
   * to send that wake-up for, or undefined.
   */
  async handOff(options: {
    now: number;
    horizonMs?: number;
    cutOff?: boolean;
    /** A wake-up started the worker and no claim of it answered it: the hand-off does. */
    woken?: boolean;
  }): Promise<number | undefined> {
    const now = checkNow("handoff", options.now);
    const horizon = checkInteger("handoff", "horizonMs", options.horizonMs ?? WAKE.horizonMaxMs, 0, WAKE.horizonMaxMs);
    const reply = await this.context.run("handoff", {
      now: String(now),
      horizonMs: String(horizon),
      cutOff: options.cutOff ? "1" : "0",
      callId: callId(),
      woken: options.woken ? "1" : "0",
      deployment: this.settings.deployment,
    });
    return optionalTime(readReply("handoff", reply).wakeAt);
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
    const [changed] = await this.context.run("configure", { revision, now: String(now) }, fields);
    return Number(changed) === 1;
  }

  /**
   * Adds tasks, idempotent by id: a known id (in any state, DONE within retention included) is
   * reported as `duplicate` and left untouched. Throws InvalidInputError, naming the task and field,
   * before anything is written when any task is malformed or has a field TaskInput lacks (a
   * misspelled `paylod` is refused, not dropped). With tracing (docs/lambda.md#tracing), the tasks
   * store the context of the PRODUCER span of the call.
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
   *
   * The tasks store the W3C traceparent of the PRODUCER span `send <queue>` this call makes when
   * tracing is on (docs/lambda.md#tracing); with `traceparent` they store that one instead, and no
   * span is made: the context they were sent in, carried across a process (the intake passes the
   * one an SQS message carries; `""`: none). A `traceparent` that is neither is refused.
   */
  async enqueueAndWake(
    tasks: TaskInput[],
    options: { now: number; traceparent?: string },
  ): Promise<{ results: EnqueueResult[]; wakeAtMs: number | undefined; wakeTo: WakeTo[] }> {
    const where = "enqueue";
    const now = checkNow(where, options.now);
    checkBatch(where, tasks, LIMITS.batchMax);
    const { traceparent } = options;
    if (traceparent !== undefined && traceparent !== "" && !isTraceparent(traceparent)) {
      throw new InvalidInputError(
        `${where}: traceparent must be "" or a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, lower case), got ${shown(traceparent)}`,
      );
    }
    const prepared = tasks.map((task, index) => this.prepareTask(`${where}: task ${index + 1}`, task, now));
    const flows = prepared.flatMap(({ flow }) => (flow ? [flow] : []));
    const send = async (trace: string) => {
      const args = prepared.flatMap(({ id, priority, runAtMs, type, group, payload }) =>
        itemArgs("enqueue", { id, priority, runAtMs, body: buildBody(now, type, group, trace, payload) }),
      );
      // With flow control, its runs (a batch's tasks mostly share one flow), and a key per task with one.
      return this.context.run(
        "enqueue",
        {
          now: String(now),
          callId: callId(),
          flows: flows.length === 0 ? "" : flowRuns(prepared.map(({ flow }) => flow)),
        },
        flows.length === 0 ? args : [...args, ...flows.map((flow) => flow.key)],
      );
    };
    const reply = await (traceparent === undefined
      ? withSendSpan(
          this.name,
          prepared.map((task) => task.id),
          send,
        )
      : send(traceparent));
    const { rows, wakeAt } = readReply("enqueue", reply, tasks.length);
    const results = rows.map((record, i): EnqueueResult => {
      const status = itemStatus(where, record.status);
      const other = String(record.other ?? "");
      const result: EnqueueResult = {
        id: tasks[i].id,
        status: status === "duplicate" || status === "throttled" ? status : "ok",
        state: STATE_BY_LETTER[String(record.state)],
      };
      if (other !== "") {
        if (status === "duplicate") result.existingId = other;
        else result.replaced = other;
      }
      return result;
    });
    return { results, ...readWakeUps(wakeAt) };
  }

  /**
   * Checks tasks as enqueue would, without sending anything: per task, undefined when it would be
   * accepted, else the message of the InvalidInputError enqueue would throw for it.
   */
  checkTasks(tasks: readonly TaskInput[], options: { now: number }): Array<string | undefined> {
    const now = checkNow("checkTasks", options.now);
    return tasks.map((task, index) => {
      try {
        this.prepareTask(`task ${index + 1}`, task, now);
        return undefined;
      } catch (error) {
        if (error instanceof InvalidInputError) return error.message;
        throw error;
      }
    });
  }

  /** Returns up to `limit` expired leases (deadline < now − the queue's clock skew) to READY or FAILED. */
  async reclaim(options: { now: number; limit?: number }): Promise<ReclaimResult> {
    const now = checkNow("reclaim", options.now);
    const limit = maintenanceLimit("reclaim", options.limit);
    const reply = await this.context.run("reclaim", { now: String(now), limit: String(limit) });
    const moved = replyRows("reclaim", reply);
    const result: ReclaimResult = { reclaimed: [], failed: [], more: moved.length >= limit };
    for (const { id, letter } of moved) (letter === "F" ? result.failed : result.reclaimed).push(String(id));
    return result;
  }

  /** Moves up to `limit` due scheduled tasks to READY; returns how many moved. */
  async promote(options: { now: number; limit?: number }): Promise<number> {
    const now = checkNow("promote", options.now);
    const reply = await this.context.run("promote", {
      now: String(now),
      limit: String(maintenanceLimit("promote", options.limit)),
    });
    return Number(readReply("promote", reply).promoted);
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
    const reply = await this.context.run("trim", {
      now: String(now),
      limit: String(maintenanceLimit(where, options.limit)),
      doneRetentionMs: retention("doneRetentionMs"),
      failedRetentionMs: retention("failedRetentionMs"),
    });
    const { doneTrimmed, failedTrimmed } = readReply("trim", reply);
    return { done: Number(doneTrimmed), failed: Number(failedTrimmed) };
  }

  /**
   * One reclaimer pass in one call: reclaim, promote, trim, then stats. With `wakeHorizonMs` (the
   * time to the reclaimer's next run, at most 15 minutes), it also arranges a wake-up for what
   * falls due before then: `wakeAtMs` says when to send it (docs/wake-ups.md).
   */
  async tick(options: { now: number; limit?: number; wakeHorizonMs?: number }): Promise<TickResult> {
    const now = checkNow("tick", options.now);
    const horizon = checkInteger("tick", "wakeHorizonMs", options.wakeHorizonMs ?? 0, 0, WAKE.horizonMaxMs);
    const reply = await this.context.run("tick", {
      now: String(now),
      limit: String(maintenanceLimit("tick", options.limit)),
      wakeHorizonMs: String(horizon),
      callId: `tick-${callId()}`,
      deployment: this.settings.deployment,
    });
    const values = readReply("tick", reply);
    return {
      reclaimed: Number(values.reclaimed),
      reclaimFailed: Number(values.reclaimFailed),
      promoted: Number(values.promoted),
      doneTrimmed: Number(values.doneTrimmed),
      failedTrimmed: Number(values.failedTrimmed),
      ...parseStats(values),
      wakeAtMs: optionalTime(values.wakeAt),
      planAtMs: optionalTime(values.planAt),
      finishedDone: Number(values.finishedDone),
      finishedFailed: Number(values.finishedFailed),
    };
  }

  /**
   * Where task `id` stands: its state, and once DONE the result its ack kept (a type with
   * `keepResult`), once FAILED its last error; undefined when the id is unknown (never enqueued, or
   * trimmed after its retention). One read-only call. With `{ tasks, type }` (your `defineTasks`
   * declaration and the task's type) the result is typed as that type's handler returns it, and a
   * task of another type, or a type that keeps no result, is refused with InvalidInputError.
   */
  async result<Declaration extends ResultDeclaration, Type extends keyof TaskResults<Declaration> & string>(
    id: string,
    options: ResultOf<Declaration, Type>,
  ): Promise<TaskStanding<Awaited<TaskResults<Declaration>[Type]>> | undefined>;
  async result<Result = unknown>(id: string): Promise<TaskStanding<Result> | undefined>;
  async result(id: string, options?: Partial<ResultOf<ResultDeclaration, string>>): Promise<TaskStanding | undefined> {
    return this.standing("result", id, expectedType("result", options));
  }

  /** Where task `id` stands (one read), refused when `expected` names a type it is not of. */
  private async standing(label: string, id: string, expected: string | undefined): Promise<TaskStanding | undefined> {
    const task = await this.admin.inspect(id);
    if (!task) return undefined;
    if (expected !== undefined && task.type !== expected) {
      throw new InvalidInputError(
        `${label}: task ${shown(id)} is of type ${shown(task.type)}, not ${shown(expected)} as asked`,
      );
    }
    return {
      id,
      type: task.type,
      state: task.state,
      finished: task.state === "done" || task.state === "failed",
      result: task.result,
      progress: task.progress,
      error: task.state === "failed" ? task.lastError : undefined,
      finishedAt: task.finishedAt,
    };
  }

  /**
   * Waits until task `id` is DONE or FAILED, or `timeoutMs` passes (then `finished` is false), and
   * says where it stands (`result`). It reads the task's record with a bounded backoff — after 50 ms,
   * then doubling to at most 1 s between reads — so a wait of a minute costs about 65 read-only
   * calls, however many tasks run. An unknown id resolves undefined at once; `signal` ends the wait
   * early with where it stands. `{ tasks, type }` types the result, as for `result`.
   */
  async waitFor<Declaration extends ResultDeclaration, Type extends keyof TaskResults<Declaration> & string>(
    id: string,
    options: WaitOptions & ResultOf<Declaration, Type>,
  ): Promise<TaskStanding<Awaited<TaskResults<Declaration>[Type]>> | undefined>;
  async waitFor<Result = unknown>(id: string, options: WaitOptions): Promise<TaskStanding<Result> | undefined>;
  async waitFor(
    id: string,
    options: WaitOptions & Partial<ResultOf<ResultDeclaration, string>>,
  ): Promise<TaskStanding | undefined> {
    const timeoutMs = checkInteger("waitFor", "timeoutMs", options.timeoutMs, 0, LIMITS.timeMaxMs);
    const expected = expectedType("waitFor", options);
    const deadline = performance.now() + timeoutMs;
    let pause = WAIT_FIRST_MS;
    for (;;) {
      const outcome = await this.standing("waitFor", id, expected);
      const left = deadline - performance.now();
      if (!outcome || outcome.finished || left <= 0 || options.signal?.aborted) return outcome;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(pause, left));
        function done() {
          clearTimeout(timer);
          options.signal?.removeEventListener("abort", done);
          resolve();
        }
        options.signal?.addEventListener("abort", done, { once: true });
      });
      pause = Math.min(pause * 2, WAIT_MAX_MS);
    }
  }

  /** Counts per state and the ages operators alarm on. Read-only. */
  async stats(options: { now: number }): Promise<QueueStats> {
    const now = checkNow("stats", options.now);
    return parseStats(readReply("stats", await this.context.run("stats", { now: String(now) })));
  }

  /**
   * One task, checked: its enqueue arguments but the body, the parts of its body but the trace, and
   * its flow control entry when it has one.
   */
  private prepareTask(label: string, task: TaskInput, now: number): PreparedTask {
    if (task === null || typeof task !== "object")
      throw new InvalidInputError(`${label} must be an object, got ${shown(task)}`);
    const id = checkId(label, "id", task.id);
    const at = `${label} (id ${id})`;
    checkTaskFields(at, task);
    const type = checkName(at, "type", task.type, LIMITS.typeMaxBytes);
    const given = task.group === undefined ? "" : checkGroup(at, "group", task.group);
    if (given.startsWith(SINGLETON_GROUP_PREFIX)) {
      throw new InvalidInputError(
        `${at}: group must not start with "${SINGLETON_GROUP_PREFIX}" (a singleton's lane: use singleton: { key }), got ${shown(given)}`,
      );
    }
    const flow = checkFlow(at, task);
    // A singleton runs in its key's lane, whose concurrency is 1 (lua/lib/lanes.lua group_policy).
    const group = flow?.mode === "singleton" ? `${SINGLETON_GROUP_PREFIX}${flow.key}` : given;
    return {
      id,
      priority: String(checkInteger(at, "priority", task.priority ?? 0, LIMITS.priorityMin, LIMITS.priorityMax)),
      runAtMs: String(dueTime(at, task, now)),
      type,
      group,
      payload: serializePayload(at, task.payload, this.settings.maxPayloadBytes),
      flow,
    };
  }
}

/** A task enqueue checked: what its arguments and body are built from. */
interface PreparedTask {
  id: string;
  priority: string;
  runAtMs: string;
  type: string;
  group: string;
  payload: string;
  flow: FlowEntry | undefined;
}

/** A task as a claim's reply row gives it. */
/** How long a task had been READY when a claim at `now` leased it: 0 when it says no time. */
function waitedSince(now: number, readySince: unknown): number {
  const since = Number(readySince);
  return String(readySince ?? "") === "" || !Number.isFinite(since) ? 0 : Math.max(0, now - since);
}

function claimedTask(now: number, record: Record<string, unknown>): ClaimedTask {
  const token = String(record.token);
  const rank = Number(token.slice(0, token.indexOf(".")));
  const body = parseBody(String(record.body));
  const task: ClaimedTask = {
    id: String(record.id),
    type: body.type,
    group: body.group === "" ? undefined : body.group,
    payload: body.payload,
    attempt: Number(record.attempt),
    token,
    rank,
    priority: priorityOfRank(rank),
    leaseDeadlineMs: Number(record.deadline),
    solo: record.solo === "1",
    waitedMs: waitedSince(now, record.readySince),
  };
  if (body.trace !== "") task.trace = body.trace;
  return task;
}

/** The types of a claim's `types` or `full`, checked. */
function checkTypeList(field: string, types: readonly string[] | undefined): readonly string[] {
  const list = types ?? [];
  if (!Array.isArray(list) || list.length > LIMITS.batchMax) {
    throw new InvalidInputError(
      `claim: ${field} must be an array of at most ${LIMITS.batchMax} task types, got ${shown(list)}`,
    );
  }
  for (const [index, type] of list.entries()) checkName(`claim: ${field}[${index}]`, "type", type, LIMITS.typeMaxBytes);
  return list;
}

/**
 * The items of a call on leased tasks: per item what `encode` gives, its id checked first;
 * `label` names the item in errors. Throws before anything is sent.
 */
function leasedItemArgs<T extends { id: string }>(
  where: string,
  items: T[],
  encode: (item: T, id: string, label: string) => string[],
): string[] {
  const args: string[] = [];
  checkBatch(where, items, LIMITS.batchMax);
  items.forEach((item, index) => {
    const label = `${where}: item ${index + 1}`;
    args.push(...encode(item, checkId(label, "id", item?.id), label));
  });
  return args;
}

function checkToken(label: string, token: unknown): string {
  if (typeof token !== "string" || token.length === 0 || token.length > 64) {
    throw new InvalidInputError(`${label}: token must be the string a claim returned, got ${shown(token)}`);
  }
  return token;
}

/** Progress a heartbeat carries: its JSON text, refused when it is not JSON or past LIMITS.progressMaxBytes. */
export function progressText(where: string, progress: unknown): string {
  return jsonText(where, "progress", progress, LIMITS.progressMaxBytes, (bytes) => `at most ${bytes}`);
}

/**
 * A value the queue keeps as `name` (a result, a progress): its JSON text, refused with an
 * InvalidInputError naming why when it is not JSON or longer than `maxBytes` (`cap` words the limit).
 */
function jsonText(where: string, name: string, value: unknown, maxBytes: number, cap: (max: number) => string) {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new InvalidInputError(`${where}: ${name} must be a JSON value (${(error as Error).message})`);
  }
  if (text === undefined) throw new InvalidInputError(`${where}: ${name} must be a JSON value, got ${typeof value}`);
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes) throw new InvalidInputError(`${where}: ${name} is ${bytes} bytes as JSON; ${cap(maxBytes)}`);
  return text;
}

/** waitFor's first pause between reads of a task's record, then doubled up to WAIT_MAX_MS. */
const WAIT_FIRST_MS = 50;
const WAIT_MAX_MS = 1_000;

/** A result an ack keeps: its JSON text, refused when it is not JSON or longer than `maxResultBytes`. */
function resultText(where: string, result: unknown, maxResultBytes: number): string {
  return jsonText(
    where,
    "result",
    result,
    maxResultBytes,
    (max) => `the queue keeps at most ${max} (maxResultBytes): keep a reference (an S3 key) instead`,
  );
}

/** The error a settle records: its text, cut to `maxErrorBytes`. */
function errorText(error: unknown, maxErrorBytes: number): string {
  const text = typeof error === "string" ? error : String(error);
  const bytes = Buffer.from(text);
  if (bytes.length <= maxErrorBytes) return text;
  // Cut on a character boundary so the stored text stays valid UTF-8.
  return bytes
    .subarray(0, maxErrorBytes)
    .toString()
    .replace(/\uFFFD+$/, "");
}

/** How many a maintenance call (reclaim, promote, trim, tick) moves at most. */
function maintenanceLimit(where: string, limit: number | undefined): number {
  return checkInteger(where, "limit", limit ?? DEFAULTS.maintenanceLimit, 1, LIMITS.maintenanceMax);
}

/** The stats of a reply of stats or tick, by the names their declarations give. */
function parseStats(values: ReturnType<typeof readReply<"stats">>): QueueStats {
  const pauses = String(values.pauses ?? "");
  return {
    ready: Number(values.ready),
    scheduled: Number(values.scheduled),
    leased: Number(values.leased),
    done: Number(values.done),
    failed: Number(values.failed),
    oldestReadyAgeMs: Number(values.oldestReadyAgeMs),
    oldestWaitingAgeMs: Number(values.oldestWaitingAgeMs),
    mostOverdueLeaseMs: Number(values.mostOverdueLeaseMs),
    dueScheduled: Number(values.dueScheduled),
    corrupt: Number(values.corrupt),
    paused: Number(values.paused) === 1,
    pausedTypes: pauses === "" ? [] : pauses.split(","),
  };
}

/**
 * An object of async methods whose module `load` imports at the first call of any of them (a chunk
 * of its own in a bundle), each call then made on what it built: for QueueAdmin, whose every public
 * method is async, so its callers see no difference.
 */
function loadedOnUse<T extends object>(load: () => Promise<T>): T {
  let loaded: Promise<T> | undefined;
  return new Proxy({} as T, {
    get(own, name) {
      // A method set on the object (a test's wrapper, a caller's override) is its own, as on any object.
      if (Reflect.has(own, name)) return Reflect.get(own, name);
      if (name === "then") return undefined; // not a thenable: `await queue.admin` is the object itself
      return async (...args: unknown[]) => {
        loaded ??= load();
        const target = (await loaded) as Record<PropertyKey, (...a: unknown[]) => unknown>;
        return target[name](...args);
      };
    },
  });
}

/** How long `waitFor` waits, and what ends it early. */
export interface WaitOptions {
  timeoutMs: number;
  signal?: AbortSignal;
}

/** `queue.result`'s and `waitFor`'s typing: the declaration and the type whose result is read. */
export interface ResultOf<Declaration extends ResultDeclaration, Type extends string> {
  /** Your `defineTasks(...)` declaration. */
  tasks: Declaration;
  /** The task's type, one of the declaration's that keeps its results (`keepResult: true`). */
  type: Type;
}

/** The type `{ tasks, type }` asks for, checked against the declaration; undefined when not given. */
function expectedType(label: string, options: Partial<ResultOf<ResultDeclaration, string>> | undefined) {
  if (options?.tasks === undefined && options?.type === undefined) return undefined;
  const types = options.tasks?.types;
  if (types === null || typeof types !== "object") {
    throw new InvalidInputError(
      `${label}: tasks must be your defineTasks(...) declaration, got ${shown(options.tasks)}`,
    );
  }
  const type = options.type;
  if (typeof type !== "string" || !Object.hasOwn(types, type)) {
    throw new InvalidInputError(
      `${label}: type must be one of the declaration's types (${Object.keys(types).join(", ")}), got ${shown(type)}`,
    );
  }
  if (types[type].keepResult !== true) {
    throw new InvalidInputError(
      `${label}: task type ${shown(type)} keeps no result: declare it with keepResult: true to read what its handler returns`,
    );
  }
  return type;
}
