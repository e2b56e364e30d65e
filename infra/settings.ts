import { Duration, type RemovalPolicy, Token } from "aws-cdk-lib";
import type { RetentionDays } from "aws-cdk-lib/aws-logs";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import { Cron } from "croner";
import {
  declareTasks,
  defaultWorkerTimeoutMs,
  policyText,
  type TaskDeclaration,
  timeoutProblems,
} from "../functions/tasks.js";
import { DEPLOYMENT_PATTERN, DEPLOYMENT_RULE, LIMITS } from "../shared/config.js";
import { ConfigError } from "../shared/errors.js";
import { PARTITIONS_MAX } from "../shared/partitions.js";
import { checkSchedule, registerCron, slotsBetween } from "../shared/schedules.js";
import { type AlarmSettings, checkAlarms } from "./alarm-settings.js";
import { DEFAULT_RECLAIMER_ENTRY, entryFile, NODE_RUNTIMES, type NodeRuntime } from "./bundling.js";
import { LEASE_QUEUE_DEFAULTS, type LeaseQueueProps } from "./props.js";
import { checkSecret } from "./secret.js";

// The construct reads cron expressions at synth, so a wrong one is refused before anything deploys.
registerCron(Cron);

/**
 * What the reclaimer's period says of the declared schedules: each cron is valid (croner's words),
 * and no schedule is finer than its planning allows. Each run plans the slots up to the next run
 * (the period + 10 s) in calls of at most LIMITS.scheduleSlotsMax slots per schedule; a finer
 * schedule would fall behind.
 */
function scheduleProblems(tasks: TaskDeclaration, periodMs: number): string[] {
  const problems: string[] = [];
  const horizonMs = periodMs + 10_000;
  const finestMs = Math.ceil(horizonMs / LIMITS.scheduleSlotsMax);
  for (const [name, definition] of Object.entries(tasks.schedules)) {
    try {
      checkSchedule("tasks", name, definition);
    } catch (error) {
      problems.push((error as Error).message);
      continue;
    }
    const slots = slotsBetween(
      definition,
      Date.UTC(2026, 0, 1),
      Date.UTC(2026, 0, 1) + horizonMs,
      LIMITS.scheduleSlotsMax + 1,
    );
    if (slots.length > LIMITS.scheduleSlotsMax) {
      problems.push(
        `tasks: schedule "${name}" is finer than the reclaimer's period allows: with reclaimSchedule ${periodMs / 60_000} min a schedule may have at most ${LIMITS.scheduleSlotsMax} slots in ${horizonMs / 1000} s (one every ${finestMs} ms or more)`,
      );
    }
  }
  return problems;
}

export type { LeaseQueueProps } from "./props.js";

/** The props with every default applied, after validation. */
export interface LeaseQueueSettings extends AlarmSettings {
  queueName: string;
  /** Undefined: the construct's path names it (LeaseQueue). */
  deployment: string | undefined;
  tasks: TaskDeclaration;
  /** The longest declared lease, ms. */
  maxLeaseMs: number;
  workerTimeout: Duration;
  workerMemoryMb: number;
  /** The Node.js major version of the three functions and their bundles. */
  runtime: NodeRuntime;
  fifo: boolean;
  intakeTimeout: Duration;
  intakeMemoryMb: number;
  intakeMaxConcurrency: number;
  reclaimerTimeout: Duration;
  reclaimerMemoryMb: number;
  /** The task queue's: 6 × the intake timeout. */
  visibilityTimeout: Duration;
  /** The wake queue's: 6 × the worker timeout. */
  wakeVisibilityTimeout: Duration;
  batchSize: number;
  maxBatchingWindow: Duration;
  maxConcurrency: number;
  maxReceiveCount: number;
  claimBatchSize: number | undefined;
  reclaimSchedule: Duration;
  /** The queue's partitions (LEASEQ_PARTITIONS); 1 is a queue as it always was. */
  partitions: number;
  /** A shrink under way: the partition count before it (LEASEQ_SHRINKING_FROM), more than `partitions`. */
  shrinkingFrom: number | undefined;
  upstashSecretArn: string | undefined;
  /** A secret given by the user; with neither it nor upstashSecretArn the construct creates one. */
  secret: ISecret | undefined;
  /** The removal policy of a created secret. */
  secretRemovalPolicy: RemovalPolicy;
  logRetention: RetentionDays;
  alarmEmail: string | undefined;
  alarmTopic: ITopic | undefined;
  dashboardName: string | undefined;
  /** Absolute paths of the files bundled into the two functions. */
  workerEntry: string;
  reclaimerEntry: string;
}

