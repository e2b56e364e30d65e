// The benchmark: leaseq against BullMQ and the naive ZPOPMIN design, side by side in one run, on a
// redis-server of its own. `npm run bench` (full, a few minutes) or `npm run bench -- --quick`.
// One mode alone, merged into bench/results.json: --latency, --mixed, --schedules, --groups,
// --flow-control [--write] [--callgrind], --instructions [--tasks N] (Redis instructions and commands
// per task under valgrind's callgrind, bench/instructions.ts), --partitions [--tasks N] [--rounds N] (a
// partitioned queue over N redis-servers, bench/partitions.ts).
import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { TcpStore } from "../shared/stores/tcp.js";
import { type BacklogCase, type BacklogResult, runBacklog } from "./backlog.js";
import { bullmqBacklog } from "./bullmq.js";
import { measureBundles } from "./bundles.js";
import { groupsJson, renderGroups, runGroups } from "./groups.js";
import { bullmqIdle, type IdleResult, leaseqIdle } from "./idle.js";
import { LATENCY_SETTINGS, runLatency } from "./latency.js";
import { leaseqBacklog } from "./leaseq.js";
import { machineInfo } from "./machine.js";
import { mixedTargets, renderMixed, runMixed } from "./mixed/run.js";
import { naiveBacklog } from "./naive.js";
import { flush, redisVersion, startBenchRedis } from "./redis.js";
import {
  HEADLINE_BATCH,
  LARGE_PAYLOAD_BYTES,
  latencyTargets,
  type Measurements,
  render,
  renderLatency,
  resultsJson,
} from "./report.js";
import { mergeResults, RESULTS_PATH, readResults } from "./results-file.js";
import { runScheduleTicks } from "./schedules.js";
import { benchSettings } from "./settings.js";
import { runThroughput, type ThroughputCase } from "./throughput.js";
import { bullmqCase, leaseqTcpCase, leaseqUpstashCase, naiveCase } from "./throughput-cases.js";
import { type LocalUpstash, startLocalUpstash } from "./upstash.js";
import { makeTask, payloadText } from "./workload.js";

// The Lambda stand-ins the modes start print no AWS SDK notice about Node 20, as the CLI's do not
// (cli/bin.ts says why); a value the user set is kept.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
/** Only the enqueue-to-start latency over the local stack, merged into an existing results.json. */
const latencyOnly = process.argv.includes("--latency");
/** Only the groups section, merged into an existing results.json. */
const groupsOnly = process.argv.includes("--groups");
const settings = benchSettings(quick);
const log = (line: string) => console.log(line);
const startedAt = performance.now();

/**
 * Only flow control's cost at enqueue (bench/flow-control.ts: flowControl.enqueue, or with
 * --callgrind flowControl.enqueueInstructions), merged into results.json with --write.
 */
if (process.argv.includes("--flow-control")) {
  await import("./flow-control.js");
  process.exit(0);
}

/** A mode that runs alone (its own servers) and ends the process: 0 when it succeeds, 1 when it throws. */
async function soloMode(flag: string, run: () => Promise<void>): Promise<void> {
  if (!process.argv.includes(flag)) return;
  try {
    await run();
    process.exit(0);
  } catch (error) {
    console.error(error);
    process.exit(1);
  }
}

// Only the instructions and commands per task Redis spends on each system (bench/instructions.ts),
// on a redis-server of its own under callgrind, merged into results.json (instructions).
await soloMode("--instructions", async () =>
  (await import("./instructions.js")).instructionsMode(process.argv.slice(2), log),
);
// Only the partitioned queue over N redis-servers (bench/partitions.ts), merged into results.json (partitions).
await soloMode("--partitions", async () =>
  (await import("./partitions.js")).partitionsMode(process.argv.slice(2), log),
);

