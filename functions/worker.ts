import { Logger } from "@aws-lambda-powertools/logger";
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { ConfigError } from "../shared/errors.js";
import { readConfig } from "./config.js";
import { sqsDeadLetterSender } from "./dead-letter.js";
import { drain } from "./drain.js";
import { ingest } from "./ingest.js";
import { createRuntime, type Runtime } from "./runtime.js";
import { readRecord } from "./sqs.js";
import { defineTasks, policyMismatches, type TaskDeclaration, type TaskDefinitions, timeoutProblems } from "./tasks.js";
import { functionSqsClient, sqsWakeSender, type WakeSender } from "./wake.js";

/** The reclaimer's direct invocation: drain the queue, no records. */
export interface DrainEvent {
  leaseq: "drain";
}

export interface WorkerOptions {
  /** The task types this worker runs: `defineTasks(...)`'s result, or the same object undeclared. */
  tasks: TaskDeclaration | TaskDefinitions;
  /** Environment to read the configuration from. Default: process.env. */
  env?: Record<string, string | undefined>;
  logger?: Logger;
}

/** The worker's Lambda handler: SQS events (task lists and wake-ups) and the reclaimer's drain invocations. */
export type WorkerHandler = (
  event: SQSEvent | DrainEvent,
  context: Pick<Context, "getRemainingTimeInMillis">,
) => Promise<SQSBatchResponse>;

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
  const tasks = defineTasks(options.tasks);
  const logger = options.logger ?? new Logger({ serviceName: "leaseq-worker" });
  let runtime:
    | Promise<
        Runtime & { deadLetters: ReturnType<typeof sqsDeadLetterSender> | undefined; waker: WakeSender | undefined }
      >
    | undefined;

  const start = async () => {
    const config = readConfig(options.env ?? process.env);
    const problems = [
      ...(config.deployedTasks === undefined ? [] : policyMismatches(tasks, config.deployedTasks)),
      ...(config.workerTimeoutMs === undefined ? [] : timeoutProblems(tasks, config.workerTimeoutMs)),
    ];
    if (problems.length > 0) throw new ConfigError(problems);
    const sqs = config.deadLetterQueueUrl || config.queueUrl ? functionSqsClient(config.sqsEndpoint) : undefined;
    const deadLetters =
      config.deadLetterQueueUrl && sqs ? sqsDeadLetterSender(config.deadLetterQueueUrl, sqs) : undefined;
    const waker = config.queueUrl && sqs ? sqsWakeSender(config.queueUrl, sqs) : undefined;
    return { ...(await createRuntime(config, tasks)), deadLetters, waker };
  };

  return async (event, context) => {
    const startedAt = Date.now();
    runtime ??= start();
    const { queue, config, deadLetters, waker } = await runtime.catch((error: unknown) => {
      runtime = undefined;
      throw error;
    });

    const records = isSqsEvent(event) ? event.Records : [];
    const ingested = await ingest(records, { queue, tasks, deadLetters, now: Date.now });
    // A wake-up may be for a lease that ended (its worker gone): return it before draining.
    const reclaimed = records.some((record) => readRecord(record).kind === "wake")
      ? (await queue.reclaim({ now: Date.now() })).reclaimed.length
      : 0;
    const counts = await drain({
      queue,
      tasks,
      claimBatch: config.claimBatch,
      remainingMs: () => context.getRemainingTimeInMillis(),
      safetyMarginMs: config.safetyMarginMs,
      flushAfterMs: config.flushAfterMs,
      lingerMs: config.lingerMs,
    });
    // Stopping: hand off, arranging the wake-up this worker would have been (docs/wake-ups.md). A
    // failed send is logged, not thrown: the records were handled, and the reclaimer's run is the
    // safety net.
    let wakeAtMs: number | undefined;
    let wakeError: string | undefined;
    try {
      const now = Date.now();
      wakeAtMs = await queue.handOff({ now, cutOff: counts.cutOff || counts.released > 0 });
      if (wakeAtMs !== undefined && waker) await waker.wake(wakeAtMs, now);
    } catch (error) {
      wakeError = (error as Error).message;
      logger.warn("wake-up not arranged", { queue: config.queue, wakeAtMs, error: wakeError });
    }
    logger.info("worker invocation", {
      queue: config.queue,
      trigger: isSqsEvent(event) ? "sqs" : "drain",
      records: records.length,
      enqueued: ingested.enqueued,
      duplicates: ingested.duplicates,
      rejected: ingested.rejected,
      ...counts,
      reclaimed,
      wakeAtMs,
      durationMs: Date.now() - startedAt,
    });
    return { batchItemFailures: ingested.failures };
  };
}
