import { Logger } from "@aws-lambda-powertools/logger";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { ConfigError } from "../shared/errors.js";
import { readConfig } from "./config.js";
import { crashWatch } from "./crash-watch.js";
import { type DeadLetterSender, sqsDeadLetterSender } from "./dead-letter.js";
import { drain } from "./drain.js";
import { ingest } from "./ingest.js";
import { deadLetterLastReceives } from "./last-receive.js";
import { RunMetrics } from "./run-metrics.js";
import { createRuntime, type Runtime } from "./runtime.js";
import {
  declareTasks,
  policyMismatches,
  type TaskDeclaration,
  type TaskDefinitions,
  timeoutProblems,
} from "./tasks.js";
import { functionSqsClient, sendWakeTo, sqsWakeSender, type WakeSender } from "./wake.js";
import { type WakeListen, wakeListener } from "./wake-listen.js";
import type { WorkQueue } from "./work-queue.js";

/** The reclaimer's direct invocation: drain the queue, no records; a partitioned queue's names the partition to begin with. */
export interface DrainEvent {
  leaseq: "drain";
  partition?: number;
}

export interface WorkerOptions {
  /** The task types this worker runs: `defineTasks(...)`'s result, or the same object undeclared. */
  tasks: TaskDeclaration | TaskDefinitions;
  /** Environment to read the configuration from. Default: process.env. */
  env?: Record<string, string | undefined>;
  logger?: Logger;
}

/**
 * The worker's Lambda handler: SQS events (task lists and wake-ups) and the reclaimer's drain
 * invocations; and `close()`, for tests and scripts that run it in their own process.
 */
export type WorkerHandler = ((
  event: SQSEvent | DrainEvent,
  context: Pick<Context, "getRemainingTimeInMillis">,
) => Promise<SQSBatchResponse>) & {
  /**
   * Closes what the cold start opened (the Redis connection, the SQS client), so the process can
   * exit; Lambda never needs it. Idempotent; the next invocation starts again, as after a cold
   * start. Call it once the invocations you started have settled: one still running fails.
   */
  close(): Promise<void>;
};

function isSqsEvent(event: unknown): event is SQSEvent {
  return Array.isArray((event as SQSEvent | undefined)?.Records);
}

/**
 * Builds the worker's Lambda handler for `tasks`. Configuration is read and Redis connected once,
 * at the first invocation (a cold start): a declaration that does not match what the LeaseQueue
 * construct deployed (LEASEQ_TASKS) or a lease that cannot fit the worker timeout is one ConfigError
 * listing every problem. A failed start is retried on the next invocation.
 */