/** SQS visibility timeout = this × worker timeout, as AWS advises for Lambda event sources. */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

/** Thrown at synth when props are invalid; lists every problem found, not just the first. */
export class LeaseQueuePropsError extends Error {
  constructor(readonly problems: string[]) {
    super(`LeaseQueue: ${problems.length} invalid prop(s):\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "LeaseQueuePropsError";
  }
}

/** Queue names: the library's rule (shared/config.ts), the one declaration every consumer takes. */
const NAME_PATTERN = new RegExp(`^[A-Za-z0-9_.-]{1,${LIMITS.queueNameMaxBytes}}$`);
/** Room for LEASEQ_TASKS in the worker's 4 KB of environment, beside the other variables. */
const MAX_POLICY_TEXT_CHARS = 3_000;
const DASHBOARD_NAME_PATTERN = /^[A-Za-z0-9_-]{1,255}$/;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const shown = (value: unknown): string => (typeof value === "string" ? JSON.stringify(value) : String(value));

/**
 * Applies the defaults and checks every prop against its AWS or leaseq limit; throws one
 * LeaseQueuePropsError naming each bad prop, its allowed range and the value given.
 */
export function resolveSettings(props: LeaseQueueProps): LeaseQueueSettings {
  const problems: string[] = [];
  const D = LEASE_QUEUE_DEFAULTS;

  const integer = (prop: string, value: number, min: number, max: number, unit = ""): number => {
    if (Token.isUnresolved(value)) return value;
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${prop} must be an integer from ${min} to ${max}${unit}, got ${shown(value)}`);
    }
    return value;
  };
  const seconds = (prop: string, value: Duration, min: number, max: number): Duration => {
    const ms = value.toMilliseconds();
    if (ms % 1000 !== 0 || ms < min * 1000 || ms > max * 1000) {
      problems.push(`${prop} must be whole seconds from ${min} s to ${max} s, got ${value.toHumanString()}`);
    }
    return value;
  };
  const name = (prop: string, value: string, pattern: RegExp, rule: string): string => {
    if (!Token.isUnresolved(value) && (typeof value !== "string" || !pattern.test(value))) {
      problems.push(`${prop} must be ${rule}, got ${shown(value)}`);
    }
    return value;
  };

  const queueName = name(
    "queueName",
    props.queueName ?? D.queueName,
    NAME_PATTERN,
    "1-64 characters of A-Z a-z 0-9 _ . -",
  );
  const deployment =
    props.deployment === undefined
      ? undefined
      : name("deployment", props.deployment, DEPLOYMENT_PATTERN, DEPLOYMENT_RULE);
  const workerTimeout = seconds(
    "workerTimeout",
    props.workerTimeout ?? Duration.millis(defaultTimeoutOf(props.tasks)),
    1,
    900,
  );
  const intakeTimeout = seconds(
    "intakeTimeout",
    props.intakeTimeout ?? Duration.seconds(D.intakeTimeoutSeconds),
    1,
    900,
  );
  const runtime = props.runtime ?? D.runtime;
  if (!NODE_RUNTIMES.includes(runtime)) {
    problems.push(
      `runtime must be ${NODE_RUNTIMES.join(" or ")} (the Node.js major version: Lambda nodejs<N>.x, esbuild target node<N>), got ${shown(runtime)}`,
    );
  }
  const fifo = props.fifo ?? false;
  if (typeof fifo !== "boolean") problems.push(`fifo must be true or false, got ${shown(fifo)}`);
  const reclaimerTimeout = seconds(
    "reclaimerTimeout",
    props.reclaimerTimeout ?? Duration.seconds(D.reclaimerTimeoutSeconds),
    1,
    900,
  );
  const maxBatchingWindow = seconds(
    "maxBatchingWindow",
    props.maxBatchingWindow ?? Duration.seconds(D.maxBatchingWindowSeconds),
    0,
    300,
  );
  if (fifo && maxBatchingWindow.toMilliseconds() > 0) {
    problems.push(
      `maxBatchingWindow is not supported with fifo (AWS reads FIFO queues without one), got ${maxBatchingWindow.toHumanString()}`,
    );
  }
  // AWS: more than 10 records per batch requires a batching window of at least 1 second.
  const batchMax = maxBatchingWindow.toMilliseconds() >= 1000 && !fifo ? 10_000 : 10;
  const batchSize = integer(
    "batchSize",
    props.batchSize ?? D.batchSize,
    1,
    batchMax,
    fifo ? " (a FIFO queue)" : batchMax === 10 ? " (up to 10000 needs maxBatchingWindow ≥ 1 s)" : "",
  );

  const reclaimSchedule = props.reclaimSchedule ?? Duration.minutes(D.reclaimScheduleMinutes);
  const scheduleMs = reclaimSchedule.toMilliseconds();
  const scheduleValid = scheduleMs % 60_000 === 0 && scheduleMs >= 60_000 && scheduleMs <= 3_600_000;
  if (!scheduleValid) {
    problems.push(
      `reclaimSchedule must be whole minutes from 1 to 60 (EventBridge rates are at least 1 minute), got ${reclaimSchedule.toHumanString()}`,
    );
  }

  // The one task declaration: every lease must end before the worker's invocation does.
  let tasks = props.tasks as TaskDeclaration;
  if (tasks === undefined) problems.push("tasks is required: the defineTasks(...) result your worker entry runs");
  else
    try {
      tasks = declareTasks(props.tasks);
      problems.push(...timeoutProblems(tasks, workerTimeout.toMilliseconds()));
      problems.push(...scheduleProblems(tasks, scheduleMs));
      const policies = policyText(tasks).length;
      if (policies > MAX_POLICY_TEXT_CHARS) {
        problems.push(
          `tasks: the policies are ${policies} characters as LEASEQ_TASKS, more than ${MAX_POLICY_TEXT_CHARS} (Lambda holds 4 KB of environment in all): split the types across queues`,
        );
      }
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.problems.map((problem) => `tasks: ${problem}`));
    }
  const workerEntry = entryFile("workerEntry", props.workerEntry, problems);
  const reclaimerEntry =
    props.reclaimerEntry === undefined
      ? DEFAULT_RECLAIMER_ENTRY
      : entryFile("reclaimerEntry", props.reclaimerEntry, problems);

  const partitionSettings = checkPartitionProps(props, problems);
  const secretSettings = checkSecret(props, problems);
  if (props.alarmEmail !== undefined) name("alarmEmail", props.alarmEmail, EMAIL_PATTERN, "an email address");
  if (props.alarmEmail !== undefined && props.alarmTopic !== undefined) {
    problems.push(
      `alarmEmail and alarmTopic are exclusive: give one or neither, got both (alarmEmail ${shown(props.alarmEmail)})`,
    );
  }
  if (props.dashboardName !== undefined)
    name("dashboardName", props.dashboardName, DASHBOARD_NAME_PATTERN, "1-255 characters of A-Z a-z 0-9 _ -");
  // With a reclaimSchedule refused above, the alarms are checked against the default one.
  const alarmSettings = checkAlarms(props, scheduleValid ? scheduleMs / 60_000 : D.reclaimScheduleMinutes, problems);

  const settings: LeaseQueueSettings = {
    queueName,
    deployment,
    tasks,
    maxLeaseMs: Math.max(0, ...Object.values(tasks?.types ?? {}).map((type) => type.timeoutMs)),
    workerTimeout,
    runtime,
    workerMemoryMb: integer("workerMemoryMb", props.workerMemoryMb ?? D.workerMemoryMb, 128, 10_240, " MB"),
    reclaimerTimeout,
    reclaimerMemoryMb: integer("reclaimerMemoryMb", props.reclaimerMemoryMb ?? D.reclaimerMemoryMb, 128, 10_240, " MB"),
    fifo,
    intakeTimeout,
    intakeMemoryMb: integer("intakeMemoryMb", props.intakeMemoryMb ?? D.intakeMemoryMb, 128, 10_240, " MB"),
    intakeMaxConcurrency: integer(
      "intakeMaxConcurrency",
      props.intakeMaxConcurrency ?? D.intakeMaxConcurrency,
      2,
      1000,
    ),
    visibilityTimeout: Duration.seconds(VISIBILITY_TIMEOUT_FACTOR * intakeTimeout.toSeconds({ integral: false })),
    wakeVisibilityTimeout: Duration.seconds(VISIBILITY_TIMEOUT_FACTOR * workerTimeout.toSeconds({ integral: false })),
    batchSize,
    maxBatchingWindow,
    maxConcurrency: integer("maxConcurrency", props.maxConcurrency ?? D.maxConcurrency, 2, 1000),
    maxReceiveCount: integer("maxReceiveCount", props.maxReceiveCount ?? D.maxReceiveCount, 1, 1000),
    // 100 is the functions' cap on LEASEQ_CLAIM_BATCH (functions/config.ts).
    claimBatchSize:
      props.claimBatchSize === undefined ? undefined : integer("claimBatchSize", props.claimBatchSize, 1, 100),
    reclaimSchedule,
    ...partitionSettings,
    ...secretSettings,
    logRetention: props.logRetention ?? D.logRetention,
    alarmEmail: props.alarmEmail,
    alarmTopic: props.alarmTopic,
    dashboardName: props.dashboardName,
    ...alarmSettings,
    workerEntry,
    reclaimerEntry,
  };
  if (problems.length > 0) throw new LeaseQueuePropsError(problems);
  return settings;
}

