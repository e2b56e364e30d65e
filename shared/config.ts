/**
 * Limits and defaults of a queue: the one declaration every consumer takes them from. The Lua
 * scripts get the same numbers (bin/generate-lua.ts writes LUA_CONSTANTS into their shared prelude),
 * so a bound checked in TypeScript is the bound the script enforces. Every default here is listed
 * in docs/design.md "Default settings".
 */

/**
 * The storage format these scripts read and write (docs/storage.md), the only one: the queue's config
 * records it, and a queue of another format is refused (LEASEQ_FORMAT) before anything is written.
 */
export const FORMAT_VERSION = 2;

/** 9999-12-31T23:59:59.999Z: the latest time a task may be due, and the largest `now` accepted. */
const TIME_MAX_MS = 253_402_300_799_999;

export const LIMITS = {
  idMaxBytes: 128,
  typeMaxBytes: 64,
  groupMaxBytes: 128,
  queueNameMaxBytes: 64,
  priorityMin: -1000,
  priorityMax: 1000,
  /**
   * Arrival positions per priority level: a rank is `(priority - priorityMin) × rankSpan + arrival`,
   * an exact integer below 2^53 (docs/design.md). The one place this number is written.
   */
  rankSpan: 2 ** 42,
  /** Most tasks one enqueue, settle, extend, release, requeue or delete call takes. */
  batchMax: 1000,
  /** Most tasks one claim leases. */
  claimMax: 1000,
  payloadNestingMax: 64,
  /** Every time (now, runAt, a retry time) is an integer number of ms from 0 to this. */
  timeMaxMs: TIME_MAX_MS,
  leaseMaxMs: 24 * 3600 * 1000,
  maxAttemptsMax: 1000,
  /** The most stalls a queue may allow a task (maxStalls). */
  maxStallsMax: 1000,
  /** The most ended attempts a task's history may keep (historyAttempts). */
  historyAttemptsMax: 1000,
  retentionMaxMs: 366 * 24 * 3600 * 1000,
  clockSkewMaxMs: 3_600_000,
  /** The payload cap a queue may be configured with. */
  payloadMaxBytes: 64 * 1024 * 1024,
  errorMaxBytes: 65_536,
  /** The longest progress a heartbeat may carry (JSON bytes): `task.progress(value)`. */
  progressMaxBytes: 4096,
  /** The result cap a queue may be configured with (maxResultBytes). */
  resultMaxBytes: 1024 * 1024,
  /** Most tasks one reclaim, promote, trim or tick step moves. */
  maintenanceMax: 10_000,
  /** Ready tasks a claim reads at most when it has to choose (time left, paused types). */
  claimScanMax: 1000,
  /** Task types one queue may have paused at once (config `pauses`). */
  pausedTypesMax: 100,
  /** Minutes one history call counts at most. */
  historyMinutesMax: 240,
  /** The largest concurrency a group policy may give (0: no limit). */
  groupConcurrencyMax: 100,
  /** The most claims a rate may allow per interval. */
  rateMax: 1_000_000,
  /** The longest rate interval: one day. */
  rateIntervalMaxMs: 24 * 3600 * 1000,
  /**
   * The most values one variadic Redis command takes inside a script: Redis's Lua refuses to unpack
   * about 8,000, so every variadic call is sent in slices of at most this many (lua/lib/variadic.lua).
   */
  variadicMax: 1000,
  /** Records (tasks, set members, groups) one `check` call reads at most. */
  checkPageMax: 1000,
  /** A schedule's name: its slots' task ids are `<name>@<ISO time>` (docs/schedules.md). */
  scheduleNameMaxBytes: 64,
  /** A deployment's name (the owner of what its declaration writes: its schedules). */
  ownerMaxBytes: 64,
  /** Slots one plan call makes of one schedule: the finest schedule is the planning horizon / this. */
  scheduleSlotsMax: 100,
  /** Schedules one plan call takes. */
  planItemsMax: 200,
  /** A flow-control key (dedupe, debounce, throttle): 1-128 characters of ID_CHARACTERS, as an id. */
  flowKeyMaxBytes: 128,
  /** A singleton's key: its task's group is SINGLETON_GROUP_PREFIX + the key, within groupMaxBytes. */
  singletonKeyMaxBytes: 124,
  /** The longest flow-control window (a dedupe ttl, a debounce delay or wait, a throttle period): 366 days. */
  flowWindowMaxMs: 366 * 24 * 3600 * 1000,
} as const;

