// A partitioned queue's figures as one queue's (docs/partitions.md): its own module, so the
// reclaimer, the CLI and the dashboard sum partitions without loading the partitioned queue.
import type { QueueStats } from "./types.js";

/**
 * The figures of a queue's partitions as one queue's: counts summed, ages the oldest of any
 * partition, paused when every partition is, the types paused in any.
 */
export function sumStats(partitions: readonly QueueStats[]): QueueStats {
  const sum = (field: "ready" | "scheduled" | "leased" | "done" | "failed" | "dueScheduled" | "corrupt") =>
    partitions.reduce((total, stats) => total + stats[field], 0);
  const oldest = (field: "oldestReadyAgeMs" | "oldestWaitingAgeMs" | "mostOverdueLeaseMs") =>
    Math.max(0, ...partitions.map((stats) => stats[field]));
  return {
    ready: sum("ready"),
    scheduled: sum("scheduled"),
    leased: sum("leased"),
    done: sum("done"),
    failed: sum("failed"),
    oldestReadyAgeMs: oldest("oldestReadyAgeMs"),
    oldestWaitingAgeMs: oldest("oldestWaitingAgeMs"),
    mostOverdueLeaseMs: oldest("mostOverdueLeaseMs"),
    dueScheduled: sum("dueScheduled"),
    corrupt: sum("corrupt"),
    paused: partitions.length > 0 && partitions.every((stats) => stats.paused),
    pausedTypes: [...new Set(partitions.flatMap((stats) => stats.pausedTypes))].sort(),
  };
}
