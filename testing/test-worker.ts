import { randomBytes, randomUUID } from "node:crypto";
import { DEFAULT_CLAIM_BATCH } from "../functions/config.js";
import { type DrainCounts, drain } from "../functions/drain.js";
import type { DirectTask } from "../functions/producer.js";
import { queueSettings } from "../functions/runtime.js";
import { checkOutgoingTasks } from "../functions/send-checks.js";
import { defineTasks, type TaskDeclaration } from "../functions/tasks.js";
import { LIMITS, NAME_PATTERN } from "../shared/config.js";
import { ConfigError, InvalidInputError } from "../shared/errors.js";
import { Queue } from "../shared/queue.js";
import type { Store } from "../shared/store.js";
import { TcpStore } from "../shared/stores/tcp.js";
import type { EnqueueResult, ReclaimResult, TaskInput } from "../shared/types.js";

type Payloads = Record<string, unknown>;

export interface TestWorkerOptions<Declared extends Payloads = Payloads> {
  /** Your `defineTasks(...)` result: the handlers it runs and the policies it writes into the queue. */
  tasks: TaskDeclaration<Declared>;
  /** The Redis to use, redis:// or rediss://. Default: REDIS_URL, else redis://127.0.0.1:6379. */
  redisUrl?: string;
  /** A store of yours instead (an UpstashStore, a TcpStore on your client); `close()` leaves it open. */
  store?: Store;
  /** The queue's name. Default: a fresh `leaseq-test-<random>`, which `close()` deletes. */
  queue?: string;
  /** Tasks one claim leases. Default: the worker's, 20. */
  claimBatch?: number;
  /**
   * `drain()` waits for work falling due within this long, ms (a short delay, a retry whose backoff
   * is that short) rather than return. Default 100: a retry after the default backoff (at least
   * 500 ms) is left for the next drain, so what one drain runs does not depend on the backoff's
   * random half.
   */
  lingerMs?: number;
}

export interface TestWorker<Declared extends Payloads = Payloads> {
  /** The queue it drains: `stats({ now })`, `admin.inspect(id)`, `admin.list(state)` for your assertions. */
  readonly queue: Queue;
  /**
   * Enqueues straight into Redis, checked as the producer checks them (a type the declaration
   * lacks, a payload its schema rejects, an unknown field: InvalidInputError, nothing enqueued);
   * a task without an id gets a random one. Sends no wake-up: nothing runs until `drain()`.
   */
  enqueue(tasks: readonly DirectTask<Declared>[], options?: { now?: number }): Promise<EnqueueResult[]>;
  /**
   * Claims and runs batches with the Lambda worker's own drain (leases, heartbeat, settle, retries,
   * groups, order) until nothing is READY and nothing falls due within `lingerMs`; resolves to
   * what it did. `now` is the clock it reads (default Date.now): one ahead of it runs delayed
   * tasks and retries early; a clock that does not move needs `lingerMs: 0`.
   */
  drain(options?: { lingerMs?: number; now?: () => number }): Promise<DrainCounts>;
  /**
   * Returns expired leases (deadline plus the 2 s clock skew before `now`) to READY, or FAILED when
   * their attempts are used up: what the reclaimer's scheduled run does, which nothing here runs.
   */
  reclaim(options?: { now?: number }): Promise<ReclaimResult>;
  /**
   * Closes the connection it opened (not a `store` you gave) and, with `deleteQueue` (default: when
   * it chose the queue's name), deletes every key of the queue. Idempotent; call it when the test
   * ends, or a `node --test` process stays alive on the open connection.
   */
  close(options?: { deleteQueue?: boolean }): Promise<void>;
}

const OPTION_NAMES = ["tasks", "redisUrl", "store", "queue", "claimBatch", "lingerMs"];

/** How long a test worker's drain waits for work falling due, by default (see `lingerMs`). */
export const TEST_LINGER_MS = 100;

