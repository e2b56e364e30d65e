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

/**
 * The queue metrics the reclaimer also publishes per partition of a partitioned queue, with the
 * dimension PARTITION_DIMENSION ("0" to "N-1") beside `queue`: the depths and ages that show one
 * partition falling behind, which the queue's totals (every QUEUE_METRICS metric, dimension `queue`
 * alone, what the alarms read) would hide. Not published for a queue of one partition.
 */
export const PARTITION_METRICS = [
  "ready",
  "leased",
  "oldestReadyAgeMs",
  "oldestWaitingAgeMs",
] as const satisfies readonly QueueMetricName[];

export type PartitionMetricName = (typeof PARTITION_METRICS)[number];

/** The dimension naming a partition of the queue on PARTITION_METRICS: its index as a string, "0" up. */
export const PARTITION_DIMENSION = "partition";