/** Wake-ups (docs/wake-ups.md). */
export const WAKE = {
  /** A worker that claimed within this long is draining: it covers work falling due meanwhile. */
  activeMs: 5_000,
  /**
   * A wake-up due this long ago that no worker answered (its invocation's first claim does) is taken
   * for lost: its message was never sent, or never delivered. One waiting for the event source's
   * concurrency is answered when an invocation frees.
   */
  pendingMs: 60_000,
  /** The longest delay of an SQS message (DelaySeconds 900): later wake-ups wait for the reclaimer. */
  horizonMaxMs: 900_000,
} as const;

export const DEFAULTS = {
  maxPayloadBytes: 256 * 1024,
  maxErrorBytes: 2048,
  /** A handler's result a type keeps (keepResult) is refused past this (JSON bytes). */
  maxResultBytes: 16 * 1024,
  leaseMs: 60_000,
  maxAttempts: 5,
  /**
   * Stalls (a lease running out while held: its worker crashed or stopped) after which a task is
   * FAILED; from its second it runs alone.
   */
  maxStalls: 3,
  /**
   * Ended attempts a task's history keeps (the newest): each with its start, wait, end, outcome and
   * error (maxErrorBytes). An attempt that ends DONE is the state itself.
   */
  historyAttempts: 10,
  /** Due scheduled tasks a claim promotes before it takes ready ones. */
  promoteLimit: 1000,
  /** Leases, promotions and trims one reclaim/tick call handles at most. */
  maintenanceLimit: 1000,
  clockSkewMs: 2_000,
  doneRetentionMs: 24 * 3600 * 1000,
  failedRetentionMs: 7 * 24 * 3600 * 1000,
  /** How long a type no declaration runs keeps its policy (configure retires it, docs/deploy.md). */
  typeRetireMs: 24 * 3600 * 1000,
} as const;

/**
 * The characters of a name, besides A-Z a-z 0-9: task types and queue names. Never a separator a
 * record uses (`|`, `,`, NUL), `:` (config fields `p:<type>`, `a:<type>`), `@` (a type's own record
 * `@<type>`), `#` (the task hash's own fields) or the braces of a hash tag.
 */
export const NAME_SYMBOLS = "_.-";
/**
 * The characters of an id, besides A-Z a-z 0-9: task ids and group names take a name's and `:` and
 * `@` (an EventBridge time `2026-12-01T21:15:00Z`, `user:42`, `<schedule>@<slot>`). Still never `|`,
 * `,`, NUL, `#`, a brace, a space or a character outside ASCII (docs/design.md "Ids and names").
 */
export const ID_SYMBOLS = "_.-:@";

/** A regular expression class of A-Z a-z 0-9 and `symbols`. */
const characterClass = (symbols: string) => `[A-Za-z0-9${symbols.replace(/[\\\]^-]/g, "\\$&")}]`;

/** Task types and queue names. */
export const NAME_PATTERN = new RegExp(`^${characterClass(NAME_SYMBOLS)}+$`);
/**
 * A deployment's name, the owner of what its declaration writes (its schedules): a name of at most
 * LIMITS.ownerMaxBytes, not "0" or "1" (what the schedules hash writes for a run-time schedule and
 * for one declared before owners were kept).
 */
export const DEPLOYMENT_PATTERN = new RegExp(`^(?![01]$)${characterClass(NAME_SYMBOLS)}{1,${LIMITS.ownerMaxBytes}}$`);
/** What DEPLOYMENT_PATTERN allows, in words, for an error message. */
export const DEPLOYMENT_RULE = `1-${LIMITS.ownerMaxBytes} characters of A-Z a-z 0-9 _ . - (not "0" or "1")`;
/** Task ids and group names. */
export const ID_PATTERN = new RegExp(`^${characterClass(ID_SYMBOLS)}+$`);
/**
 * How an id must not end: `:` and a lower-case letter is how the task hash names a task's own
 * fields (`<id>:s` its state, `<id>:x` why it was quarantined, and room for more), so an id
 * `a:s` would be the state of the task `a`. Groups have no such fields: a group may end so.
 */
export const ID_RESERVED_END = /:[a-z]$/;
/** The characters as a message states them: "A-Z a-z 0-9 _ . -". */
export const NAME_CHARACTERS = `A-Z a-z 0-9 ${[...NAME_SYMBOLS].join(" ")}`;
export const ID_CHARACTERS = `A-Z a-z 0-9 ${[...ID_SYMBOLS].join(" ")}`;

