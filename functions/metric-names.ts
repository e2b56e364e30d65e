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
