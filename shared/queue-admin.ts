// The operator's verbs on a queue (`queue.admin`): read a task or a page of them, change tasks by
// id (requeue, skip, cancel, repair, delete) or by state (purge), pause and resume, check the
// queue's consistency, drop it. The CLI and the dashboard are built on them; a worker needs none.
import { LIMITS, NAME_PATTERN } from "./config.js";
import { InvalidInputError, itemStatus } from "./errors.js";
import { parsePartitionTag, queueKeys } from "./keys.js";
import { type OperationName, readReply, replyRows } from "./protocol/index.js";
import { historyEntryRegExp, VALUES } from "./protocol/values.js";
import { callId, type QueueContext, readWakeUps } from "./queue-context.js";
import type { Store } from "./store.js";
import {
  type CheckProblem,
  type GroupStats,
  type ItemResult,
  type ListedTask,
  type QueueHistory,
  STATE_BY_LETTER,
  type TaskAttempt,
  type TaskFilter,
  type TaskInfo,
  type TaskState,
  TIME_OF_STATE,
  type WakeTo,
} from "./types.js";
import {
  checkBatch,
  checkGroup,
  checkId,
  checkInteger,
  checkName,
  checkNow,
  serializePayload,
  shown,
} from "./validate.js";

/** The states `list` pages through (`corrupt`: the quarantined tasks). */
export const LISTABLE: TaskState[] = ["ready", "scheduled", "leased", "done", "failed", "corrupt"];

/**
 * The operator's verbs on one queue, `queue.admin`. Each is one script call on the queue's context
 * (purge and checkAll a few), inputs validated before anything is sent.
 */
export class QueueAdmin {
  constructor(private readonly context: QueueContext) {}

  /** One task's state and record, or undefined when the id is unknown. A quarantined one is "corrupt". */
  async inspect(id: string): Promise<TaskInfo | undefined> {
    checkId("inspect", "id", id);
    const reply = await this.context.run("inspect", { id });
    if (reply.length === 0) return undefined;
    const record = readReply("inspect", reply);
    const state = STATE_BY_LETTER[String(record.state)];
    return {
      id,
      state,
      type: String(record.type),
      group: String(record.group) === "" ? undefined : String(record.group),
      priority: Number(record.priority),
      attempts: Number(record.attempts),
      maxAttempts: Number(record.maxAttempts),
      [TIME_OF_STATE[state]]: Number(record.at),
      lastError: String(record.lastError),
      payload: String(record.payload),
      rank: Number(record.rank),
      enqueuedAtMs: Number(record.enqueuedAtMs),
      stalls: Number(record.stalls),
      holdsGroup: String(record.holding) === "1",
      result: resultOf(String(record.result ?? "")),
      progress: resultOf(String(record.progress ?? "")),
      ...(String(record.trace ?? "") === "" ? {} : { traceparent: String(record.trace) }),
      history: taskHistory(String(record.history ?? ""), String(record.run ?? ""), state, {
        attempts: Number(record.attempts),
        at: Number(record.at),
        lastError: String(record.lastError),
      }),
    };
  }

  /**
   * Lets go the ordered groups that wait behind these FAILED tasks (onFailure "hold"): each task stays
   * FAILED (a requeue later takes its turn again) and its group runs its next task. A task no group
   * waits behind answers `not_holding`; one not FAILED `not_failed`.
   */
  async skip(ids: string[], options: { now: number }): Promise<ItemResult[]> {
    return this.byIds("skip", ids, options.now);
  }

  /** Sends FAILED tasks back to READY with their original rank and fresh attempts. */
  async requeue(ids: string[], options: { now: number }): Promise<ItemResult[]> {
    return this.byIds("requeue", ids, options.now);
  }

  /**
   * Gives one FAILED task a new payload and sends it back to READY as `requeue` does: for a payload a
   * handler could not take (a customer's file fixed by hand). The payload is checked as `enqueue`
   * checks one; `note` (at most 200 bytes: who and why) goes into its history as an attempt with
   * outcome "edited". Status `not_failed` for a task in any other state, nothing changed.
   */
  async amend(id: string, payload: unknown, options: { now: number; note?: string }): Promise<ItemResult> {
    checkId("amend", "id", id);
    const now = checkNow("amend", options.now);
    const note = options.note ?? "";
    if (typeof note !== "string" || Buffer.byteLength(note) > 200) {
      throw new InvalidInputError(`amend: note must be a string of at most 200 bytes, got ${shown(note)}`);
    }
    const text = serializePayload(`amend ${id}`, payload, this.context.settings.maxPayloadBytes);
    const reply = await this.context.run("amend", { now: String(now), id, payload: text, note });
    return { id, status: itemStatus("amend", readReply("amend", reply).status) };
  }