const redis = await startBenchRedis();
let upstash: LocalUpstash | undefined;
let bullIdle: Promise<IdleResult> | undefined;
/** Runs one mode of the benchmark alone on its redis-server, then stops the server and the process. */
async function runAlone(mode: () => Promise<void>): Promise<never> {
  try {
    await mode();
  } finally {
    await redis.stop();
  }
  process.exit(0);
}
if (latencyOnly) {
  await runAlone(async () => {
    log(`leaseq latency benchmark (${quick ? "quick" : "full"}) over the local stack, redis-server ${redis.url}`);
    const latency = await runLatency(LATENCY_SETTINGS[quick ? "quick" : "full"], redis.url, log);
    log(`\n${renderLatency(latency)}`);
    mergeResults({ latency, latencyTargets: latencyTargets(latency) });
    log(`\nWrote the latency figures into ${RESULTS_PATH}`);
  });
}
/** Only long and short work together through the local stack (bench/mixed/run.ts), merged into results.json. */
if (process.argv.includes("--mixed")) {
  await runAlone(async () => {
    log(`leaseq mixed benchmark over the local stack, redis-server ${redis.url}`);
    const mixed = await runMixed(redis.url, log);
    log(`\n${renderMixed(mixed)}`);
    mergeResults({ mixed, mixedTargets: mixedTargets(mixed) });
    log(`\nWrote the mixed figures into ${RESULTS_PATH}`);
  });
}
/** Only the schedules' reclaimer runs (flowControl.scheduleTick), merged into an existing results.json. */
if (process.argv.includes("--schedules")) {
  await runAlone(async () => {
    log(`leaseq schedules benchmark: one reclaimer run with ${10_000} schedules, redis-server ${redis.url}`);
    const cases = await runScheduleTicks(redis, log);
    const target = cases.filter((c) => c.case !== "all due in one run (every minute)");
    const scheduleTick = {
      cases,
      target: "a reclaimer run with 10,000 schedules: <= 50 ms of Redis time in all, in calls of <= 5 ms each",
      met: target.every((c) => c.totalMs <= 50 && c.maxCallMs <= 5) && cases.every((c) => c.maxCallMs <= 5),
    };
    const flowControl = readResults().flowControl as Record<string, unknown> | undefined;
    mergeResults({ flowControl: { ...flowControl, scheduleTick } });
    log(`\nWrote the schedules figures into ${RESULTS_PATH} (flowControl.scheduleTick)`);
  });
}
const groupsOptions = {
  rounds: settings.rounds,
  warmupTasks: settings.warmupTasks,
  consumers: settings.consumers,
  heavyTasks: quick ? 20_000 : 100_000,
  log,
};
if (groupsOnly) {
  await runAlone(async () => {
    log(`leaseq groups benchmark (${quick ? "quick" : "full"}) on its own redis-server ${redis.url}`);
    const groups = await runGroups(redis, groupsOptions);
    log(`\n${renderGroups(groups)}`);
    mergeResults({ groups: groupsJson(groups) });
    log(`\nWrote the groups figures into ${RESULTS_PATH}`);
  });
}
try {
  const machine = machineInfo(await redisVersion(redis.admin));
  log(`leaseq benchmark (${quick ? "quick" : "full"}) on its own redis-server ${redis.url}`);
  // Runs alongside everything else, on a server of its own: an idle worker costs no CPU.
  bullIdle = bullmqIdle(settings.idleWindowMs);

  const started = await startLocalUpstash(root, redis.url);
  if ("url" in started) upstash = started;
  const { consumers } = settings;
  const cases: ThroughputCase[] = [
    ...settings.batchSizes.map((batchSize) => leaseqTcpCase(redis.url, { batchSize, consumers })),
    // The payload-size row: the headline case with a 64 KiB payload (a move must not cost its size).
    leaseqTcpCase(redis.url, { batchSize: HEADLINE_BATCH, consumers, payloadBytes: LARGE_PAYLOAD_BYTES }),
  ];
  if (upstash) {
    const local = upstash;
    cases.push(
      ...settings.batchSizes.map((batchSize) => leaseqUpstashCase(() => local.openStore(), { batchSize, consumers })),
    );
  }
  cases.push(
    ...settings.batchSizes.map((batchSize) => naiveCase(redis.url, { batchSize, consumers })),
    // The same payload through the naive design: what moving 64 KiB in and out costs Redis at all.
    naiveCase(redis.url, { batchSize: HEADLINE_BATCH, consumers, payloadBytes: LARGE_PAYLOAD_BYTES }),
    ...settings.bullmqConcurrencies.map((concurrency) => bullmqCase(redis, concurrency)),
  );

  log(`\nThroughput: ${settings.throughputTasks} tasks per round, ${settings.rounds} rounds`);
  const throughput = await runThroughput(redis, cases, {
    tasks: settings.throughputTasks,
    warmupTasks: settings.warmupTasks,
    rounds: settings.rounds,
    log,
  });

  log("\nMemory and claim latency");
  const backlogCases: BacklogCase[] = [
    {
      system: "leaseq",
      levels: settings.latencyLevels,
      open: (queueName) => leaseqBacklog({ openStore: () => TcpStore.fromUrl(redis.url), queueName }),
    },
    {
      system: "naive",
      levels: settings.latencyLevels,
      open: (queueName) => naiveBacklog({ url: redis.url, queueName }),
    },
    {
      system: "bullmq",
      levels: settings.bullmqLatencyLevels,
      open: (queueName) => bullmqBacklog({ host: redis.host, port: redis.port, queueName }),
    },
  ];
  const backlog: BacklogResult[] = [];
  for (const item of backlogCases) {
    backlog.push(
      await runBacklog(redis, item, {
        memoryTasks: settings.memoryTasks,
        samplesPerRound: settings.latencySamplesPerRound,
        rounds: settings.latencyRounds,
        warmupSamples: settings.latencyWarmupSamples,
        log,
      }),
    );
  }

  log("\nIdle cost and bundles");
  const leaseqIdleResult = await leaseqIdle(redis);
  await flush(redis);
  const bundles = await measureBundles(root, settings.importRuns);
  log(`  waiting for the BullMQ idle window (${settings.idleWindowMs / 1000} s from the start)`);
  const bullIdleResult = await bullIdle;

  log("\nEnqueue-to-start latency over the local stack");
  await flush(redis);
  const latency = await runLatency(LATENCY_SETTINGS[quick ? "quick" : "full"], redis.url, log);

  log(`\nGroups: ${groupsOptions.rounds} rounds of 10,000 tasks, with 1,000 groups and without`);
  await flush(redis);
  const groups = await runGroups(redis, groupsOptions);

  const measurements: Measurements = {
    settings,
    machine,
    loadAverageAtEnd: loadavg().map((v) => Number(v.toFixed(2))),
    durationSeconds: (performance.now() - startedAt) / 1000,
    throughput,
    upstash: upstash
      ? { available: true }
      : { available: false, reason: "unavailable" in started ? started.unavailable : "" },
    backlog,
    idle: { leaseq: leaseqIdleResult, bullmq: bullIdleResult },
    bundles,
    latency,
    groups,
    payloadBytes: Buffer.byteLength(payloadText(makeTask(0))),
  };
  log(`\n${render(measurements)}`);
  // The sections a full run does not measure (flowControl, the callgrind counts) are kept.
  mergeResults(resultsJson(measurements));
  log(`\nWrote ${RESULTS_PATH}`);
} finally {
  // Lets the idle measurement stop its own redis-server even when a step above failed.
  await bullIdle?.catch(() => undefined);
  await upstash?.close();
  await redis.stop();
}
