/** Every error leaseq throws is a QueueError; `code` tells which kind. */
export class QueueError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
  // Names are literals, not new.target.name: bundles are minified without keepNames.
  override name = "QueueError";
}

/** Thrown before anything is sent to Redis when a call's input is malformed. */
export class InvalidInputError extends QueueError {
  override name = "InvalidInputError";
  constructor(message: string) {
    super("LEASEQ_INVALID_INPUT", message);
  }
}

/** Thrown when a script refused its arguments (LEASEQ_BAD_ARGUMENT); nothing was written. */
export class ScriptArgumentError extends QueueError {
  override name = "ScriptArgumentError";
  constructor(message: string) {
    super("LEASEQ_BAD_ARGUMENT", message);
  }
}

/** Thrown when Redis could not be reached or answered with an error; `redisCode` is its code. */
export class StoreError extends QueueError {
  override name = "StoreError";
  constructor(
    message: string,
    readonly redisCode: string | undefined,
    options?: { cause?: unknown },
  ) {
    super("LEASEQ_STORE", message, options);
  }
}

/**
 * Thrown when Redis or Upstash could not be reached, or took a request and did not answer in time;
 * the message names the host, the port and the setting they came from, and what to check.
 */
export class UnreachableError extends StoreError {
  override name = "UnreachableError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, undefined, options);
  }
}

/** Thrown when the queue is stored in another format than this release reads (docs/storage.md). */
export class FormatError extends QueueError {
  override name = "FormatError";
  constructor(message: string) {
    super("LEASEQ_FORMAT", message);
  }
}

/** Thrown when Upstash refused the REST token (HTTP 401): the credentials are wrong, not the network. */
export class CredentialsError extends QueueError {
  override name = "CredentialsError";
  constructor(message: string) {
    super("LEASEQ_CREDENTIALS", message);
  }
}

/** Thrown once, at start-up, listing every configuration problem found. */
export class ConfigError extends QueueError {
  override name = "ConfigError";
  constructor(readonly problems: string[]) {
    super("LEASEQ_CONFIG", `invalid configuration:\n- ${problems.join("\n- ")}`);
  }
}

/** Per-item outcome codes returned by settle, extend, release, requeue and enqueue. */
export const ITEM_STATUS = {
  0: "ok",
  1: "stale_token",
  2: "already_done",
  3: "unknown_id",
  4: "not_failed",
  5: "duplicate",
  6: "corrupt",
  7: "unrepairable",
  8: "leased",
  9: "already_failed",
  10: "not_in_state",
  11: "throttled",
  12: "not_holding",
} as const;

export type ItemStatus = (typeof ITEM_STATUS)[keyof typeof ITEM_STATUS];

/** Maps a script's numeric item status to its name; an unknown code is a protocol error. */
export function itemStatus(operation: string, code: unknown): ItemStatus {
  const name = ITEM_STATUS[Number(code) as keyof typeof ITEM_STATUS];
  if (name === undefined) {
    throw new StoreError(`${operation}: the script answered an unknown status code "${String(code)}"`, undefined);
  }
  return name;
}

/**
 * The one mapping from what a store threw to leaseq's errors: a script's LEASEQ_BAD_ARGUMENT
 * reply becomes ScriptArgumentError, anything else a StoreError keeping the Redis error code.
 * Messages are built from the Redis error text only, never from the command or its arguments.
 */
export function toQueueError(operation: string, error: unknown): QueueError {
  if (error instanceof QueueError) return error;
  const text = redisErrorText(error);
  const badArgument = /^LEASEQ_BAD_ARGUMENT (.*)/s.exec(text);
  if (badArgument) return new ScriptArgumentError(badArgument[1].replace(/\s*script: .*$/s, ""));
  const format = /^LEASEQ_FORMAT (.*)/s.exec(text);
  if (format) return new FormatError(format[1].replace(/\s*script: .*$/s, ""));
  const redisCode = /^([A-Z][A-Z_]+)\s/.exec(text)?.[1];
  return new StoreError(`${operation}: ${text}`, redisCode, { cause: error });
}

function redisErrorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
