/** Limits and defaults of a queue. Every default here is listed in docs/design.md "Default settings". */
export const LIMITS = {
  idMaxBytes: 128,
  typeMaxBytes: 64,
  queueNameMaxBytes: 64,
  priorityMin: -1000,
  priorityMax: 1000,
  /** Most tasks one enqueue, settle, extend, release or requeue call takes. */
  batchMax: 1000,
  /** Most tasks one claim leases. */
  claimMax: 1000,
  payloadNestingMax: 64,
  maxDelayMs: 366 * 24 * 3600 * 1000,
  leaseMaxMs: 24 * 3600 * 1000,
  maxAttemptsMax: 1000,
  retentionMaxMs: 366 * 24 * 3600 * 1000,
} as const;

export const DEFAULTS = {
  maxPayloadBytes: 256 * 1024,
  maxErrorBytes: 2048,
  leaseMs: 60_000,
  maxAttempts: 5,
  /** Due scheduled tasks a claim promotes before it pops. */
  promoteLimit: 1000,
  /** Leases, promotions and trims one reclaim/tick call handles at most. */
  maintenanceLimit: 1000,
  clockSkewMs: 2_000,
  doneRetentionMs: 24 * 3600 * 1000,
  failedRetentionMs: 7 * 24 * 3600 * 1000,
} as const;

/** Characters allowed in ids, types and queue names. */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]+$/;
