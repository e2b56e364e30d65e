import { CommanderError } from "commander";
import { ConfigError, InvalidInputError } from "../../shared/errors.js";

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

/** Replaces every secret in `text` (the Upstash token, a password in REDIS_URL) with `***`. */
export function redact(text: string, env: NodeJS.ProcessEnv = process.env): string {
  const secrets: string[] = [];
  if (env.UPSTASH_REDIS_REST_TOKEN) secrets.push(env.UPSTASH_REDIS_REST_TOKEN);
  if (env.REDIS_URL) {
    try {
      const password = decodeURIComponent(new URL(env.REDIS_URL).password);
      if (password) secrets.push(password);
    } catch {
      // A malformed REDIS_URL is reported where it is parsed; nothing to redact from it here.
    }
  }
  return secrets.reduce((out, secret) => out.split(secret).join("***"), text);
}
