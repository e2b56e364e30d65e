import type { ItemStatus } from "./errors.js";

/** `corrupt`: its record could not be read, so it was set aside (see queue.admin.repair, queue.admin.delete). */
export type TaskState = "ready" | "scheduled" | "leased" | "done" | "failed" | "corrupt";

export const STATE_BY_LETTER: Record<string, TaskState> = {
  R: "ready",
  S: "scheduled",
  L: "leased",
  D: "done",
  F: "failed",
  C: "corrupt",
  W: "ready", // READY behind its group's head (docs/groups.md)
};

/** A task to enqueue. */
export interface TaskInput {
  /**
   * Caller-chosen id, `^[A-Za-z0-9_.:@-]{1,128}$` (`user:42`, `sweep-2026-12-01T21:15:00Z`), not
   * ending in `:` and a lower-case letter (docs/design.md "Ids and names"); enqueue is idempotent by it.
   */
  id: string;
  /** Task type, `^[A-Za-z0-9_.-]{1,64}$`: selects the handler and its policy. */
  type: string;
  /** Any JSON value; serialized size capped (default 256 KiB). Defaults to `{}`. */
  payload?: unknown;
  /** Integer from -1000 to 1000; lower runs sooner. Default 0. */
  priority?: number;
  /** Run no sooner than this many ms from `now`. */
  delayMs?: number;
  /** Run no sooner than this time (ms since epoch, or a Date), up to 9999-12-31. */
  runAt?: number | Date;
  /** The group the task belongs to (`^[A-Za-z0-9_.:@-]{1,128}$`, `@email` too); none by default. */
  group?: string;
  /** Within `ttlMs` of the first enqueue with `key`, another enqueues nothing (docs/flow-control.md). */
  dedupe?: DedupeOptions;
  /** One task per `key` runs `delayMs` after the last enqueue, at most `maxWaitMs` after the first. */
  debounce?: DebounceOptions;
  /** At most one task per `key` per `perMs`; the rest dropped, or deferred with `onLimit: "defer"`. */
  throttle?: ThrottleOptions;
  /** At most one task per `key` waiting and one running; a new one replaces the one waiting. Takes no `group`. */
  singleton?: SingletonOptions;
}

/** The fields a TaskInput may have: enqueue refuses a task with any other. */
export const TASK_INPUT_FIELDS = [
  "id",
  "type",
  "payload",
  "priority",
  "delayMs",
  "runAt",
  "group",
  "dedupe",
  "debounce",
  "throttle",
  "singleton",
] as const satisfies ReadonlyArray<keyof TaskInput>;

export interface EnqueueResult {
  id: string;
  /**
   * `duplicate`: the id was already known, or its dedupe key holds another task of the window
   * (`existingId`); nothing changed. `throttled`: its throttle key's period was taken and it was
   * dropped; nothing was written.
   */
  status: "ok" | "duplicate" | "throttled";
  /** Its state (a dedupe duplicate: the existing task's); undefined when throttled or the existing task is gone. */
  state: TaskState | undefined;
  /** A dedupe duplicate: the task enqueued first with its key. */
  existingId?: string;
  /** Enqueued by a debounce: the waiting task of its key it replaced (removed). */
  replaced?: string;
}

/** At most `max` claims per `perMs` ms (fixed windows: any span of one interval sees at most 2 × max). */
export interface RateLimit {
  max: number;
  perMs: number;
}

/**
 * How the tasks of one group run (docs/groups.md). A group is a task type's tasks with the same
 * `group`; groups take turns at each claim, whatever their policy.
 */
export interface GroupPolicy {
  /** At most this many tasks of one group leased at once, 1 to 100. Default: no limit. */
  concurrency?: number;
  /**
   * Tasks of a group complete in rank order through retries, backoffs, releases and reclaims: a
   * retried task holds its group until it is done or failed (needs concurrency 1). Default false.
   */
  ordered?: boolean;
  /**
   * What an ordered group does when a task of it ends FAILED: `continue` (the default) runs its next
   * task; `hold` waits behind the FAILED task until an operator requeues it (it then runs first) or
   * skips it (`leaseq skip`, the dashboard): for work where task n+1 assumes task n. Needs ordered.
   */
  onFailure?: "continue" | "hold";
  /** At most this many claims of one group per interval. Default: no limit. */
  rate?: RateLimit;
}

