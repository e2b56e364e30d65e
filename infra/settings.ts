import { Duration, Token } from "aws-cdk-lib";
import type { RetentionDays } from "aws-cdk-lib/aws-logs";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import { LEASE_QUEUE_DEFAULTS, type LeaseQueueProps } from "./props.js";

export type { LeaseQueueProps } from "./props.js";

/** The props with every default applied, after validation. */
export interface LeaseQueueSettings {
  queueName: string;
  maxLeaseMs: number;
  workerTimeout: Duration;
  workerMemoryMb: number;
  reclaimerTimeout: Duration;
  reclaimerMemoryMb: number;
  visibilityTimeout: Duration;
  batchSize: number;
  maxBatchingWindow: Duration;
  maxConcurrency: number;
  maxReceiveCount: number;
  claimBatchSize: number | undefined;
  reclaimSchedule: Duration;
  upstashSecretArn: string | undefined;
  logRetention: RetentionDays;
  alarmEmail: string | undefined;
  alarmTopic: ITopic | undefined;
  dashboardName: string | undefined;
  oldestReadyAgeAlarmMs: number;
  leaseOverdueAlarmMs: number;
  workerEntry: string;
  reclaimerEntry: string;
}

/** SQS visibility timeout = this × worker timeout, as AWS advises for Lambda event sources. */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

/**
 * Time a worker needs besides running a task: ingesting the SQS batch, the claim and the settle
 * round trips. A lease longer than the worker timeout minus this could outlive the invocation.
 */
export const LEASE_MARGIN_MS = 5_000;

/** Thrown at synth when props are invalid; lists every problem found, not just the first. */
export class LeaseQueuePropsError extends Error {
  constructor(readonly problems: string[]) {
    super(`LeaseQueue: ${problems.length} invalid prop(s):\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "LeaseQueuePropsError";
  }
}

/** Queue names and task types: the library's charset and length (shared/config.ts; not imported, infra stays free of runtime code). */
const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
const SECRET_ARN_PATTERN =
  /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/;
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
  const workerTimeout = seconds(
    "workerTimeout",
    props.workerTimeout ?? Duration.seconds(D.workerTimeoutSeconds),
    1,
    900,
  );
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
  // AWS: more than 10 records per batch requires a batching window of at least 1 second.
  const batchMax = maxBatchingWindow.toMilliseconds() >= 1000 ? 10_000 : 10;
  const batchSize = integer(
    "batchSize",
    props.batchSize ?? D.batchSize,
    1,
    batchMax,
    batchMax === 10 ? " (up to 10000 needs maxBatchingWindow ≥ 1 s)" : "",
  );

  const reclaimSchedule = props.reclaimSchedule ?? Duration.minutes(D.reclaimScheduleMinutes);
  const scheduleMs = reclaimSchedule.toMilliseconds();
  if (scheduleMs % 60_000 !== 0 || scheduleMs < 60_000 || scheduleMs > 3_600_000) {
    problems.push(
      `reclaimSchedule must be whole minutes from 1 to 60 (EventBridge rates are at least 1 minute), got ${reclaimSchedule.toHumanString()}`,
    );
  }

  // Every lease, the default one included, must end before the worker's invocation does.
  const leaseMaxMs = workerTimeout.toMilliseconds() - LEASE_MARGIN_MS;
  const leaseRule = `(workerTimeout ${workerTimeout.toHumanString()} minus a ${LEASE_MARGIN_MS} ms margin)`;
  const leases = { ...props.taskLeasesMs };
  const defaultLeaseMs = props.defaultLeaseMs ?? D.defaultLeaseMs;
  for (const [type, leaseMs] of Object.entries(leases)) {
    name("taskLeasesMs key", type, NAME_PATTERN, "a task type of 1-64 characters of A-Z a-z 0-9 _ . -");
    if (!Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > leaseMaxMs) {
      problems.push(
        `taskLeasesMs.${type} must be an integer from 1 to ${leaseMaxMs} ms ${leaseRule}, got ${shown(leaseMs)}`,
      );
    }
  }
  if (!Number.isInteger(defaultLeaseMs) || defaultLeaseMs < 1 || defaultLeaseMs > leaseMaxMs) {
    problems.push(
      `defaultLeaseMs must be an integer from 1 to ${leaseMaxMs} ms ${leaseRule}, got ${shown(defaultLeaseMs)}`,
    );
  }

  const upstashSecretArn = props.upstashSecretArn;
  if (upstashSecretArn !== undefined) {
    name(
      "upstashSecretArn",
      upstashSecretArn,
      SECRET_ARN_PATTERN,
      "a complete Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>)",
    );
  }
  if (props.alarmEmail !== undefined) name("alarmEmail", props.alarmEmail, EMAIL_PATTERN, "an email address");
  if (props.alarmEmail !== undefined && props.alarmTopic !== undefined) {
    problems.push(
      `alarmEmail and alarmTopic are exclusive: give one or neither, got both (alarmEmail ${shown(props.alarmEmail)})`,
    );
  }
  if (props.dashboardName !== undefined)
    name("dashboardName", props.dashboardName, DASHBOARD_NAME_PATTERN, "1-255 characters of A-Z a-z 0-9 _ -");

  const settings: LeaseQueueSettings = {
    queueName,
    maxLeaseMs: Math.max(defaultLeaseMs, ...Object.values(leases)),
    workerTimeout,
    workerMemoryMb: integer("workerMemoryMb", props.workerMemoryMb ?? D.workerMemoryMb, 128, 10_240, " MB"),
    reclaimerTimeout,
    reclaimerMemoryMb: integer("reclaimerMemoryMb", props.reclaimerMemoryMb ?? D.reclaimerMemoryMb, 128, 10_240, " MB"),
    visibilityTimeout: Duration.seconds(VISIBILITY_TIMEOUT_FACTOR * workerTimeout.toSeconds({ integral: false })),
    batchSize,
    maxBatchingWindow,
    maxConcurrency: integer("maxConcurrency", props.maxConcurrency ?? D.maxConcurrency, 2, 1000),
    maxReceiveCount: integer("maxReceiveCount", props.maxReceiveCount ?? D.maxReceiveCount, 1, 1000),
    // 100 is the functions' cap on LEASEQ_CLAIM_BATCH (functions/config.ts).
    claimBatchSize:
      props.claimBatchSize === undefined ? undefined : integer("claimBatchSize", props.claimBatchSize, 1, 100),
    reclaimSchedule,
    upstashSecretArn,
    logRetention: props.logRetention ?? D.logRetention,
    alarmEmail: props.alarmEmail,
    alarmTopic: props.alarmTopic,
    dashboardName: props.dashboardName,
    oldestReadyAgeAlarmMs: integer(
      "oldestReadyAgeAlarmMs",
      props.oldestReadyAgeAlarmMs ?? D.oldestReadyAgeAlarmMs,
      1000,
      86_400_000,
      " ms",
    ),
    leaseOverdueAlarmMs: integer(
      "leaseOverdueAlarmMs",
      props.leaseOverdueAlarmMs ?? 2 * scheduleMs,
      1000,
      86_400_000,
      " ms",
    ),
    workerEntry: props.workerEntry ?? D.workerEntry,
    reclaimerEntry: props.reclaimerEntry ?? D.reclaimerEntry,
  };
  if (problems.length > 0) throw new LeaseQueuePropsError(problems);
  return settings;
}
