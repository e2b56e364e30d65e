import type { Duration } from "aws-cdk-lib";
import { MathExpression, Metric } from "aws-cdk-lib/aws-cloudwatch";

import { METRICS_NAMESPACE, type QueueMetricName, type RUN_METRICS } from "../functions/metric-names.js";

export type { QueueMetricName };

/**
 * Powertools service names of the two functions. Powertools Metrics always adds a `service`
 * dimension next to the reclaimer's `queue` dimension, and CloudWatch matches a metric on its
 * exact dimension set: an alarm naming only `queue` would watch a metric nobody publishes. The
 * reclaimer names its service "leaseq-reclaimer" (functions/reclaimer.ts); the construct sets the
 * same in POWERTOOLS_SERVICE_NAME, so both agree whichever one Powertools reads.
 */
export const SERVICE_NAMES = {
  intake: "leaseq-intake",
  worker: "leaseq-worker",
  reclaimer: "leaseq-reclaimer",
} as const;

/** The namespace of every leaseq metric, declared with them (functions/metric-names.ts). */
export { METRICS_NAMESPACE };

/** The metrics that count what happened in a run (summed over a period); the rest are gauges. */
const COUNTERS: ReadonlySet<QueueMetricName> = new Set(["reclaimed", "trimmed", "finishedDone", "finishedFailed"]);

/** Builds metrics of one queue with the namespace and dimension set the reclaimer publishes. */
export class QueueMetrics {
  constructor(private readonly queueName: string) {}

  /** The dimensions on every metric of this queue. */
  get dimensions(): Record<string, string> {
    return { service: SERVICE_NAMES.reclaimer, queue: this.queueName };
  }

  /**
   * A statistic of a run metric the worker publishes per task type (EMF, functions/run-metrics.ts:
   * dimensions service, queue, type), one line per type: a SEARCH over this queue's types, so the
   * graph follows the types a deploy declares without naming them.
   */
  runMetric(name: keyof typeof RUN_METRICS, statistic: "p50" | "p99", period: Duration): MathExpression {
    const search = `{${METRICS_NAMESPACE},queue,service,type} MetricName="${name}" service="${SERVICE_NAMES.worker}" queue="${this.queueName}"`;
    return new MathExpression({
      expression: `SEARCH('${search}', '${statistic}', ${period.toSeconds()})`,
      label: `${statistic} ${name}`,
      period,
    });
  }

  /** A queue metric; gauges (depths, ages) read as Maximum, counters (COUNTERS) as Sum. */
  metric(name: QueueMetricName, period: Duration, label?: string): Metric {
    const counter = COUNTERS.has(name);
    return new Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: this.dimensions,
      statistic: counter ? "Sum" : "Maximum",
      period,
      label: label ?? name,
    });
  }
}
