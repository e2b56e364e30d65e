import { DEPLOYMENT_PATTERN, DEPLOYMENT_RULE, LIMITS, NAME_PATTERN } from "../shared/config.js";
import { type Connection, connectionFromEnv } from "../shared/connection.js";
import { ConfigError } from "../shared/errors.js";
import { PARTITIONS_MAX } from "../shared/keys.js";

/** Tasks one claim leases when LEASEQ_CLAIM_BATCH is not set. */
export const DEFAULT_CLAIM_BATCH = 20;

/** The functions' configuration, read once per cold start from the environment. */
export interface FunctionConfig {
  queue: string;
  /**
   * The deployment this function belongs to (LEASEQ_DEPLOYMENT; the construct sets it from the stack
   * and the construct's path; default "default"): what its task declaration writes at a cold start
   * (its schedules) is this deployment's, and no other deployment's cold start changes it.
   */
  deployment: string;
  connection: Connection;
  /** Tasks one claim leases (LEASEQ_CLAIM_BATCH). */
  claimBatch: number;
  /** The worker the reclaimer's drain invocations start (LEASEQ_WORKER_FUNCTION); unset: none. */
  workerFunction: string | undefined;
  /**
   * Most drain invocations per reclaimer run (LEASEQ_MAX_KICKS: "kick" in the name means a drain
   * invocation; deployments set it by that name).
   */
  maxDrainInvocations: number;
  /**
   * No drain invocation until the head of the ready queue has waited at least this long
   * (LEASEQ_KICK_AFTER_MS).
   */
  drainInvocationAfterMs: number;
  /** Lambda API endpoint override, for local runs and tests (LEASEQ_LAMBDA_ENDPOINT). */
  lambdaEndpoint: string | undefined;
  /** Time the worker keeps free at the end of an invocation (LEASEQ_SAFETY_MARGIN_MS). */
  safetyMarginMs: number;
  /** Finished tasks are settled once the first of them has waited this long (LEASEQ_FLUSH_AFTER_MS, default 1000). */
  flushAfterMs: number;
  /** Reclaim only leases expired by more than this (LEASEQ_CLOCK_SKEW_MS, default 2000). */
  clockSkewMs: number;
  doneRetentionMs: number | undefined;
  failedRetentionMs: number | undefined;
  /** The worker's Lambda timeout (LEASEQ_WORKER_TIMEOUT_MS, set by the construct): every lease must fit it. */
  workerTimeoutMs: number | undefined;
  /** The task policies the construct deployed with (LEASEQ_TASKS): the worker's own must match. */
  deployedTasks: string | undefined;
  /** Where the worker sends permanently invalid input at once (LEASEQ_DLQ_URL, set by the construct). */
  deadLetterQueueUrl: string | undefined;
  /**
   * The source queue's redrive policy's maxReceiveCount (LEASEQ_MAX_RECEIVE_COUNT, set by the
   * construct on the intake): a record that fails at this receive goes to the dead-letter queue with
   * its reason, sent by the function, instead of without one by the redrive policy. Unset: none.
   */
  maxReceiveCount: number | undefined;
  /** SQS endpoint override, for the local stack and tests (LEASEQ_SQS_ENDPOINT). */
  sqsEndpoint: string | undefined;
  /**
   * Where wake-ups go: the worker's wake queue (LEASEQ_WAKE_QUEUE_URL, set by the construct; else
   * LEASEQ_QUEUE_URL, the same for deployments that set that name); unset: none sent.
   */
  wakeQueueUrl: string | undefined;
  /**
   * What this function does with its SQS records (LEASEQ_ROLE): `worker` ingests, drains and hands
   * off; `intake` only validates and enqueues the task lists and sends the wake-up they need, so a
   * task is in Redis however busy the workers are (docs/lambda.md "Intake").
   */
  role: "worker" | "intake";
  /** A draining worker waits for work falling due within this long instead of stopping (LEASEQ_LINGER_MS, default 5000). */
  lingerMs: number;
  /** How often the reclaimer runs (LEASEQ_RECLAIM_PERIOD_MS, default 60000): it arranges wake-ups for what falls due before its next run. */
  reclaimPeriodMs: number;
  /** The queue's partitions (LEASEQ_PARTITIONS, 1-64, default 1: the queue as it always was; docs/partitions.md). */
  partitions: number;
  /** A shrink under way: the count before it (LEASEQ_SHRINKING_FROM): those past `partitions` are drained, get no new task. */
  shrinkingFrom: number | undefined;
}

