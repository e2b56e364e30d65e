import { Duration } from "aws-cdk-lib";
import {
  Alarm,
  type AlarmProps,
  ComparisonOperator,
  type IMetric,
  MathExpression,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import type { FunctionAlarmSettings } from "./alarm-settings.js";
import type { QueueMetrics } from "./metrics.js";
import type { LeaseQueueSettings } from "./settings.js";

/** What the alarms (and the dashboard) watch. */
export interface MonitoredResources {
  readonly settings: LeaseQueueSettings;
  readonly metrics: QueueMetrics;
  readonly queue: IQueue;
  readonly deadLetterQueue: IQueue;
  readonly intake: IFunction;
  readonly worker: IFunction;
  readonly reclaimer: IFunction;
  /** Receives alarm and OK actions when given. */
  readonly alarmTopic?: ITopic;
}

/**
 * The alarms of one leaseq deployment, by what each says is wrong; docs/deploy.md "Alarms" has the
 * table and a runbook for each. The optional ones are absent when their prop is `false`.
 */
export interface LeaseQueueAlarms {
  readonly deadLetterQueueNotEmpty: Alarm;
  readonly intakeBehind: Alarm;
  /** A task waited too long to start, parked tasks included (it replaced `oldestReadyTaskTooOld`). */
  readonly oldestWaitingTaskTooOld: Alarm;
  /** Too many finished tasks FAILED (it replaced `failedTasksGrowing`); absent with `failedRateAlarm: false`. */
  readonly failedRateHigh?: Alarm;
  readonly leasesOverdue: Alarm;
  readonly reclaimerNotInvoked: Alarm;
  readonly reclaimerErrors: Alarm;
  readonly reclaimerThrottled: Alarm;
  /** The next four are absent with `functionAlarms: false`. */
  readonly intakeErrors?: Alarm;
  readonly intakeThrottled?: Alarm;
  readonly workerErrors?: Alarm;
  readonly workerThrottled?: Alarm;
}

/** CloudWatch refuses an alarm description longer than this (PutMetricAlarm's AlarmDescription). */
export const ALARM_DESCRIPTION_MAX_CHARS = 1024;

/** The alarms present: those a `false` prop left out are not in it. */
export function alarmList(alarms: LeaseQueueAlarms): Alarm[] {
  return Object.values(alarms).filter((alarm): alarm is Alarm => alarm !== undefined);
}

/** A time in ms as an on-call reads it: "5 min", "90 s", "1500 ms". */
function spoken(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/**
 * Creates the alarms under `scope`, each with a description that says what it likely means and
 * the first command to run (the function names in them resolve at deploy). Queue metrics come once
 * per reclaimer run, so their period is the reclaim schedule; when they stop coming,
 * `reclaimerNotInvoked`, `reclaimerErrors` or `reclaimerThrottled` fires, so the others treat
 * missing data as not breaching instead of paging twice for one cause. Lambda publishes nothing for
 * a minute without invocations: not breaching either.
 */
export function createAlarms(scope: Construct, props: MonitoredResources): LeaseQueueAlarms {
  const { settings, metrics, intake, worker, reclaimer } = props;
  const period = settings.reclaimSchedule;
  const minute = Duration.minutes(1);
  const cli = `leaseq --queue ${settings.queueName}`;

  const alarm = (id: string, description: string, options: AlarmOptions): Alarm => {
    const created = new Alarm(scope, id, {
      alarmDescription: `leaseq queue "${settings.queueName}": ${description}`,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      ...options,
    });
    if (props.alarmTopic) {
      created.addAlarmAction(new SnsAction(props.alarmTopic));
      created.addOkAction(new SnsAction(props.alarmTopic));
    }
    return created;
  };

  const concurrencyAdvice =
    "Run: aws lambda get-account-settings, and see which functions hold the concurrency (AWS/Lambda ConcurrentExecutions in CloudWatch); raise the quota or lower the busiest function's concurrency";

  const failedRate = settings.failedRateAlarm;
  const failedRateWindow = failedRate ? Duration.minutes(failedRate.periodMinutes) : minute;

  return {
    deadLetterQueueNotEmpty: alarm(
      "DeadLetterQueueNotEmpty",
      `messages wait in the dead-letter queue: records refused at ingest (not a task list, an undeclared type, a payload its schema rejects) or failed on ${settings.maxReceiveCount} receives. Run: export LEASEQ_DLQ_URL=${props.deadLetterQueue.queueUrl}, then leaseq dlq show for each message's reason. Fix the producer or deploy the missing type, then: leaseq dlq redrive. "no reason recorded": the intake failed on every receive, read the logs of function ${intake.functionName}. OK again once the queue is empty.`,
      {
        metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: minute,
          statistic: "Maximum",
        }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      },
    ),
    // The intake puts a task in Redis within a second of its send; a minute means it is not running.
    intakeBehind: alarm(
      "IntakeBehind",
      `a message has waited over 60 s in the task queue in 2 consecutive minutes: the intake is not taking it. It is failing (IntakeErrors: Redis or Upstash unreachable, a bad secret, a configuration its cold start refuses), throttled (IntakeThrottled) or not started at all. Read the logs of function ${intake.functionName}; ${cli} stats tells whether Redis answers.`,
      {
        metric: props.queue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: "Maximum" }),
        threshold: 60,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 2,
      },
    ),
    // Waiting, not ready: a group or type letting nothing out parks its tasks out of the ready set,
    // whose head (oldestReadyAgeMs) then never ages (docs/groups.md, "Stuck groups").
    oldestWaitingTaskTooOld: alarm(
      "OldestWaitingTaskTooOld",
      `a task has waited over ${spoken(settings.oldestWaitingAgeAlarmMs)} to start, parked tasks included: a group or type letting nothing out (held behind a FAILED task, a head running long, its rate used up, paused) or workers not keeping up. Run: ${cli} groups (stuck groups first; a held one: requeue or skip its FAILED task), then ${cli} stats (paused? how many ready, leased?). No group stuck and ready tasks piling up: the workers are failing (WorkerErrors, WorkerThrottled, the logs of function ${worker.functionName}) or too few (raise maxConcurrency).`,
      {
        metric: metrics.metric("oldestWaitingAgeMs", period),
        threshold: settings.oldestWaitingAgeAlarmMs,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      },
    ),
    // A rate, not any failure: one bad input in a thousand is an ordinary day for an ETL queue. The
    // count below minFailed reads 0, so 1 failure of 3 tasks does not page at 3 am; from minFailed
    // on, done + failed ≥ minFailed ≥ 1, so the division is never by zero.
    ...(failedRate && {
      failedRateHigh: alarm(
        "FailedRateHigh",
        `over ${failedRate.percent}% of the tasks that finished in ${failedRate.periodMinutes} min FAILED, at least ${failedRate.minFailed} of them (attempts used up, or a PermanentError). Run: ${cli} list failed --limit 20 for their errors, then ${cli} list failed --error '<text>' for one cause. A deploy just before? Suspect its handlers first. Once fixed: ${cli} requeue --error '<text>' --dry-run, then again without --dry-run.`,
        {
          metric: new MathExpression({
            expression: `IF(failed >= ${failedRate.minFailed}, 100 * failed / (done + failed), 0)`,
            usingMetrics: {
              failed: metrics.metric("finishedFailed", failedRateWindow),
              done: metrics.metric("finishedDone", failedRateWindow),
            },
            period: failedRateWindow,
            label: `% of finished tasks FAILED (0 below ${failedRate.minFailed} FAILED)`,
          }),
          threshold: failedRate.percent,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        },
      ),
    }),
    leasesOverdue: alarm(
      "LeasesOverdue",
      `a lease is overdue by over ${spoken(settings.leaseOverdueAlarmMs)}: expired leases are not being reclaimed, so the tasks of a crashed worker do not run again. The reclaimer is failing, not running or falling behind (ReclaimerErrors, ReclaimerNotInvoked, ReclaimerThrottled; the logs of function ${reclaimer.functionName}). Then: ${cli} stats and ${cli} check.`,
      {
        metric: metrics.metric("mostOverdueLeaseMs", period),
        threshold: settings.leaseOverdueAlarmMs,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      },
    ),
    // No invocation datapoint at all is the failure this alarm exists for, hence BREACHING.
    reclaimerNotInvoked: alarm(
      "ReclaimerNotInvoked",
      `the reclaimer has not run for 3 schedule periods: expired leases stay leased, schedules are not planned and no drain invocation starts the worker. Check that the stack's EventBridge rule ("runs the reclaimer") is enabled and that function ${reclaimer.functionName} exists (aws lambda get-function --function-name ${reclaimer.functionName}) and is not throttled (ReclaimerThrottled).`,
      {
        metric: reclaimer.metricInvocations({ period, statistic: "Sum" }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 3,
        treatMissingData: TreatMissingData.BREACHING,
      },
    ),
    // The reclaimer runs once a period: two failing runs in a row, so one Redis blip does not page.
    reclaimerErrors: alarm(
      "ReclaimerErrors",
      `the reclaimer failed in 2 consecutive runs: Redis or Upstash unreachable, a bad or empty secret, or a bug. Read the logs of function ${reclaimer.functionName}. With AWS credentials and the reclaimer's UPSTASH_SECRET_ARN, ${cli} stats tells whether Redis answers with that secret.`,
      {
        metric: reclaimer.metricErrors({ period, statistic: "Sum" }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 2,
      },
    ),
    reclaimerThrottled: alarm(
      "ReclaimerThrottled",
      `the reclaimer was throttled in 2 consecutive runs: the account's Lambda concurrency is used up (or the function's reserved concurrency is 0). EventBridge retries a run for a minute, then drops it; expired leases wait meanwhile. ${concurrencyAdvice}.`,
      {
        metric: reclaimer.metricThrottles({ period, statistic: "Sum" }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 2,
      },
    ),
    ...(settings.functionAlarms && functionAlarms(settings.functionAlarms)),
  };

  /** The intake's and the worker's Errors and Throttles alarms: a percent of invocations, in M of N minutes. */
  function functionAlarms(limits: FunctionAlarmSettings) {
    const { breachingMinutes, windowMinutes } = limits;
    const within = `in ${breachingMinutes} of the last ${windowMinutes} minutes`;
    // One minute over the line is a blip (a Redis failover, a cold-start burst); M of N is not.
    const shape = {
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: windowMinutes,
      datapointsToAlarm: breachingMinutes,
    };
    // Errors > 0 implies invocations ≥ errors in that minute: no division by zero.
    const errorRate = (fn: IFunction): IMetric =>
      new MathExpression({
        expression: "IF(errors > 0, 100 * errors / invocations, 0)",
        usingMetrics: {
          errors: fn.metricErrors({ period: minute, statistic: "Sum" }),
          invocations: fn.metricInvocations({ period: minute, statistic: "Sum" }),
        },
        period: minute,
        label: "% of invocations failed",
      });
    // A throttled request is not an invocation: the share is of both. Lambda publishes no
    // Invocations for a minute in which every request was throttled, hence FILL.
    const throttleRate = (fn: IFunction): IMetric =>
      new MathExpression({
        expression: "IF(throttles > 0, 100 * throttles / (FILL(invocations, 0) + throttles), 0)",
        usingMetrics: {
          throttles: fn.metricThrottles({ period: minute, statistic: "Sum" }),
          invocations: fn.metricInvocations({ period: minute, statistic: "Sum" }),
        },
        period: minute,
        label: "% of requests throttled",
      });
    const throttledText = (name: string, fn: IFunction, waits: string) =>
      `over ${limits.throttlePercent}% of the ${name}'s requests were throttled ${within}: the account's Lambda concurrency is used up (function ${fn.functionName}). ${waits} ${concurrencyAdvice}, e.g. maxConcurrency or intakeMaxConcurrency here.`;
    return {
      intakeErrors: alarm(
        "IntakeErrors",
        `over ${limits.errorPercent}% of the intake's invocations failed ${within}: Redis or Upstash unreachable, a bad secret, or a cold start refusing its configuration (its declaration differs from LEASEQ_TASKS). SQS retries those batches; after ${settings.maxReceiveCount} receives they go to the dead-letter queue. Read the logs of function ${intake.functionName}; ${cli} stats tells whether Redis answers.`,
        { metric: errorRate(intake), threshold: limits.errorPercent, ...shape },
      ),
      intakeThrottled: alarm(
        "IntakeThrottled",
        throttledText("intake", intake, "Sent tasks wait in the task queue (IntakeBehind follows)."),
        { metric: throttleRate(intake), threshold: limits.throttlePercent, ...shape },
      ),
      workerErrors: alarm(
        "WorkerErrors",
        `over ${limits.errorPercent}% of the worker's invocations failed ${within}. A task that throws does not fail one: the process did (out of memory: raise workerMemoryMb; a crash, a timeout, Redis or Upstash unreachable, or a cold start refusing its configuration: its declaration differs from LEASEQ_TASKS). The leases it held are reclaimed and run again. Read the logs of function ${worker.functionName}; then ${cli} stats.`,
        { metric: errorRate(worker), threshold: limits.errorPercent, ...shape },
      ),
      workerThrottled: alarm(
        "WorkerThrottled",
        throttledText(
          "worker",
          worker,
          "Wake-ups and drain invocations are retried; tasks wait longer (OldestWaitingTaskTooOld follows).",
        ),
        { metric: throttleRate(worker), threshold: limits.throttlePercent, ...shape },
      ),
    };
  }
}

/** Alarm props minus what every leaseq alarm sets the same way (evaluationPeriods defaults to 1). */
type AlarmOptions = Omit<AlarmProps, "alarmDescription" | "evaluationPeriods"> & { evaluationPeriods?: number };
