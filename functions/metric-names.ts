/**
 * The CloudWatch namespace of every leaseq metric: the reclaimer's queue metrics, the worker's run
 * metrics, and the construct's alarms and dashboard that read them (one place, so they agree).
 */
export const METRICS_NAMESPACE = "leaseq";

/** The worker's metrics per task type, one value per run (functions/run-metrics.ts). */
export const RUN_METRICS = { queueWaitMs: "Milliseconds", runTimeMs: "Milliseconds" } as const;

/**
 * The metrics the reclaimer publishes, one data point per run (EMF through Powertools Metrics), with
 * their units: declared once for the reclaimer that publishes them and the construct's alarms and
 * dashboard that read them.
 */
export const QUEUE_METRICS = {
  ready: "Count",
  scheduled: "Count",
  leased: "Count",
  done: "Count",
  failed: "Count",
  oldestReadyAgeMs: "Milliseconds",
  oldestWaitingAgeMs: "Milliseconds",
  mostOverdueLeaseMs: "Milliseconds",
  reclaimed: "Count",
  trimmed: "Count",
  finishedDone: "Count",
  finishedFailed: "Count",
} as const;

export type QueueMetricName = keyof typeof QUEUE_METRICS;
