import { type Duration, RemovalPolicy } from "aws-cdk-lib";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import type { TaskDeclaration, TaskDefinitions } from "../functions/tasks.js";
import { DEFAULT_NODE_RUNTIME, type NodeRuntime } from "./bundling.js";

/** What a `LeaseQueue` can be told: `tasks` and `workerEntry`, the rest optional with the defaults in docs/deploy.md. */
export interface LeaseQueueProps {
  /** The leaseq queue name: the Redis hash tag and the `queue` metric dimension. `^[A-Za-z0-9_.-]{1,64}$`. Default "default". */
  readonly queueName?: string;
  /**
   * This deployment's name on the queue (LEASEQ_DEPLOYMENT): what its task declaration writes at a
   * cold start (its schedules) is its own, and another deployment sharing the queue (`acceptTypes`)
   * neither changes nor removes it. Keep it when you rename the stack or move the construct, or the
   * schedules are set again as a new deployment's (the old owner's are left, listed by `leaseq
   * schedules list`). `^[A-Za-z0-9_.-]{1,64}$`. Default: the construct's path (`<stack>.<id>`).
   */
  readonly deployment?: string;
  /**
   * The task types the worker runs: the `defineTasks(...)` result your worker entry passes to
   * `createWorker`. Their policies are checked against the worker timeout at synth and handed to the
   * worker, which refuses to start if its own declaration differs. Required.
   */
  readonly tasks: TaskDeclaration | TaskDefinitions;
  /**
   * Your worker entry file (it exports `handler = createWorker({ tasks })`): an absolute path, or one
   * relative to the directory `cdk` runs in (your CDK app's). Bundled with esbuild. Required.
   */
  readonly workerEntry: string;
  /**
   * Worker timeout, 1-900 s; the wake queue's visibility timeout is 6 times this. Default 5 minutes,
   * or the longest lease plus 5 s in whole seconds when that is more.
   */
  readonly workerTimeout?: Duration;
  /**
   * The Node.js major version of all three functions: Lambda runtime `nodejs22.x` or `nodejs24.x`,
   * and the esbuild target of their bundles (`node22`, `node24`). 22 or 24. Default 22.
   */
  readonly runtime?: NodeRuntime;
  /**
   * The task queue is SQS FIFO (`<name>.fifo`): the intake reads each message group in send order,
   * and producers set `MessageGroupId` to the task's group, so an ordered group runs in the order
   * one producer sent its tasks, also in separate messages (docs/groups.md). Changing it replaces
   * the queue (a new URL). Default false.
   */
  readonly fifo?: boolean;
  /** Intake function timeout, 1-900 s; the task queue's visibility timeout is 6 times this. Default 30 s. */
  readonly intakeTimeout?: Duration;
  /** Intake function memory in MB, 128-10240. Default 256. */
  readonly intakeMemoryMb?: number;
  /** Most concurrent intake invocations SQS starts, 2-1000. Default 10. */
  readonly intakeMaxConcurrency?: number;
  /** Worker memory in MB, 128-10240. Default 256. */
  readonly workerMemoryMb?: number;
  /** Reclaimer timeout, 1-900 s. Default 60 seconds. */
  readonly reclaimerTimeout?: Duration;
  /** Reclaimer memory in MB, 128-10240. Default 256. */
  readonly reclaimerMemoryMb?: number;
  /**
   * Task-queue records per intake invocation: 1-10, or up to 10000 with a batching window ≥ 1 s
   * (a FIFO queue: 1-10). Default 10.
   */
  readonly batchSize?: number;
  /** How long SQS gathers task-queue records before invoking the intake, 0-300 s (not on FIFO). Default 0. */
  readonly maxBatchingWindow?: Duration;
  /** Most concurrent worker invocations the wake queue starts, 2-1000. Default 10. */
  readonly maxConcurrency?: number;
  /** Receives of one task-queue message before it moves to the dead-letter queue, 1-1000. Default 5. */
  readonly maxReceiveCount?: number;
  /** Tasks one worker claim leases (`LEASEQ_CLAIM_BATCH`), 1-100. Default: the functions' own (20). */
  readonly claimBatchSize?: number;
  /** How often the reclaimer runs: whole minutes, 1-60. Default 1 minute. */
  readonly reclaimSchedule?: Duration;
  /**
   * Partitions of the queue (`LEASEQ_PARTITIONS`, docs/partitions.md): one logical queue over this
   * many hash tags, spread over a Redis Cluster's masters or over several Upstash databases (the
   * secret then holds a list of `{"url","token"}`, partition k in entry k mod its length). Each
   * partition counts type rates and concurrency by itself. 1-64. Default 1: the queue as it always
   * was, and no variable set.
   */
  readonly partitions?: number;
  /**
   * The partition count before a shrink under way (`LEASEQ_SHRINKING_FROM`): new tasks go to the
   * first `partitions`, and the worker and reclaimer still drain the rest. Once
   * `PartitionedQueue.dropDrained` has dropped them all, deploy without it (docs/partitions.md,
   * "Growing and shrinking"). More than `partitions`, at most 64. Default none.
   */
  readonly shrinkingFrom?: number;
  /**
   * Complete ARN of a Secrets Manager secret holding `{"url","token"}` (exclusive with `secret`).
   * Default: a new empty secret.
   */
  readonly upstashSecretArn?: string;
  /**
   * A Secrets Manager secret holding `{"url","token"}`, e.g. another LeaseQueue's `secret`: several
   * queues on one Upstash database share one secret (exclusive with `upstashSecretArn`). Default: a
   * new empty secret.
   */
  readonly secret?: ISecret;
  /**
   * What happens to a secret this construct creates when it leaves the stack (`cdk destroy`, a
   * removed queue): RETAIN keeps it and the Upstash token in it, DESTROY deletes it (after Secrets
   * Manager's recovery window), RETAIN_ON_UPDATE_OR_DELETE. Not with `secret` or `upstashSecretArn`.
   * Default RETAIN.
   */
  readonly secretRemovalPolicy?: RemovalPolicy;
  /** Retention of both functions' logs. Default one month. */
  readonly logRetention?: RetentionDays;
  /** Email subscribed to a new SNS topic that receives alarm and OK actions. Default none. */
  readonly alarmEmail?: string;
  /** An existing SNS topic for alarm and OK actions (instead of `alarmEmail`). Default none. */
  readonly alarmTopic?: ITopic;
  /** Dashboard name, `^[A-Za-z0-9_-]{1,255}$`. Default: generated by CloudFormation. */
  readonly dashboardName?: string;
  /**
   * Alarm (`oldestWaitingTaskTooOld`) when a task has waited longer than this to start, parked tasks
   * included (a group or type letting nothing out), in ms, 1000-86400000. Default 300000.
   */
  readonly oldestWaitingAgeAlarmMs?: number;
  /**
   * @deprecated The former name of `oldestWaitingAgeAlarmMs`, read as it: the alarm now counts parked
   * tasks too. Exclusive with it.
   */
  readonly oldestReadyAgeAlarmMs?: number;
  /** Alarm when a lease is overdue by more than this, in ms, 1000-86400000. Default 2 reclaim periods. */
  readonly leaseOverdueAlarmMs?: number;
  /**
   * When `failedRateHigh` fires: more than `percent` of the tasks finished in `periodMinutes` FAILED,
   * and at least `minFailed` of them. `false`: no such alarm. Default `{ percent: 1, periodMinutes: 15,
   * minFailed: 5 }` (docs/deploy.md, "Alarms").
   */
  readonly failedRateAlarm?: FailedRateAlarmProps | false;
  /**
   * When the intake's and the worker's `Errors` and `Throttles` alarms fire: more than the percent of
   * their invocations in `breachingMinutes` of the last `windowMinutes`. `false`: none of the four
   * (the reclaimer's stay). Default `{ errorPercent: 5, throttlePercent: 10, breachingMinutes: 3,
   * windowMinutes: 5 }`.
   */
  readonly functionAlarms?: FunctionAlarmProps | false;
  /** A reclaimer entry of your own (absolute, or relative to the CDK app's directory). Default: leaseq's. */
  readonly reclaimerEntry?: string;
}

