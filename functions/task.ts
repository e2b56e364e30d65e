/** What a handler receives for one task. */
export interface Task<Payload = unknown> {
  id: string;
  type: string;
  payload: Payload;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  /** When the current lease ends, unless the worker extends it (it does while the handler runs). */
  leaseDeadlineMs: number;
  /**
   * Fires when the handler must stop: its lease was lost (another worker may run the task now),
   * or the invocation is about to time out. Pass it to fetch() and friends.
   */
  signal: AbortSignal;
}

/** Return to succeed, throw to retry (with backoff), throw PermanentError to fail at once. */
export type TaskHandler<Payload = unknown> = (task: Task<Payload>) => Promise<void> | void;

/** Exponential backoff with jitter between retries: min(maxMs, baseMs × 2^(attempt−1)), half of it random. */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/** A task type: its handler and its policy, declared together. */
export interface TaskType<Payload = unknown> {
  handler: TaskHandler<Payload>;
  /** How long one run may hold the task before the reclaimer may give it to another worker. */
  leaseMs: number;
  /** Runs before the task is FAILED. */
  maxAttempts: number;
  backoff: Backoff;
}

export interface TaskRegistry {
  /** Strict completion order for the whole queue (see README "Ordered queues"). */
  ordered: boolean;
  types: Record<string, TaskType>;
}

/** Thrown by a handler for a failure that no retry can fix: the task goes to FAILED at once. */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentError";
  }
}

/** The delay before retry number `attempt` (1-based), with "equal jitter": half fixed, half random. */
export function backoffDelayMs(backoff: Backoff, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** Declares the task types of a queue; a typed identity function, checked by validateRegistry. */
export function defineTasks(registry: TaskRegistry): TaskRegistry {
  return registry;
}

/** Every problem of a registry, as messages naming the type, the field, the range and the value. */
export function registryProblems(registry: TaskRegistry): string[] {
  const problems: string[] = [];
  const check = (where: string, value: number, min: number, max: number) => {
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${where} must be an integer from ${min} to ${max}, got ${value}`);
    }
  };
  if (Object.keys(registry.types).length === 0) problems.push("at least one task type must be declared");
  for (const [name, type] of Object.entries(registry.types)) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name))
      problems.push(`task type name ${JSON.stringify(name)} must be 1-64 characters of A-Z a-z 0-9 _ . -`);
    if (typeof type.handler !== "function") problems.push(`task type "${name}": handler must be a function`);
    check(`task type "${name}": leaseMs`, type.leaseMs, 1_000, 86_400_000);
    check(`task type "${name}": maxAttempts`, type.maxAttempts, 1, 1000);
    check(`task type "${name}": backoff.baseMs`, type.backoff?.baseMs, 0, 86_400_000);
    check(`task type "${name}": backoff.maxMs`, type.backoff?.maxMs, type.backoff?.baseMs ?? 0, 366 * 86_400_000);
  }
  return problems;
}
