// `leaseq/cdk`: the LeaseQueue construct. aws-cdk-lib and constructs are peer dependencies of this
// entry only; esbuild (a dependency of leaseq) bundles your worker entry at synth. cdk-nag is not
// needed: nagSuppressions returns what leaseq accepts, for an app that runs it to apply.
export type { LeaseQueueAlarms } from "./alarms.js";
export {
  BUNDLE_FILE,
  bundleOptions,
  DEFAULT_NODE_RUNTIME,
  DEFAULT_RECLAIMER_ENTRY,
  NODE_RUNTIMES,
  type NodeRuntime,
} from "./bundling.js";
export { LeaseQueue, type LeaseQueueProps } from "./lease-queue.js";
export { METRICS_NAMESPACE, type QueueMetricName, QueueMetrics, SERVICE_NAMES } from "./metrics.js";
export { LeaseQueueMonitoring } from "./monitoring.js";
export { type NagSuppression, nagSuppressions } from "./nag.js";
export { type FailedRateAlarmProps, type FunctionAlarmProps, LEASE_QUEUE_DEFAULTS } from "./props.js";
export { LeaseQueuePropsError, type LeaseQueueSettings, VISIBILITY_TIMEOUT_FACTOR } from "./settings.js";
export { LEASE_QUEUE_WARNINGS, LONG_LEASE_FACTOR, LONG_LEASE_MIN_MS } from "./warnings.js";
