import type { Duration } from "aws-cdk-lib";
import { Metric } from "aws-cdk-lib/aws-cloudwatch";

import type { QueueMetricName } from "../functions/metric-names.js";

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

/**
 * The reclaimer's CloudWatch namespace. Not a prop: functions/reclaimer.ts names it in its Metrics
 * constructor, which Powertools prefers over POWERTOOLS_METRICS_NAMESPACE, so another value here
 * would leave every queue alarm watching an empty metric.
 */
export const METRICS_NAMESPACE = "leaseq";

/** The metrics that count what happened in a run (summed over a period); the rest are gauges. */
const COUNTERS: ReadonlySet<QueueMetricName> = new Set(["reclaimed", "trimmed", "finishedDone", "finishedFailed"]);

/** Builds metrics of one queue with the namespace and dimension set the reclaimer publishes. */
export class QueueMetrics {
  constructor(private readonly queueName: string) {}

  /** The dimensions on every metric of this queue. */
  get dimensions(): Record<string, string> {
    return { service: SERVICE_NAMES.reclaimer, queue: this.queueName };
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
