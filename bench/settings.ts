/** The claim batch of the headline rows (and of the groups run). */
export const HEADLINE_BATCH = 20;
/** The payload of the payload-size row: 64 KiB of JSON. */
export const LARGE_PAYLOAD_BYTES = 64 * 1024;

/** What one run measures and how hard; `--quick` trades rounds and samples for time. */
export interface BenchSettings {
  quick: boolean;
  /** Tasks per throughput round, the same for every system. */
  throughputTasks: number;
  warmupTasks: number;
  rounds: number;
  /** Concurrent consumers of leaseq and the naive design (each its own connection). */
  consumers: number;
  batchSizes: number[];
  bullmqConcurrencies: number[];
  memoryTasks: number;
  /** Waiting-task levels for claim latency; BullMQ's largest level may be left out in quick mode. */
  latencyLevels: number[];
  bullmqLatencyLevels: number[];
  latencySamplesPerRound: number;
  latencyRounds: number;
  latencyWarmupSamples: number;
  idleWindowMs: number;
  importRuns: number;
}

export function benchSettings(quick: boolean): BenchSettings {
  return quick
    ? {
        quick,
        throughputTasks: 2_000,
        warmupTasks: 500,
        rounds: 3,
        consumers: 4,
        batchSizes: [1, 20, 100],
        bullmqConcurrencies: [50, 1],
        memoryTasks: 100_000,
        // Loading a million tasks takes leaseq ~30 s and BullMQ over a minute: quick mode stops lower.
        latencyLevels: [1_000, 100_000, 250_000],
        bullmqLatencyLevels: [1_000, 100_000],
        latencySamplesPerRound: 300,
        latencyRounds: 3,
        latencyWarmupSamples: 50,
        idleWindowMs: 60_000,
        importRuns: 3,
      }
    : {
        quick,
        throughputTasks: 10_000,
        warmupTasks: 1_000,
        rounds: 5,
        consumers: 4,
        batchSizes: [1, 20, 100],
        bullmqConcurrencies: [50, 1],
        memoryTasks: 100_000,
        latencyLevels: [1_000, 100_000, 1_000_000],
        bullmqLatencyLevels: [1_000, 100_000, 1_000_000],
        latencySamplesPerRound: 1_000,
        latencyRounds: 3,
        latencyWarmupSamples: 100,
        idleWindowMs: 60_000,
        importRuns: 5,
      };
}
