import { Logger } from "@aws-lambda-powertools/logger";
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { InvalidInputError, ScriptArgumentError } from "../shared/errors.js";
import { readConfig } from "./config.js";
import { drain } from "./drain.js";
import { createRuntime, type Runtime } from "./runtime.js";
import { readRecord } from "./sqs.js";
import type { TaskRegistry } from "./task.js";
import defaultRegistry from "./task-types.js";

/** The reclaimer's direct invocation: drain the queue, no records. */
export interface DrainEvent {
  leaseq: "drain";
}

export interface WorkerOptions {
  env?: Record<string, string | undefined>;
  registry?: TaskRegistry;
  logger?: Logger;
}

function isSqsEvent(event: unknown): event is SQSEvent {
  return Array.isArray((event as SQSEvent | undefined)?.Records);
}

/**
 * Builds a worker handler. Configuration is read and Redis connected once, at the first
 * invocation (a cold start); a failed start is retried on the next invocation.
 */
export function createWorkerHandler(options: WorkerOptions = {}) {
  const logger = options.logger ?? new Logger({ serviceName: "leaseq-worker" });
  const registry = options.registry ?? defaultRegistry;
  let runtime: Promise<Runtime> | undefined;

  return async (
    event: SQSEvent | DrainEvent,
    context: Pick<Context, "getRemainingTimeInMillis">,
  ): Promise<SQSBatchResponse> => {
    const startedAt = Date.now();
    runtime ??= (async () => createRuntime(readConfig(options.env ?? process.env), registry))();
    const { queue, config } = await runtime.catch((error: unknown) => {
      runtime = undefined;
      throw error;
    });

    const failures: SQSBatchResponse["batchItemFailures"] = [];
    const rejected: Array<{ messageId: string; reason: string }> = [];
    let enqueued = 0;
    let duplicates = 0;
    const records = isSqsEvent(event) ? event.Records : [];
    for (const record of records) {
      const intent = readRecord(record);
      if (intent.kind === "wake") continue;
      if (intent.kind === "enqueue") {
        try {
          const results = await queue.enqueue(intent.tasks, { now: Date.now() });
          enqueued += results.filter((r) => r.status === "ok").length;
          duplicates += results.filter((r) => r.status === "duplicate").length;
          continue;
        } catch (error) {
          // Bad task fields fail this record only; Redis errors fail the invocation (SQS retries all).
          if (!(error instanceof InvalidInputError || error instanceof ScriptArgumentError)) throw error;
          rejected.push({ messageId: record.messageId, reason: error.message });
        }
      } else rejected.push({ messageId: record.messageId, reason: intent.reason });
      failures.push({ itemIdentifier: record.messageId });
    }

    const counts = await drain({
      queue,
      registry,
      claimBatch: config.claimBatch,
      remainingMs: () => context.getRemainingTimeInMillis(),
      safetyMarginMs: config.safetyMarginMs,
    });
    logger.info("worker invocation", {
      queue: config.queue,
      trigger: isSqsEvent(event) ? "sqs" : "drain",
      records: records.length,
      enqueued,
      duplicates,
      rejected,
      ...counts,
      durationMs: Date.now() - startedAt,
    });
    return { batchItemFailures: failures };
  };
}

/** The Lambda entry point: SQS events and the reclaimer's `{"leaseq":"drain"}`. */
export const handler = createWorkerHandler();