/**
 * A worker in your process over a real Redis, for integration tests: `enqueue`, then `drain()`
 * runs the tasks with the code the Lambda worker drains with, then `close()`. It connects at once
 * and writes the declaration's policies into the queue's config, as a worker's cold start does; a
 * failure there (Redis unreachable) rejects every call but `close()`. It has no SQS (no ingest of
 * messages, no dead-letter queue, no wake-ups) and no reclaimer timer: `reclaim()` is there to
 * call. Throws ConfigError listing every problem of the options.
 */
export function createTestWorker<Declared extends Payloads = Payloads>(
  options: TestWorkerOptions<Declared>,
): TestWorker<Declared> {
  const problems = Object.keys(options ?? {})
    .filter((key) => !OPTION_NAMES.includes(key))
    .map(
      (key) => `createTestWorker: unknown option ${JSON.stringify(key)}; the options are ${OPTION_NAMES.join(", ")}`,
    );
  if (options?.redisUrl !== undefined && options.store !== undefined) {
    problems.push("createTestWorker: give redisUrl or store, not both");
  }
  const integer = (name: "claimBatch" | "lingerMs", value: number | undefined, min: number, max: number) => {
    if (value !== undefined && (!Number.isInteger(value) || value < min || value > max)) {
      problems.push(`createTestWorker: ${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
  };
  integer("claimBatch", options?.claimBatch, 1, 100);
  integer("lingerMs", options?.lingerMs, 0, 60_000);
  const named = options?.queue;
  if (
    named !== undefined &&
    (typeof named !== "string" || named.length > LIMITS.queueNameMaxBytes || !NAME_PATTERN.test(named))
  ) {
    problems.push(
      `createTestWorker: queue must be 1-${LIMITS.queueNameMaxBytes} characters of A-Z a-z 0-9 _ . -, got ${JSON.stringify(named)}`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const tasks = defineTasks(options.tasks as TaskDeclaration);
  const ownsQueue = options.queue === undefined;
  const name = options.queue ?? `leaseq-test-${randomBytes(6).toString("hex")}`;
  const ownsStore = options.store === undefined;
  const store =
    options.store ?? TcpStore.fromUrl(options.redisUrl ?? process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  // A test drives time (`drain({ now })`, `reclaim({ now })`): the queue takes its clock as given.
  const queue = new Queue(store, { name, settings: { ...queueSettings({}, tasks), trustCallerClock: true } });
  const configured = queue.configure().then(() => undefined);
  // Reported by every call, which awaits it; never an unhandled rejection.
  configured.catch(() => {});

  let closed: Promise<void> | undefined;
  const open = async (operation: string) => {
    if (closed) throw new InvalidInputError(`${operation}: this test worker of queue "${name}" is closed`);
    await configured;
  };
  return {
    queue,
    async enqueue(given, enqueueOptions = {}) {
      await open("enqueue");
      await checkOutgoingTasks("enqueue", given, tasks);
      const withIds = given.map((task) => ({ ...task, id: task.id ?? randomUUID() }) as TaskInput);
      return queue.enqueue(withIds, { now: enqueueOptions.now ?? Date.now() });
    },
    async drain(drainOptions = {}) {
      await open("drain");
      return drain({
        queue,
        tasks,
        claimBatch: options.claimBatch ?? DEFAULT_CLAIM_BATCH,
        // No invocation ends here: every lease fits, and no handler is cut off by a time budget.
        remainingMs: () => LIMITS.leaseMaxMs,
        safetyMarginMs: 0,
        lingerMs: drainOptions.lingerMs ?? options.lingerMs ?? TEST_LINGER_MS,
        now: drainOptions.now,
      });
    },
    async reclaim(reclaimOptions = {}) {
      await open("reclaim");
      return queue.reclaim({ now: reclaimOptions.now ?? Date.now() });
    },
    close(closeOptions = {}) {
      closed ??= (async () => {
        try {
          const started = await configured.then(
            () => true,
            () => false,
          );
          if (started && (closeOptions.deleteQueue ?? ownsQueue)) await queue.admin.drop({ confirm: name });
        } finally {
          if (ownsStore) await store.close();
        }
      })();
      return closed;
    },
  };
}