/** The `failedRateAlarm` prop: each field optional, the default in LEASE_QUEUE_DEFAULTS. */
export interface FailedRateAlarmProps {
  /** Fires above this percent of the finished tasks FAILED, 0 up to (not including) 100. Default 1. */
  readonly percent?: number;
  /**
   * The window, whole minutes from 1 to 1440, a multiple of `reclaimSchedule`'s. Default 15, or the
   * first multiple of `reclaimSchedule` above it.
   */
  readonly periodMinutes?: number;
  /** ...and only with at least this many FAILED in the window, 1-1000000. Default 5. */
  readonly minFailed?: number;
}

/** The `functionAlarms` prop: each field optional, the default in LEASE_QUEUE_DEFAULTS. */
export interface FunctionAlarmProps {
  /** A minute breaches above this percent of the function's invocations failed, 0 up to (not including) 100. Default 5. */
  readonly errorPercent?: number;
  /** A minute breaches above this percent of its requests throttled, 0 up to (not including) 100. Default 10. */
  readonly throttlePercent?: number;
  /** Fires when this many minutes of the last `windowMinutes` breach, 1-`windowMinutes`. Default 3. */
  readonly breachingMinutes?: number;
  /** The minutes the alarm looks back over, 1-60. Default 5. */
  readonly windowMinutes?: number;
}

/** Defaults of every prop, as listed in docs/deploy.md "Construct settings". */
export const LEASE_QUEUE_DEFAULTS = {
  queueName: "default",
  workerTimeoutSeconds: 300,
  runtime: DEFAULT_NODE_RUNTIME,
  workerMemoryMb: 256,
  intakeTimeoutSeconds: 30,
  intakeMemoryMb: 256,
  intakeMaxConcurrency: 10,
  reclaimerTimeoutSeconds: 60,
  reclaimerMemoryMb: 256,
  batchSize: 10,
  maxBatchingWindowSeconds: 0,
  maxConcurrency: 10,
  maxReceiveCount: 5,
  reclaimScheduleMinutes: 1,
  partitions: 1,
  secretRemovalPolicy: RemovalPolicy.RETAIN,
  logRetention: RetentionDays.ONE_MONTH,
  oldestWaitingAgeAlarmMs: 300_000,
  failedRateAlarm: { percent: 1, periodMinutes: 15, minFailed: 5 },
  functionAlarms: { errorPercent: 5, throttlePercent: 10, breachingMinutes: 3, windowMinutes: 5 },
} as const;