  /**
   * Deletes tasks by id, records included: READY, SCHEDULED, DONE, FAILED or quarantined ones. A
   * LEASED task is refused (status "leased"): a worker is running it. With `state`, a task no longer
   * in that state (it moved on since a filter found it) is left alone ("not_in_state"). A wake-up
   * arranged only for what it deleted is forgotten by `now`, or by the store's clock without one.
   */
  async delete(
    ids: string[],
    options: { state?: Exclude<TaskState, "leased">; now?: number } = {},
  ): Promise<ItemResult[]> {
    checkIds("delete", ids);
    const state = options.state ?? "";
    if (state !== "" && (!LISTABLE.includes(state) || state === ("leased" as TaskState))) {
      throw new InvalidInputError(
        `delete: state must be one of ${LISTABLE.filter((s) => s !== "leased").join(", ")}, got ${shown(state)}`,
      );
    }
    const now = options.now === undefined ? 0 : checkNow("delete", options.now);
    const reply = await this.context.run("delete", { now: String(now), state }, ids);
    return this.idStatuses("delete", ids, reply);
  }

  /**
   * Brings quarantined tasks (see `list("corrupt")`) back to READY when their body can still be
   * read; "unrepairable" when it cannot (only delete is left then).
   */
  async repair(ids: string[], options: { now: number }): Promise<ItemResult[]> {
    return this.byIds("repair", ids, options.now);
  }