/**
 * The worker timeout when none is given: 5 minutes, or what the longest declared lease needs, so a
 * declaration with a 10-minute type deploys without a prop (a declaration that does not define is
 * reported with the tasks' problems, and gets the 5 minutes meanwhile).
 */
function defaultTimeoutOf(tasks: LeaseQueueProps["tasks"]): number {
  try {
    return defaultWorkerTimeoutMs(declareTasks(tasks));
  } catch {
    return LEASE_QUEUE_DEFAULTS.workerTimeoutSeconds * 1000;
  }
}

/**
 * Checks `partitions` (1..PARTITIONS_MAX, the library's bound) and `shrinkingFrom` (more than
 * `partitions`, at most PARTITIONS_MAX), pushing each problem to `problems`, and applies the default
 * of 1. Neither may be a token: the dashboard draws a line per partition at synth.
 */
function checkPartitionProps(
  props: LeaseQueueProps,
  problems: string[],
): Pick<LeaseQueueSettings, "partitions" | "shrinkingFrom"> {
  const partitions = props.partitions ?? LEASE_QUEUE_DEFAULTS.partitions;
  const { shrinkingFrom } = props;
  const known = (value: number) =>
    Token.isUnresolved(value) ? "a token (the count must be known at synth)" : shown(value);
  const partitionsValid = Number.isInteger(partitions) && partitions >= 1 && partitions <= PARTITIONS_MAX;
  if (!partitionsValid) {
    problems.push(`partitions must be an integer from 1 to ${PARTITIONS_MAX}, got ${known(partitions)}`);
  }
  if (shrinkingFrom !== undefined) {
    // With `partitions` refused above, shrinkingFrom is checked against the least it could follow.
    const least = partitionsValid ? partitions + 1 : 2;
    if (!Number.isInteger(shrinkingFrom) || shrinkingFrom < least || shrinkingFrom > PARTITIONS_MAX) {
      problems.push(
        `shrinkingFrom must be an integer more than partitions${partitionsValid ? ` (${partitions})` : ""} and at most ${PARTITIONS_MAX}: the partition count before the shrink, whose last ones still drain, got ${known(shrinkingFrom)}`,
      );
    }
  }
  return { partitions, shrinkingFrom };
}
