import { LEASE_MARGIN_MS } from "../functions/tasks.js";
import type { LeaseQueueSettings } from "./settings.js";

/**
 * The ids of the warnings a LeaseQueue adds at synth (`cdk synth` prints them; `--strict` fails on
 * them). To keep one after reading it: `Annotations.of(scope).acknowledgeWarning(id, reason)`.
 */
export const LEASE_QUEUE_WARNINGS = {
  /** Neither alarmEmail nor alarmTopic: the alarms change state and tell nobody. */
  alarmsWithoutActions: "leaseq:alarmsWithoutActions",
  /** One task type's lease sets the worker timeout far above what the other types need. */
  oneLongLease: "leaseq:oneLongLease",
  /** The worker's memory leaves less than MEMORY_PER_TASK_MIN_MB per task it runs at once. */
  memoryPerTask: "leaseq:memoryPerTask",
} as const;

/** One warning: its id (LEASE_QUEUE_WARNINGS) and what it tells the user. */
export interface SynthWarning {
  readonly id: string;
  readonly message: string;
}

/**
 * The rule for `oneLongLease`: the longest lease is more than this many times the next longest
 * (types of equal lease count once each) and longer than LONG_LEASE_MIN_MS. Below a minute the
 * worker timeout and the wake queue's visibility timeout stay short whatever the ratio.
 */
export const LONG_LEASE_FACTOR = 4;
export const LONG_LEASE_MIN_MS = 60_000;

/**
 * The rule for `memoryPerTask`: the worker's memory divided by its concurrency (the tasks one
 * invocation runs at once) is below this. Node.js itself takes some 60-80 MB of an invocation.
 */
export const MEMORY_PER_TASK_MIN_MB = 16;

const seconds = (ms: number) => `${ms / 1000} s`;

/**
 * What is valid but probably not meant, for `cdk synth` to print: alarms that notify nobody, and
 * one task type whose lease sets everyone's worker timeout. `alarmCount` is how many alarms the
 * queue has. Never throws.
 */
export function synthWarnings(settings: LeaseQueueSettings, alarmCount: number): SynthWarning[] {
  const warnings: SynthWarning[] = [];
  const queue = `queue "${settings.queueName}"`;
  if (settings.alarmEmail === undefined && settings.alarmTopic === undefined) {
    warnings.push({
      id: LEASE_QUEUE_WARNINGS.alarmsWithoutActions,
      message: `the ${alarmCount} alarms of ${queue} notify nobody: pass alarmEmail (an address, subscribed to a new SNS topic) or alarmTopic (an SNS topic of yours) to LeaseQueue`,
    });
  }
  const leases = Object.entries(settings.tasks.types)
    .map(([type, policy]) => ({ type, leaseMs: policy.timeoutMs }))
    .sort((a, b) => b.leaseMs - a.leaseMs);
  const [longest, next] = leases;
  if (next !== undefined && longest.leaseMs > LONG_LEASE_FACTOR * next.leaseMs && longest.leaseMs > LONG_LEASE_MIN_MS) {
    const workerTimeoutMs = settings.workerTimeout.toMilliseconds();
    warnings.push({
      id: LEASE_QUEUE_WARNINGS.oneLongLease,
      message:
        `task type "${longest.type}" has a ${seconds(longest.leaseMs)} lease, more than ${LONG_LEASE_FACTOR} times the next longest ("${next.type}", ${seconds(next.leaseMs)}): ` +
        `this one type sets the worker timeout of ${queue} (${seconds(workerTimeoutMs)}; the other types need ${seconds(next.leaseMs + LEASE_MARGIN_MS)}) ` +
        `and the wake queue's visibility timeout (6 times that, ${seconds(settings.wakeVisibilityTimeout.toMilliseconds())}), ` +
        `and, unless its own concurrency leaves the other types slots, its long runs hold the worker slots they wait for. ` +
        `Consider a LeaseQueue of its own for "${longest.type}" (docs/deploy.md, "When to split queues")`,
    });
  }
  const perTaskMb = settings.workerMemoryMb / settings.tasks.concurrency;
  if (perTaskMb < MEMORY_PER_TASK_MIN_MB) {
    warnings.push({
      id: LEASE_QUEUE_WARNINGS.memoryPerTask,
      message:
        `the worker of ${queue} runs up to ${settings.tasks.concurrency} tasks at once (the declaration's concurrency) in ${settings.workerMemoryMb} MB, ` +
        `${Math.floor(perTaskMb * 10) / 10} MB each beside Node.js itself: raise workerMemoryMb (at least ${MEMORY_PER_TASK_MIN_MB * settings.tasks.concurrency} MB) ` +
        `or lower concurrency. At most maxConcurrency (${settings.maxConcurrency}) × ${settings.tasks.concurrency} tasks run at once (docs/deploy.md, "Memory and concurrency")`,
    });
  }
  return warnings;
}