  /**
   * Stops tasks from running (again): READY, SCHEDULED and LEASED ones end FAILED with the error
   * "cancelled", the lease revoked (its worker's settle is answered "stale_token"). DONE tasks are
   * "already_done", FAILED ones "already_failed"; `requeue` brings a cancelled task back.
   */
  async cancel(ids: string[], options: { now: number }): Promise<ItemResult[]> {
    return this.byIds("cancel", ids, options.now);
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
   * arranged to look: send a wake-up (the producer's `wake()`), or the reclaimer's next run starts
   * a worker (a drain invocation).
   */
  async resume(options: {
    now: number;
    type?: string;
  }): Promise<{ changed: boolean; wakeAtMs: number | undefined; wakeTo: WakeTo[] }> {
    return this.pauseOrResume("resume", options);
  }

  private async pauseOrResume(action: "pause" | "resume", options: { now: number; type?: string }) {
    const now = checkNow(action, options.now);
    if (options.type !== undefined) checkName(action, "type", options.type, LIMITS.typeMaxBytes);
    const reply = await this.context.run("pause", {
      now: String(now),
      action,
      type: options.type ?? "",
      callId: callId(),
    });
    const { changed, wakeAt } = readReply("pause", reply);
    return { changed: Number(changed) === 1, ...readWakeUps(wakeAt) };
  }

  /**
   * Tasks finished per minute over the last `minutes` (default 60, at most 240), oldest first, from
   * the finish times of the DONE and FAILED sets (what retention trimmed is not counted). Read-only.
   */
  async history(options: { now: number; minutes?: number }): Promise<QueueHistory> {
    const now = checkNow("history", options.now);
    const minutes = checkInteger("history", "minutes", options.minutes ?? 60, 1, LIMITS.historyMinutesMax);
    const reply = await this.context.run("history", { now: String(now), minutes: String(minutes) });
    const { start, rows: minutesFound } = readReply("history", reply);
    return {
      startMs: Number(start),
      bucketMs: 60_000,
      done: minutesFound.map((minute) => Number(minute.done)),
      failed: minutesFound.map((minute) => Number(minute.failed)),
    };
  }

  /**
   * A page of the queue's groups with their counts: the groups with READY or leased tasks (others
   * have no record). Pass the returned `next` as `cursor` to go on; undefined at the end. `count`
   * (1-1000, default 100) is about how many groups one call reads.
   */
  async groups(
    options: { cursor?: string; count?: number; now?: number } = {},
  ): Promise<{ groups: GroupStats[]; next: string | undefined }> {
    const cursor = options.cursor ?? "0";
    const now = checkNow("groups", options.now ?? Date.now());
    if (typeof cursor !== "string" || !/^\d{1,20}$/.test(cursor)) {
      throw new InvalidInputError(`groups: cursor must be a cursor a previous call returned, got ${shown(cursor)}`);
    }
    const count = checkInteger("groups", "count", options.count ?? 100, 1, 1000);
    const reply = await this.context.run("groups", { cursor, count: String(count) });
    const { cursor: next, rows } = readReply("groups", reply);
    const groups = rows.map(
      (record): GroupStats => ({
        type: String(record.type),
        group: String(record.group),
        leased: Number(record.leased),
        ready: Number(record.ready),
        parked: Number(record.parked),
        heldBy: String(record.held) === "" ? undefined : String(record.held),
        oldestWaitingAgeMs:
          String(record.parkedSince) === "" ? undefined : Math.max(0, now - Number(record.parkedSince)),
      }),
    );
    return { groups, next: String(next) === "" ? undefined : String(next) };
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
    if (filter.group !== undefined) checkGroup("find", "group", filter.group);
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
    const reply = await this.context.run("list", { state, offset: String(offset), limit: String(limit) });
    return replyRows("list", reply).map(
      (record): ListedTask => ({
        id: String(record.id),
        score: Number(record.score),
        type: String(record.type),
        attempts: Number(record.attempts),
        lastError: String(record.lastError),
        group: String(record.group) === "" ? undefined : String(record.group),
      }),
    );
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
    if (typeof cursor !== "string" || cursor.length > 64 || (cursor !== "" && !/^[a-z]+:p?[\d:]+$/.test(cursor))) {
      throw new InvalidInputError(`check: cursor must be one a previous check returned, got ${shown(cursor)}`);
    }
    const count = checkInteger("check", "count", options.count ?? LIMITS.checkPageMax, 1, LIMITS.checkPageMax);
    const reply = await this.context.run("check", {
      now: String(now),
      cursor,
      count: String(count),
      repair: options.repair ? "1" : "0",
    });
    const { cursor: next, rows } = readReply("check", reply);
    const problems = rows.map(
      (record): CheckProblem => ({
        code: String(record.code),
        subject: String(record.subject),
        detail: String(record.detail),
        repaired: Number(record.repaired) === 1,
      }),
    );
    return { problems, next: String(next ?? "") === "" ? undefined : String(next) };
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
   * InvalidInputError before anything is sent when `confirm` is not the name. With `only:
   * "drained"` (a shrink's partition), only when no task waits or runs there, checked in the same
   * script as the delete: -1, nothing deleted, when one does.
   */
  async drop(options: { confirm: string; only?: "drained" }): Promise<number> {
    if (options?.confirm !== this.context.name) {
      throw new InvalidInputError(
        `drop: confirm must repeat the queue name "${this.context.name}" exactly, got ${shown(options?.confirm)}`,
      );
    }
    if (options.only !== undefined && options.only !== "drained") {
      throw new InvalidInputError(`drop: only must be "drained" or absent, got ${shown(options.only)}`);
    }
    const [deleted] = await this.context.run("drop", {
      confirm: options.confirm,
      name: this.context.name,
      only: options.only ?? "",
    });
    return Number(deleted);
  }

  /** Per id, the status its row of a reply of ids answers. */
  /** A call on tasks by id at `now` (skip, requeue, repair, cancel): checked, sent, each id's status. */
  private async byIds(
    name: Extract<OperationName, "requeue" | "cancel" | "repair" | "skip">,
    ids: string[],
    now: number,
  ): Promise<ItemResult[]> {
    const checked = checkNow(name, now);
    checkIds(name, ids);
    return this.idStatuses(name, ids, await this.context.run(name, { now: String(checked) }, ids));
  }

  private idStatuses(
    name: Extract<OperationName, "requeue" | "cancel" | "delete" | "repair" | "skip">,
    ids: string[],
    reply: unknown[],
  ): ItemResult[] {
    return replyRows(name, reply, ids.length).map((record, i) => ({
      id: ids[i],
      status: itemStatus(name, record.status),
    }));
  }
}

/** Ids of a call on tasks by id: a batch of valid ids. Throws before anything is sent. */
function checkIds(where: string, ids: string[]): void {
  checkBatch(where, ids, LIMITS.batchMax);
  for (const [index, id] of ids.entries()) checkId(`${where}: id ${index + 1}`, "id", id);
}

/**
 * The names of the leaseq queues on the store's server (their config keys), sorted: SCAN, so for
 * operators, not for a hot path. Needs a store with `scanKeys` (both stores have it).
 */
export async function listQueues(store: Store, options: { keyPrefix?: string } = {}): Promise<string[]> {
  return (await listQueuePartitions(store, options)).map((queue) => queue.name);
}

/**
 * The leaseq queues on the store's server with the partitions found of each (docs/partitions.md):
 * 0 is the queue's own tag, k > 0 a config under `<name>#<k>.<salt>`. Sorted by name; a queue
 * whose partition 0 has no config is not listed.
 */
export async function listQueuePartitions(
  store: Store,
  options: { keyPrefix?: string } = {},
): Promise<Array<{ name: string; partitions: number[] }>> {
  if (!store.scanKeys) throw new InvalidInputError("listQueues: this store cannot SCAN (no scanKeys)");
  const prefix = options.keyPrefix ?? "leaseq";
  const suffix = queueKeys("q", prefix).config.slice(`${prefix}:{q}`.length);
  const found = new Map<string, Set<number>>();
  let cursor = "0";
  do {
    const [next, keys] = await store.scanKeys(cursor, `${prefix}:{*}${suffix}`, 1000);
    for (const key of keys) {
      if (!key.endsWith(`}${suffix}`)) continue;
      const tag = key.slice(prefix.length + 2, key.length - suffix.length - 1);
      const partition = parsePartitionTag(tag);
      const name = partition ? partition.name : tag;
      // A key that only looks like one (a name leaseq would refuse) is not a queue of leaseq's.
      if (!NAME_PATTERN.test(name) || name.length > LIMITS.queueNameMaxBytes) continue;
      const set = found.get(name) ?? new Set<number>();
      set.add(partition ? partition.partition : 0);
      found.set(name, set);
    }
    cursor = next;
  } while (cursor !== "0");
  return [...found]
    .filter(([, partitions]) => partitions.has(0))
    .map(([name, partitions]) => ({ name, partitions: [...partitions].sort((a, b) => a - b) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * A task's attempts from its history field (HISTORY_ENTRY of shared/protocol/values.ts, oldest first:
 * lib/records.lua history_add) and its state's run (the attempt running, or the one that ended
 * DONE). An entry that cannot be read ends the list.
 */
export function taskHistory(
  text: string,
  run: string,
  state: TaskState,
  current: { attempts: number; at: number; lastError: string },
): TaskAttempt[] {
  const attempts: TaskAttempt[] = [];
  const bytes = new TextEncoder().encode(text);
  const decoder = new TextDecoder();
  const entry = historyEntryRegExp();
  let at = 0;
  while (at < bytes.length) {
    const head = entry.exec(decoder.decode(bytes.subarray(at, at + 120)));
    if (!head) break;
    const errorAt = at + head[0].length;
    const errorEnd = errorAt + Number(head[6]);
    if (errorEnd > bytes.length) break;
    attempts.push(
      attemptOf(
        Number(head[1]),
        head[2],
        head[3],
        head[4],
        head[5] as TaskAttempt["outcome"],
        decoder.decode(bytes.subarray(errorAt, errorEnd)),
      ),
    );
    at = errorEnd;
  }
  const [started = "", since = ""] = run.split(VALUES.RUN.separator);
  if (run !== "" && (state === "leased" || state === "done")) {
    const ended = state === "done" ? String(current.at) : "";
    const waited = started !== "" && since !== "" ? String(Math.max(0, Number(started) - Number(since))) : "";
    attempts.push(attemptOf(current.attempts, started, waited, ended, state === "done" ? "done" : "running", ""));
  }
  return attempts;
}

function attemptOf(
  attempt: number,
  started: string,
  waited: string,
  ended: string,
  outcome: TaskAttempt["outcome"],
  error: string,
): TaskAttempt {
  const number = (text: string) => (text === "" ? undefined : Number(text));
  const startedAtMs = number(started);
  const endedAtMs = number(ended);
  return {
    attempt,
    startedAtMs,
    waitedMs: number(waited),
    endedAtMs,
    outcome,
    error,
    runMs: startedAtMs !== undefined && endedAtMs !== undefined ? endedAtMs - startedAtMs : undefined,
  };
}

/** A kept result as stored (JSON text; "" for none): parsed, or the text itself when it is not JSON. */
function resultOf(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