export function createWorker(options: WorkerOptions): WorkerHandler {
  const tasks = declareTasks(options.tasks);
  const logger = options.logger ?? new Logger({ serviceName: "leaseq-worker" });
  let runtime:
    | Promise<
        Runtime & {
          deadLetters: ReturnType<typeof sqsDeadLetterSender> | undefined;
          waker: WakeSender | undefined;
          sqs: SQSClient | undefined;
        }
      >
    | undefined;

  const start = async () => {
    const config = readConfig(options.env ?? process.env);
    const problems = [
      ...(config.deployedTasks === undefined ? [] : await policyMismatches(tasks, config.deployedTasks)),
      ...(config.workerTimeoutMs === undefined ? [] : timeoutProblems(tasks, config.workerTimeoutMs)),
    ];
    if (problems.length > 0) throw new ConfigError(problems);
    const sqs = config.deadLetterQueueUrl || config.wakeQueueUrl ? functionSqsClient(config.sqsEndpoint) : undefined;
    const deadLetters =
      config.deadLetterQueueUrl && sqs
        ? sqsDeadLetterSender(config.deadLetterQueueUrl, sqs, config.maxReceiveCount)
        : undefined;
    const waker = config.wakeQueueUrl && sqs ? sqsWakeSender(config.wakeQueueUrl, sqs) : undefined;
    return {
      ...(await createRuntime(config, tasks, (message, fields) => logger.warn(message, fields))),
      deadLetters,
      waker,
      sqs,
    };
  };

  const close = async () => {
    const opened = runtime;
    runtime = undefined;
    // A start that failed closed what it had opened (createRuntime), so there is nothing to close.
    const started = await opened?.catch(() => undefined);
    started?.sqs?.destroy();
    await started?.close();
  };

  const invoke = async (
    event: SQSEvent | DrainEvent,
    context: Pick<Context, "getRemainingTimeInMillis">,
  ): Promise<SQSBatchResponse> => {
    const startedAt = Date.now();
    runtime ??= start();
    const { work, config, deadLetters, waker, sqs } = await runtime.catch((error: unknown) => {
      runtime = undefined;
      throw error;
    });

    const records = isSqsEvent(event) ? event.Records : [];
    if (config.role === "intake") {
      return intake(records, {
        queue: work,
        tasks,
        deadLetters,
        waker,
        sqs,
        claimBatch: config.claimBatch,
        logger,
        startedAt,
      });
    }
    const ingested = await ingest(records, { queue: work, tasks, deadLetters, now: Date.now });
    // The partition the wake-up or the drain invocation named, claimed from first (a partitioned queue's).
    const named = partitionOf(
      isSqsEvent(event) ? ingested.wokenPartition : (event as DrainEvent).partition,
      config.shrinkingFrom ?? config.partitions,
    );
    // A wake-up may be for a lease that ended (its worker gone): return it before draining.
    let reclaimed = ingested.wakeUps > 0 ? (await work.reclaim({ now: Date.now() })).reclaimed.length : 0;
    // The wake-up that started this invocation is its crash watch (functions/crash-watch.ts).
    const watch =
      sqs && config.wakeQueueUrl
        ? crashWatch(records, { client: sqs, queueUrl: config.wakeQueueUrl, clockSkewMs: config.clockSkewMs })
        : undefined;
    await watch?.hold(undefined);
    // Hand the queue back to wake-ups (docs/wake-ups.md): arrange the wake-up this worker would have
    // been. A failed send is logged, not thrown: the records were handled, and the reclaimer's run
    // is the safety net.
    let wakeAtMs: number | undefined;
    let wakeError: string | undefined;
    // Every wake-up this invocation sent, by the time it was arranged for: what its log says (those
    // for tasks it had no room for apart: they are marked apart, docs/wake-ups.md).
    const wakeUps: number[] = [];
    const roomWakeUps: number[] = [];
    const handOff = async (cutOff: boolean, woken: boolean) => {
      try {
        const now = Date.now();
        for (const wake of await work.handOff({ now, cutOff, woken, partition: named })) {
          wakeAtMs = Math.min(wake.atMs, wakeAtMs ?? wake.atMs);
          if (!waker) continue;
          await waker.wake(wake.atMs, now, undefined, wake.partition);
          wakeUps.push(wake.atMs);
        }
      } catch (error) {
        wakeError = (error as Error).message;
        logger.warn("wake-up not arranged", { queue: config.queue, wakeAtMs, error: wakeError });
      }
    };
    const runs = new RunMetrics();
    const counts = await drain({
      queue: work,
      partition: named,
      tasks,
      claimBatch: config.claimBatch,
      remainingMs: () => context.getRemainingTimeInMillis(),
      safetyMarginMs: config.safetyMarginMs,
      flushAfterMs: config.flushAfterMs,
      lingerMs: config.lingerMs,
      onLeases: (earliestDeadlineMs) => void watch?.hold(earliestDeadlineMs),
      wake: async (atMs, forTypes, partition) => {
        if (!waker) return;
        await waker.wake(atMs, Date.now(), forTypes, partition);
        (forTypes ? roomWakeUps : wakeUps).push(atMs);
      },
      handOff,
      woken: ingested.wakeUps > 0,
      // A free slot takes wake-ups itself while long tasks hold the others (functions/wake-listen.ts).
      listen:
        sqs && config.wakeQueueUrl
          ? listenFor(
              wakeListener({ client: sqs, queueUrl: config.wakeQueueUrl }),
              config.shrinkingFrom ?? config.partitions,
            )
          : undefined,
      reclaim: async () => {
        reclaimed += (await work.reclaim({ now: Date.now() })).reclaimed.length;
      },
      onRun: (run) => runs.add(run),
    });
    // Queue wait and run time per type, one value per run (EMF: CloudWatch keeps each for p50/p99).
    // The reclaimer's switch (Powertools Metrics reads it) turns these off too: tests, the local stack.
    if (process.env.POWERTOOLS_METRICS_DISABLED !== "true") {
      for (const line of runs.lines("leaseq-worker", config.queue, Date.now())) writeLine(line);
    }
    watch?.end();
    await handOff(counts.cutOff || counts.released > 0, counts.unanswered === true);
    logger.info("worker invocation", {
      queue: config.queue,
      role: "worker",
      trigger: isSqsEvent(event) ? "sqs" : "drain",
      records: records.length,
      enqueued: ingested.enqueued,
      duplicates: ingested.duplicates,
      throttled: ingested.throttled,
      rejected: ingested.rejected,
      ...counts,
      reclaimed,
      wakeAtMs,
      wakeUps,
      roomWakeUps,
      durationMs: Date.now() - startedAt,
    });
    return { batchItemFailures: ingested.failures };
  };
  // A record at its last receive whose invocation fails goes to the dead-letter queue with why.
  const handle = deadLetterLastReceives(invoke, { env: options.env ?? process.env, logger });
  return Object.assign(handle, { close });
}

