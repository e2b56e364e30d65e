import { Duration } from "aws-cdk-lib";
import {
  Alarm,
  type AlarmProps,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  type Metric,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import type { QueueMetrics } from "./metrics.js";
import type { LeaseQueueSettings } from "./settings.js";

/** What the monitoring watches. */
export interface MonitoringProps {
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

/** The alarms of one leaseq deployment, by what each says is wrong. */
export interface LeaseQueueAlarms {
  readonly deadLetterQueueNotEmpty: Alarm;
  readonly intakeBehind: Alarm;
  readonly oldestReadyTaskTooOld: Alarm;
  readonly failedTasksGrowing: Alarm;
  readonly leasesOverdue: Alarm;
  readonly reclaimerNotInvoked: Alarm;
  readonly reclaimerErrors: Alarm;
}

/**
 * Alarms and a dashboard on the reclaimer's queue metrics, the SQS queues and the three functions.
 * Queue metrics come once per reclaimer run, so their period is the reclaim schedule; when they
 * stop coming, `reclaimerNotInvoked` or `reclaimerErrors` fires, so the others treat missing data
 * as not breaching instead of paging twice for one cause.
 */
export class LeaseQueueMonitoring extends Construct {
  readonly alarms: LeaseQueueAlarms;
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { settings, metrics, intake, worker, reclaimer } = props;
    const period = settings.reclaimSchedule;
    const minute = Duration.minutes(1);

    const alarm = (alarmId: string, description: string, options: AlarmOptions): Alarm => {
      const created = new Alarm(this, alarmId, {
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

    this.alarms = {
      deadLetterQueueNotEmpty: alarm(
        "DeadLetterQueueNotEmpty",
        "SQS messages reached the dead-letter queue (malformed records or a worker that keeps failing).",
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
        "a task has waited more than a minute in the task queue: the intake is failing, throttled or refusing to start.",
        {
          metric: props.queue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: "Maximum" }),
          threshold: 60,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 2,
        },
      ),
      oldestReadyTaskTooOld: alarm(
        "OldestReadyTaskTooOld",
        `a ready task has waited more than ${settings.oldestReadyAgeAlarmMs} ms: workers are not keeping up or not running.`,
        {
          metric: metrics.metric("oldestReadyAgeMs", period),
          threshold: settings.oldestReadyAgeAlarmMs,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        },
      ),
      // FAILED is a gauge (trimmed after retention), so "growing" is its change between two runs.
      failedTasksGrowing: alarm(
        "FailedTasksGrowing",
        "tasks moved to FAILED since the previous reclaimer run (attempts used up or a permanent failure).",
        {
          metric: new MathExpression({
            expression: "DIFF(failed)",
            usingMetrics: { failed: metrics.metric("failed", period) },
            period,
            label: "failed tasks added",
          }),
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        },
      ),
      leasesOverdue: alarm(
        "LeasesOverdue",
        `a lease is overdue by more than ${settings.leaseOverdueAlarmMs} ms: expired leases are not being reclaimed.`,
        {
          metric: metrics.metric("mostOverdueLeaseMs", period),
          threshold: settings.leaseOverdueAlarmMs,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        },
      ),
      // No invocation datapoint at all is the failure this alarm exists for, hence BREACHING.
      reclaimerNotInvoked: alarm(
        "ReclaimerNotInvoked",
        "the reclaimer has not run for 3 schedule periods: expired leases stay leased and no drain invocation starts the worker.",
        {
          metric: reclaimer.metricInvocations({ period, statistic: "Sum" }),
          threshold: 1,
          comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
          evaluationPeriods: 3,
          treatMissingData: TreatMissingData.BREACHING,
        },
      ),
      // Two failing runs in a row, so one Redis blip does not page.
      reclaimerErrors: alarm(
        "ReclaimerErrors",
        "the reclaimer failed in 2 consecutive schedule periods (Redis unreachable, bad secret or a bug).",
        {
          metric: reclaimer.metricErrors({ period, statistic: "Sum" }),
          threshold: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 2,
        },
      ),
    };

    this.dashboard = new Dashboard(this, "Dashboard", {
      dashboardName: settings.dashboardName,
      defaultInterval: Duration.hours(3),
    });
    const graph = (title: string, left: Metric[] | MathExpression[], width = 8) =>
      new GraphWidget({ title, left, width, height: 6 });
    const each = (make: (fn: IFunction, label: string) => Metric) => [
      make(intake, "intake"),
      make(worker, "worker"),
      make(reclaimer, "reclaimer"),
    ];
    this.dashboard.addWidgets(
      graph("Tasks by state", [
        metrics.metric("ready", period),
        metrics.metric("scheduled", period),
        metrics.metric("leased", period),
      ]),
      graph("Finished tasks (within retention)", [metrics.metric("done", period), metrics.metric("failed", period)]),
      graph("Per run: finished, reclaimed, trimmed", [
        metrics.metric("finishedDone", period),
        metrics.metric("finishedFailed", period),
        metrics.metric("reclaimed", period),
        metrics.metric("trimmed", period),
      ]),
    );
    this.dashboard.addWidgets(
      graph("Oldest waiting task age (ms): parked ones included, and the next to run", [
        metrics.metric("oldestWaitingAgeMs", period),
        metrics.metric("oldestReadyAgeMs", period),
      ]),
      graph("Most overdue lease (ms)", [metrics.metric("mostOverdueLeaseMs", period)]),
      graph("SQS messages visible", [
        props.queue.metricApproximateNumberOfMessagesVisible({ period: minute, label: "task queue" }),
        props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: minute, label: "dead-letter queue" }),
      ]),
    );
    this.dashboard.addWidgets(
      graph(
        "Function errors",
        each((fn, label) => fn.metricErrors({ period: minute, label })),
      ),
      graph(
        "Function throttles",
        each((fn, label) => fn.metricThrottles({ period: minute, label })),
      ),
      graph(
        "Function duration p99 (ms)",
        each((fn, label) => fn.metricDuration({ period: minute, statistic: "p99", label })),
      ),
    );
    this.dashboard.addWidgets(
      new AlarmStatusWidget({ title: "Alarms", alarms: Object.values(this.alarms), width: 24, height: 4 }),
    );
  }
}

/** Alarm props minus what every leaseq alarm sets the same way (evaluationPeriods defaults to 1). */
type AlarmOptions = Omit<AlarmProps, "alarmDescription" | "evaluationPeriods"> & { evaluationPeriods?: number };
