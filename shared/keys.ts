import { LIMITS, NAME_PATTERN } from "./config.js";
import { InvalidInputError } from "./errors.js";

/** The Redis keys of one queue. All share the hash tag `{<queue>}`, so they live in one slot. */
export interface QueueKeys {
  task: string;
  ready: string;
  scheduled: string;
  leased: string;
  done: string;
  failed: string;
  seq: string;
  hold: string;
  /** Ids a reclaim returned to READY: the next claim hands each out alone. */
  solo: string;
}

/** Key names of `queue`; throws InvalidInputError when the name is not a valid queue name. */
export function queueKeys(queue: string, prefix = "leaseq"): QueueKeys {
  if (
    typeof queue !== "string" ||
    queue.length === 0 ||
    queue.length > LIMITS.queueNameMaxBytes ||
    !NAME_PATTERN.test(queue)
  ) {
    throw new InvalidInputError(
      `queue name must be 1-${LIMITS.queueNameMaxBytes} characters of A-Z a-z 0-9 _ . -, got ${JSON.stringify(String(queue).slice(0, 80))}`,
    );
  }
  const base = `${prefix}:{${queue}}:`;
  return {
    task: `${base}task`,
    ready: `${base}ready`,
    scheduled: `${base}scheduled`,
    leased: `${base}leased`,
    done: `${base}done`,
    failed: `${base}failed`,
    seq: `${base}seq`,
    hold: `${base}hold`,
    solo: `${base}solo`,
  };
}
