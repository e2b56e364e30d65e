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

/** The settings of a quick (`--quick`) or a full run: each setting's quick value, then its full one. */
export function benchSettings(quick: boolean): BenchSettings {
  const either = <T>(quickValue: T, fullValue: T): T => (quick ? quickValue : fullValue);
  return {
    quick,
    throughputTasks: either(2_000, 10_000),
    warmupTasks: either(500, 1_000),
    rounds: either(3, 5),
    consumers: 4,
    batchSizes: [1, 20, 100],
    bullmqConcurrencies: [50, 1],
    memoryTasks: 100_000,
    // Loading a million tasks takes leaseq ~30 s and BullMQ over a minute: quick mode stops lower.
    latencyLevels: either([1_000, 100_000, 250_000], [1_000, 100_000, 1_000_000]),
    bullmqLatencyLevels: either([1_000, 100_000], [1_000, 100_000, 1_000_000]),
    latencySamplesPerRound: either(300, 1_000),
    latencyRounds: 3,
    latencyWarmupSamples: either(50, 100),
    idleWindowMs: 60_000,
    importRuns: either(3, 5),
  };
}
