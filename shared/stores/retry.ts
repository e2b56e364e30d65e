import type { LuaScript } from "../store.js";

export interface RetryPolicy {
  /** Extra tries after the first. */
  retries: number;
  /** Wait before retry n (1-based), in ms. */
  backoffMs: (retry: number) => number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  retries: 2,
  backoffMs: (retry) => 50 * 2 ** (retry - 1),
};

/**
 * Runs `attempt`, retrying transport failures: every script is safe to run twice (a claim is told
 * it may be a repeat: `attempt` gets the retry number, see argsForRetry). Errors Redis answered
 * (`isReply`) are never retried: they would repeat.
 */
export async function withRetry<T>(
  _script: LuaScript,
  policy: RetryPolicy,
  isReply: (error: unknown) => boolean,
  attempt: (retry: number) => Promise<T>,
): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await attempt(retry);
    } catch (error) {
      if (retry >= policy.retries || isReply(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, policy.backoffMs(retry + 1)));
    }
  }
}
