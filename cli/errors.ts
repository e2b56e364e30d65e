import { CommanderError } from "commander";
import { ConfigError, InvalidInputError } from "../shared/errors.js";

/** Exit codes of the `leaseq` CLI. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** The command line or its input is malformed; nothing was sent to Redis (exit 2). */
export class UsageError extends Error {
  override name = "UsageError";
}

/** The command ran but did not do what was asked, e.g. an unknown id (exit 1). */
export class OperationError extends Error {
  override name = "OperationError";
}

/**
 * The exit code for an error a command threw. Commander has already printed its own usage
 * errors; a rejected input (the library validates before it sends) counts as usage, like a bad flag.
 */
export function exitCodeOf(error: unknown): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof UsageError || error instanceof InvalidInputError || error instanceof ConfigError) {
    return EXIT.usage;
  }
  return EXIT.failed;
}