interface IntakeOptions {
  queue: WorkQueue;
  tasks: TaskDeclaration;
  deadLetters: DeadLetterSender | undefined;
  waker: WakeSender | undefined;
  /** Sends the wake-ups for other deployments' types (a shared queue). */
  sqs: SQSClient | undefined;
  claimBatch: number;
  logger: Logger;
  startedAt: number;
}

/**
 * The intake role: enqueue the batch's task lists (rejections to the dead-letter queue) and wake a
 * worker, never run a task, so a task is in Redis within moments of its send however busy the
 * workers are. The wake-up is the one the queue asks for (none while a worker drains or one is
 * arranged), and one now besides when this batch brought more ready tasks than one claim takes:
 * a burst starts workers as it arrives, as when every SQS batch started one. A failed wake-up is
 * logged, not thrown: the tasks are in, and the reclaimer's run is the safety net.
 */
async function intake(records: SQSRecord[], options: IntakeOptions): Promise<SQSBatchResponse> {
  const { queue, logger } = options;
  const ingested = await ingest(records, { ...options, now: Date.now });
  const now = Date.now();
  // A wake-up sent to the task queue (a producer given its URL for wake-ups, as `createProducer`
  // does without `wakeQueueUrl`) is passed on to the wake queue: it arrived when it was due. A
  // burst's wake-ups are sent now (each partition's that asked for one; one at least).
  const wakes = ingested.wakes;
  if (ingested.readyNow >= options.claimBatch || ingested.wakeUps > 0) {
    for (const wake of wakes) wake.atMs = now;
    if (wakes.length === 0) wakes.push({ atMs: now, partition: ingested.wokenPartition });
  }
  const wakeAtMs = wakes.length === 0 ? undefined : Math.min(...wakes.map((wake) => wake.atMs));
  for (const wake of options.waker ? wakes : []) {
    try {
      await options.waker?.wake(wake.atMs, now, undefined, wake.partition);
    } catch (error) {
      logger.warn("wake-up not sent", { queue: queue.name, wakeAtMs: wake.atMs, error: (error as Error).message });
    }
  }
  // Tasks of types another deployment sharing the queue runs: that deployment's workers are woken.
  if (options.sqs && ingested.wakeTo.length > 0) {
    for (const error of await sendWakeTo(options.sqs, ingested.wakeTo, now)) {
      logger.warn("wake-up not sent", { queue: queue.name, error });
    }
  }
  logger.info("intake invocation", {
    queue: queue.name,
    role: "intake",
    records: records.length,
    enqueued: ingested.enqueued,
    duplicates: ingested.duplicates,
    throttled: ingested.throttled,
    rejected: ingested.rejected,
    wakeAtMs,
    durationMs: Date.now() - options.startedAt,
  });
  return { batchItemFailures: ingested.failures };
}

/** One line on stdout, where Lambda's log stream (and CloudWatch's EMF extraction) reads it. */
function writeLine(line: string): void {
  process.stdout.write(`${line}\n`);
}

/**
 * A partition a wake-up or a drain invocation named, when the queue has it; else none (the claim
 * chooses): one sent for an earlier count, or an attribute that is no partition, never fails the
 * invocation (the wake queue would deliver it again and again).
 */
function partitionOf(asked: number | undefined, count: number): number | undefined {
  return Number.isInteger(asked) && (asked as number) >= 0 && (asked as number) < count ? asked : undefined;
}

/** `listen`, the partitions its wake-ups name checked as partitionOf checks them. */
function listenFor(listen: WakeListen, count: number): WakeListen {
  return async (signal, maxWaitMs) =>
    (await listen(signal, maxWaitMs)).map((wakeUp) => ({ ...wakeUp, partition: partitionOf(wakeUp.partition, count) }));
}