type Env = Record<string, string | undefined>;

/** The largest maxReceiveCount SQS takes in a redrive policy. */
export const MAX_RECEIVE_COUNT_MAX = 1000;

/** Reads the configuration; throws one ConfigError listing every problem found. */
export function readConfig(env: Env): FunctionConfig {
  const problems: string[] = [];
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
      return fallback;
    }
    return value;
  };
  const optionalInteger = (name: string, min: number, max: number) =>
    env[name] ? integer(name, 0, min, max) : undefined;

  const queue = env.LEASEQ_QUEUE ?? "";
  if (queue.length > LIMITS.queueNameMaxBytes || !NAME_PATTERN.test(queue)) {
    problems.push(
      `LEASEQ_QUEUE must be 1-${LIMITS.queueNameMaxBytes} characters of A-Z a-z 0-9 _ . -, got ${JSON.stringify(queue)}`,
    );
  }
  const deployment = env.LEASEQ_DEPLOYMENT || "default";
  if (!DEPLOYMENT_PATTERN.test(deployment)) {
    problems.push(`LEASEQ_DEPLOYMENT must be ${DEPLOYMENT_RULE}, got ${JSON.stringify(deployment)}`);
  }
  let connection: Connection | undefined;
  try {
    connection = connectionFromEnv(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }

  const config: FunctionConfig = {
    queue,
    deployment,
    connection: connection as Connection,
    claimBatch: integer("LEASEQ_CLAIM_BATCH", DEFAULT_CLAIM_BATCH, 1, 100),
    workerFunction: env.LEASEQ_WORKER_FUNCTION || undefined,
    maxDrainInvocations: integer("LEASEQ_MAX_KICKS", 4, 0, 100),
    drainInvocationAfterMs: integer("LEASEQ_KICK_AFTER_MS", 0, 0, 3_600_000),
    lambdaEndpoint: env.LEASEQ_LAMBDA_ENDPOINT || undefined,
    safetyMarginMs: integer("LEASEQ_SAFETY_MARGIN_MS", 1_000, 0, 60_000),
    flushAfterMs: integer("LEASEQ_FLUSH_AFTER_MS", 1_000, 0, 60_000),
    clockSkewMs: integer("LEASEQ_CLOCK_SKEW_MS", 2_000, 0, 3_600_000),
    doneRetentionMs: optionalInteger("LEASEQ_DONE_RETENTION_MS", 0, LIMITS.retentionMaxMs),
    failedRetentionMs: optionalInteger("LEASEQ_FAILED_RETENTION_MS", 0, LIMITS.retentionMaxMs),
    workerTimeoutMs: optionalInteger("LEASEQ_WORKER_TIMEOUT_MS", 1_000, 900_000),
    deployedTasks: env.LEASEQ_TASKS || undefined,
    deadLetterQueueUrl: env.LEASEQ_DLQ_URL || undefined,
    maxReceiveCount: optionalInteger("LEASEQ_MAX_RECEIVE_COUNT", 1, MAX_RECEIVE_COUNT_MAX),
    sqsEndpoint: env.LEASEQ_SQS_ENDPOINT || undefined,
    wakeQueueUrl: env.LEASEQ_WAKE_QUEUE_URL || env.LEASEQ_QUEUE_URL || undefined,
    role: "worker",
    lingerMs: integer("LEASEQ_LINGER_MS", 5_000, 0, 60_000),
    reclaimPeriodMs: integer("LEASEQ_RECLAIM_PERIOD_MS", 60_000, 100, 3_600_000),
    partitions: integer("LEASEQ_PARTITIONS", 1, 1, PARTITIONS_MAX),
    shrinkingFrom: optionalInteger("LEASEQ_SHRINKING_FROM", 2, PARTITIONS_MAX),
  };
  if (config.shrinkingFrom !== undefined && config.shrinkingFrom <= config.partitions) {
    problems.push(
      `LEASEQ_SHRINKING_FROM (${config.shrinkingFrom}) is the count before a shrink, so it must be more than LEASEQ_PARTITIONS (${config.partitions})`,
    );
  }
  const role = env.LEASEQ_ROLE || "worker";
  if (role === "worker" || role === "intake") config.role = role;
  else problems.push(`LEASEQ_ROLE must be "worker" or "intake", got ${JSON.stringify(role)}`);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