/** A type's group policy, and its rate across all its groups. */
export interface TypeGroupPolicy extends GroupPolicy {
  /** At most this many claims of the type (all its groups, and its tasks without one) per interval. */
  typeRate?: RateLimit;
}

/** A broken invariant `queue.admin.check` found (docs/design.md "Checking a queue"). */
export interface CheckProblem {
  /** What kind: no_set, two_sets, unreadable, group_parked, group_stalled, hold, wake, ... */
  code: string;
  /** The task id, group (`<type>|<group>`), type record (`@<type>`) or config field it is about. */
  subject: string;
  /** What was wrong, in words. */
  detail: string;
  /** Repaired in the same step (`repair: true` and the problem is one a check repairs safely). */
  repaired: boolean;
}

/** One group's counts (queue.admin.groups). */
export interface GroupStats {
  type: string;
  group: string;
  /** Leased now (with an ordered group's retry waiting for its time). */
  leased: number;
  /** READY, parked ones included. */
  ready: number;
  /** READY but waiting behind the group's concurrency, rate or order (docs/groups.md). */
  parked: number;
  /** The FAILED task an ordered group with onFailure "hold" waits behind (requeue or skip it). */
  heldBy: string | undefined;
  /**
   * How long its parked tasks have waited, from when its next parked task became READY (undefined
   * when none is parked): a group that lets nothing out (a long head, a FAILED task held, its rate)
   * keeps growing here.
   */
  oldestWaitingAgeMs: number | undefined;
}

/** Lease and retry policy of one task type, as the claim script needs it. */
export interface LeasePolicy {
  leaseMs: number;
  maxAttempts: number;
}

export interface ClaimedTask {
  id: string;
  type: string;
  group: string | undefined;
  /** The payload as JSON text. */
  payload: string;
  /** 1 on the first claim. */
  attempt: number;
  /** Fences settle/extend/release: only the holder of the current lease can use it. */
  token: string;
  rank: number;
  priority: number;
  leaseDeadlineMs: number;
  /**
   * The task stalled twice (its lease ran out while held: a worker that crashed, perhaps because of
   * it): run it alone, so that a task that crashes its worker uses up only its own attempts.
   */
  solo: boolean;
  /** How long it had been READY (due) when this claim leased it, ms: its queue wait. */
  waitedMs: number;
  /**
   * The W3C traceparent of the span that sent it, when it was sent in a trace (docs/lambda.md#tracing);
   * absent otherwise.
   */
  trace?: string;
}

/** What a claim answers besides its tasks (Queue.claimOrNextDue). */
export interface ClaimOutcome {
  tasks: ClaimedTask[];
  /** When nothing was leased: when scheduled work next falls due (or an ordered queue's hold ends). */
  nextDueMs: number | undefined;
  /** A solo task waits for a caller running nothing (one that claimed with `busy`). */
  soloWaiting: boolean;
  /** A wake-up to send now for another worker: tasks of types the caller had no `room` for were left READY. */
  wakeAtMs: number | undefined;
}

export type SettleItem =
  | {
      id: string;
      token: string;
      outcome: "ack";
      /**
       * The handler's result, kept with the DONE task until it is trimmed (`queue.result`,
       * `waitFor`): any JSON value, at most the queue's `maxResultBytes` as JSON. Omitted: none.
       */
      result?: unknown;
    }
  | { id: string; token: string; outcome: "retry"; retryAtMs: number; error: string }
  | { id: string; token: string; outcome: "fail"; error: string };

export interface SettleResult {
  id: string;
  status: ItemStatus;
  /** The task's state after the call (undefined for an unknown id). */
  state: TaskState | undefined;
}

export interface ExtendResult {
  id: string;
  status: ItemStatus;
  /** The new lease deadline when status is "ok". */
  leaseDeadlineMs: number | undefined;
}

export interface ItemResult {
  id: string;
  status: ItemStatus;
}

export interface ReclaimResult {
  /** Back to READY with their original rank. */
  reclaimed: string[];
  /** To FAILED: their attempts were used up. */
  failed: string[];
  /** True when the batch was full: call again. */
  more: boolean;
}

