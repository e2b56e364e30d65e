import { Duration } from "aws-cdk-lib";
import { AlarmStatusWidget, Dashboard, GraphWidget, MathExpression, Metric } from "aws-cdk-lib/aws-cloudwatch";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { Construct } from "constructs";
import { PARTITION_DIMENSION, type PartitionMetricName } from "../functions/metric-names.js";
import { alarmList, createAlarms, type LeaseQueueAlarms, type MonitoredResources } from "./alarms.js";
import { METRICS_NAMESPACE } from "./metrics.js";

/** What the monitoring watches: the alarms' and the dashboard's resources. */
export type MonitoringProps = MonitoredResources;

/**
 * Alarms (infra/alarms.ts) and a dashboard on the reclaimer's queue metrics, the SQS queues and the
 * three functions.
 */
export class LeaseQueueMonitoring extends Construct {
  readonly alarms: LeaseQueueAlarms;
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { settings, metrics, intake, worker, reclaimer } = props;
    const period = settings.reclaimSchedule;
    const minute = Duration.minutes(1);

    this.alarms = createAlarms(this, props);

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
    // The widgets above read the queue's totals (summed counts, the oldest age of any partition); a
    // partitioned queue also gets one line per partition, to show one falling behind the others.
    // A shrink's draining partitions are drawn too: watching them empty is the point of it.
    const drawn = settings.shrinkingFrom ?? settings.partitions;
    if (drawn > 1) {
      const perPartition = (name: PartitionMetricName) =>
        Array.from(
          { length: drawn },
          (_, index) =>
            new Metric({
              namespace: METRICS_NAMESPACE,
              metricName: name,
              dimensionsMap: { ...metrics.dimensions, [PARTITION_DIMENSION]: String(index) },
              // Gauges, read as the totals are (QueueMetrics.metric).
              statistic: "Maximum",
              period,
              label: index < settings.partitions ? `partition ${index}` : `partition ${index} (draining)`,
            }),
        );
      this.dashboard.addWidgets(
        graph("Ready tasks per partition", perPartition("ready"), 12),
        graph("Oldest ready task age per partition (ms)", perPartition("oldestReadyAgeMs"), 12),
      );
    }
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
    // The on-call's questions: how many finished tasks FAILED, and how long tasks wait and run, per
    // type (the worker's EMF, p50 and p99).
    this.dashboard.addWidgets(
      graph("Finished tasks FAILED (%)", [
        new MathExpression({
          expression: "IF(done + failed > 0, 100 * failed / (done + failed), 0)",
          usingMetrics: {
            failed: metrics.metric("finishedFailed", period),
            done: metrics.metric("finishedDone", period),
          },
          label: "FAILED % of finished",
          period,
        }),
      ]),
      graph("Queue wait per type (ms), p50 and p99", [
        metrics.runMetric("queueWaitMs", "p50", minute),
        metrics.runMetric("queueWaitMs", "p99", minute),
      ]),
      graph("Run time per type (ms), p50 and p99", [
        metrics.runMetric("runTimeMs", "p50", minute),
        metrics.runMetric("runTimeMs", "p99", minute),
      ]),
    );
    this.dashboard.addWidgets(
      new AlarmStatusWidget({ title: "Alarms", alarms: alarmList(this.alarms), width: 24, height: 4 }),
    );
  }
}
