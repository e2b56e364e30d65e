import type { LuaScript } from "../store.js";

export interface RetryPolicy {
  /** Extra tries after the first, for retry-safe scripts only. */
  retries: number;
  /** Wait before retry n (1-based), in ms. */
  backoffMs: (retry: number) => number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  retries: 2,
  backoffMs: (retry) => 50 * 2 ** (retry - 1),
};

/**
 * Runs `attempt`, retrying transport failures of retry-safe scripts (never `claim`, see
 * LuaScript.retrySafe). Errors Redis answered (`isReply`) are never retried: they would repeat.
 */
export async function withRetry<T>(
  script: LuaScript,
  policy: RetryPolicy,
  isReply: (error: unknown) => boolean,
  attempt: () => Promise<T>,
): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await attempt();
    } catch (error) {
      if (!script.retrySafe || retry >= policy.retries || isReply(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, policy.backoffMs(retry + 1)));
    }
  }
}