export interface QueueStats {
  ready: number;
  scheduled: number;
  leased: number;
  done: number;
  failed: number;
  /** How long the task at the head of the ready queue (the next to run) has waited. */
  oldestReadyAgeMs: number;
  /**
   * How long the oldest waiting task has waited, parked ones included: a group that holds its tasks
   * back (a long-running head, a FAILED task held, its rate) shows here while the ready set's head
   * moves on. A group's parked tasks count from its next parked one (docs/groups.md).
   */
  oldestWaitingAgeMs: number;
  /** How far past its deadline the most overdue lease is (0 if none). */
  mostOverdueLeaseMs: number;
  /** Scheduled tasks already due, waiting to be promoted. */
  dueScheduled: number;
  /** Tasks set aside because their record could not be read (`list("corrupt")`, `repair`, `delete`). */
  corrupt: number;
  /** The queue is paused (`pause()`): its claims lease nothing. */
  paused: boolean;
  /** Task types paused on their own, sorted. */
  pausedTypes: string[];
}

/** Tasks finished per minute, oldest first: `done[i]` and `failed[i]` from `startMs + i * bucketMs`. */
export interface QueueHistory {
  startMs: number;
  bucketMs: number;
  done: number[];
  failed: number[];
}

/** What `find` selects: every condition given must hold. */
export interface TaskFilter {
  /** The task's type, exactly. */
  type?: string;
  /** The task's group, exactly. */
  group?: string;
  /** A substring of its last error. */
  error?: string;
  /** Its time (due, finished, quarantined) is more than this many ms before `now` (then `now` is required). */
  olderThanMs?: number;
  now?: number;
  /** Where to go on from: a previous call's `next`. Default 0. */
  cursor?: number;
  /** How many of the state's tasks one call reads, 1..1000. Default 1000. */
  scan?: number;
}

/**
 * A wake-up for another deployment's wake queue: on a queue two or more deployments share, work of
 * a type another deployment runs wakes that deployment's workers (docs/wake-ups.md).
 */
export interface WakeTo {
  atMs: number;
  queueUrl: string;
  /** The partition whose work it is for, on a partitioned queue (docs/partitions.md): the wake-up names it. */
  partition?: number;
}

export interface TickResult extends QueueStats {
  /** A wake-up to send for this time (ms), when the tick was given a wakeHorizonMs and arranged one. */
  wakeAtMs?: number;
  /** When the first schedule is due for planning (ms), or undefined when none is (docs/schedules.md). */
  planAtMs?: number;
  reclaimed: number;
  reclaimFailed: number;
  promoted: number;
  doneTrimmed: number;
  failedTrimmed: number;
  /** Tasks that finished DONE since the previous tick counted them (by finish time; 0 on a first tick). */
  finishedDone: number;
  /** Tasks that finished FAILED since the previous tick counted them. */
  finishedFailed: number;
}

/** The field of TaskInfo that holds the time a task's state gives it. */
export const TIME_OF_STATE = {
  ready: "readySince",
  scheduled: "dueAt",
  leased: "leaseDeadline",
  done: "finishedAt",
  failed: "finishedAt",
  corrupt: "setAsideAt",
} as const satisfies Record<TaskState, keyof TaskInfo>;

export interface TaskInfo {
  id: string;
  state: TaskState;
  type: string;
  group: string | undefined;
  priority: number;
  attempts: number;
  /** 0 until the first claim records the type's policy. */
  maxAttempts: number;
  /** READY: since when (ms). The one time a task has is named for its state (TIME_OF_STATE). */
  readySince?: number;
  /** SCHEDULED: when it falls due (ms). */
  dueAt?: number;
  /** LEASED: when its lease ends (ms). */
  leaseDeadline?: number;
  /** DONE or FAILED: when it finished (ms). */
  finishedAt?: number;
  /** CORRUPT: when it was set aside (ms). */
  setAsideAt?: number;
  lastError: string;
  /** JSON text; empty once DONE. */
  payload: string;
  rank: number;
  enqueuedAtMs: number;
  /** Leases that ran out while held (its worker crashed or stopped); at maxStalls it is FAILED. */
  stalls: number;
  /** A FAILED task its ordered group waits behind (onFailure "hold"): requeue or skip it. */
  holdsGroup: boolean;
  /** DONE: the result its ack kept (parsed JSON), undefined when none. */
  result?: unknown;
  /** What its handler last reported with `task.progress(value)` (parsed JSON), undefined when nothing. */
  progress?: unknown;
  /** The W3C traceparent it was sent in (docs/lambda.md#tracing), while its body is kept (not once DONE). */
  traceparent?: string;
  /**
   * Its attempts, oldest first: those that ended other than DONE (the newest `historyAttempts` of
   * them), then the one running (LEASED) or the one that ended DONE.
   */
  history: TaskAttempt[];
}