/** The constants the Lua prelude declares, by their Lua names. */
/**
 * The group of a singleton task (docs/flow-control.md): this prefix and its key. Its lane runs one
 * task at a time (lua/lib/lanes.lua group_policy); no caller may give a group starting with it.
 */
export const SINGLETON_GROUP_PREFIX = "@@s:";

export const LUA_CONSTANTS: Record<string, number> = {
  FORMAT_VERSION,
  ID_MAX_BYTES: LIMITS.idMaxBytes,
  TYPE_MAX_BYTES: LIMITS.typeMaxBytes,
  GROUP_MAX_BYTES: LIMITS.groupMaxBytes,
  PRIORITY_MIN: LIMITS.priorityMin,
  RANK_SEQ_SPAN: LIMITS.rankSpan,
  PRIORITY_MAX: LIMITS.priorityMax,
  BATCH_MAX: LIMITS.batchMax,
  CLAIM_MAX: LIMITS.claimMax,
  TIME_MAX_MS: LIMITS.timeMaxMs,
  LEASE_MAX_MS: LIMITS.leaseMaxMs,
  ATTEMPTS_MAX: LIMITS.maxAttemptsMax,
  STALLS_MAX: LIMITS.maxStallsMax,
  HISTORY_ATTEMPTS_MAX: LIMITS.historyAttemptsMax,
  RESULT_MAX_BYTES: LIMITS.resultMaxBytes,
  PROGRESS_MAX_BYTES: LIMITS.progressMaxBytes,
  RETENTION_MAX_MS: LIMITS.retentionMaxMs,
  SKEW_MAX_MS: LIMITS.clockSkewMaxMs,
  PAYLOAD_MAX_BYTES: LIMITS.payloadMaxBytes,
  ERROR_MAX_BYTES: LIMITS.errorMaxBytes,
  MAINTENANCE_MAX: LIMITS.maintenanceMax,
  CLAIM_SCAN_MAX: LIMITS.claimScanMax,
  PAUSED_TYPES_MAX: LIMITS.pausedTypesMax,
  HISTORY_MINUTES_MAX: LIMITS.historyMinutesMax,
  GROUP_CONCURRENCY_MAX: LIMITS.groupConcurrencyMax,
  VARIADIC_MAX: LIMITS.variadicMax,
  CHECK_PAGE_MAX: LIMITS.checkPageMax,
  SCHEDULE_NAME_MAX_BYTES: LIMITS.scheduleNameMaxBytes,
  OWNER_MAX_BYTES: LIMITS.ownerMaxBytes,
  SCHEDULE_SLOTS_MAX: LIMITS.scheduleSlotsMax,
  PLAN_ITEMS_MAX: LIMITS.planItemsMax,
  FLOW_KEY_MAX_BYTES: LIMITS.flowKeyMaxBytes,
  FLOW_WINDOW_MAX_MS: LIMITS.flowWindowMaxMs,
  SINGLETON_KEY_MAX_BYTES: LIMITS.singletonKeyMaxBytes,
  RATE_MAX: LIMITS.rateMax,
  RATE_INTERVAL_MAX_MS: LIMITS.rateIntervalMaxMs,
  DEFAULT_MAX_PAYLOAD_BYTES: DEFAULTS.maxPayloadBytes,
  DEFAULT_MAX_ERROR_BYTES: DEFAULTS.maxErrorBytes,
  DEFAULT_MAX_RESULT_BYTES: DEFAULTS.maxResultBytes,
  DEFAULT_LEASE_MS: DEFAULTS.leaseMs,
  DEFAULT_MAX_ATTEMPTS: DEFAULTS.maxAttempts,
  DEFAULT_MAX_STALLS: DEFAULTS.maxStalls,
  DEFAULT_HISTORY_ATTEMPTS: DEFAULTS.historyAttempts,
  DEFAULT_SKEW_MS: DEFAULTS.clockSkewMs,
  DEFAULT_DONE_RETENTION_MS: DEFAULTS.doneRetentionMs,
  DEFAULT_FAILED_RETENTION_MS: DEFAULTS.failedRetentionMs,
  TYPE_RETIRE_MS: DEFAULTS.typeRetireMs,
  WAKE_ACTIVE_MS: WAKE.activeMs,
  WAKE_PENDING_MS: WAKE.pendingMs,
  WAKE_HORIZON_MAX_MS: WAKE.horizonMaxMs,
};