/** Where a task stands (`queue.result`, `queue.waitFor`). */
export interface TaskStanding<Result = unknown> {
  id: string;
  /** Its type. */
  type: string;
  state: TaskState;
  /** DONE or FAILED. */
  finished: boolean;
  /** DONE: the result its ack kept (a type with `keepResult`), undefined when none. */
  result: Result | undefined;
  /** What its handler last reported with `task.progress(value)` (sent with a heartbeat), if anything. */
  progress: unknown;
  /** FAILED: its last error. */
  error: string | undefined;
  /** DONE or FAILED: when (ms). */
  finishedAt: number | undefined;
}

/** One attempt of a task (`inspect`'s history). */
export interface TaskAttempt {
  /** Its number (a lease its holder never confirmed is not charged: the next may have the same). */
  attempt: number;
  /** When its claim leased it (ms); undefined when not recorded (a lease of leaseq before 0.2). */
  startedAtMs: number | undefined;
  /** How long the task had waited READY for it (ms). */
  waitedMs: number | undefined;
  /** When it ended (ms); undefined while it runs. */
  endedAtMs: number | undefined;
  /**
   * How it ended: retried (a retry to come), failed (FAILED), expired (its lease ran out), done, or
   * running; "edited" is no run but its payload changed by `amend` (the error is the note).
   */
  outcome: "retried" | "failed" | "expired" | "done" | "running" | "edited";
  /** Its error, cut to maxErrorBytes ("" when none); for "edited", who changed it and how. */
  error: string;
  /** endedAtMs - startedAtMs when both are known. */
  runMs: number | undefined;
}

export interface ListedTask {
  id: string;
  /** ready: rank; scheduled: due ms; leased: deadline ms; done/failed: finished ms. */
  score: number;
  type: string;
  attempts: number;
  /** The last error (the reason, for a corrupt task); "" if none. */
  lastError: string;
  /** Its group, undefined when it has none. */
  group: string | undefined;
}

// The flow-control options a task may carry (docs/flow-control.md; shared/flow.ts checks them).

/** Within `ttlMs` of the first enqueue with this key, another enqueues nothing and answers `duplicate`. */
export interface DedupeOptions {
  key: string;
  ttlMs: number;
}

/**
 * One task runs `delayMs` after the last enqueue with this key, with the last payload, and no later
 * than `maxWaitMs` after the first enqueue of the window.
 */
export interface DebounceOptions {
  key: string;
  delayMs: number;
  maxWaitMs: number;
}

/** At most one task per key per `perMs`; the others are dropped (`throttled`) or deferred to the next free period. */
export interface ThrottleOptions {
  key: string;
  perMs: number;
  /** `drop` (default): answered `throttled`, nothing enqueued; `defer`: runs at the next free period. */
  onLimit?: "drop" | "defer";
}

/**
 * At most one task per key waiting and one running: a new one replaces the one waiting (never
 * claimed), and waits while one runs. Its task runs in a lane of its own (it takes no `group`).
 */
export interface SingletonOptions {
  key: string;
}

/**
 * A type only, never set: what a declaration's handlers return, per task type name. `defineTasks`
 * reads it from the handlers; `queue.result(id, { tasks, type })` types the result by it.
 */
export declare const DECLARED_RESULTS: unique symbol;

/** A task declaration as `queue.result` reads it: its types' `keepResult`, and its handlers' results. */
export interface ResultDeclaration<Results extends Record<string, unknown> = Record<string, unknown>> {
  readonly types: Readonly<Record<string, { readonly keepResult: boolean }>>;
  readonly [DECLARED_RESULTS]?: Results;
}

/** The results of a declaration, per type name: what its handler returns, awaited. */
export type TaskResults<Declaration extends ResultDeclaration> =
  Declaration extends ResultDeclaration<infer Results> ? Results : never;
