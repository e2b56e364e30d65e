// A record at its last receive that fails goes to the dead-letter queue with the reason it failed.
// Without this, SQS's redrive policy moves it there after maxReceiveCount receives with no reason at
// all, and the operator is left to search the function's logs for why.
import type { Logger } from "@aws-lambda-powertools/logger";
import type { SQSBatchResponse, SQSRecord } from "aws-lambda";
import { redact } from "../shared/text.js";
import { MAX_RECEIVE_COUNT_MAX } from "./config.js";
import { type DeadLetterSender, sqsDeadLetterSender } from "./dead-letter.js";
import { bodyWithTaskIds } from "./sqs.js";
import { functionSqsClient } from "./wake.js";

type Env = Record<string, string | undefined>;

/** How many times SQS has delivered `record`, this delivery included (ApproximateReceiveCount). */
function receiveCount(record: SQSRecord): number {
  return Number(record.attributes?.ApproximateReceiveCount ?? 0);
}

/**
 * Whether this is the record's last receive: failing it now, the redrive policy moves it to the
 * dead-letter queue. Never true without `maxReceiveCount`.
 */
export function atLastReceive(record: SQSRecord, maxReceiveCount: number | undefined): boolean {
  return maxReceiveCount !== undefined && receiveCount(record) >= maxReceiveCount;
}

/** "received 5 times, the redrive policy's maxReceiveCount 5", for reasons. */
export function receivedText(record: SQSRecord, maxReceiveCount: number | undefined): string {
  return `received ${receiveCount(record)} times, the redrive policy's maxReceiveCount ${maxReceiveCount}`;
}

/**
 * LEASEQ_MAX_RECEIVE_COUNT, or undefined when it is unset or malformed: readConfig reports a
 * malformed one at the cold start, and this must work when the cold start fails.
 */
function maxReceiveCountOf(env: Env): number | undefined {
  const value = Number(env.LEASEQ_MAX_RECEIVE_COUNT || Number.NaN);
  return Number.isInteger(value) && value >= 1 && value <= MAX_RECEIVE_COUNT_MAX ? value : undefined;
}

export interface LastReceiveOptions {
  /** The function's environment: LEASEQ_MAX_RECEIVE_COUNT, LEASEQ_DLQ_URL, LEASEQ_SQS_ENDPOINT. */
  env: Env;
  logger: Logger;
}

/**
 * Wraps an SQS handler so that a failed invocation (it threw: a cold start that failed, Redis out
 * of reach) still gives the records at their last receive a reason: each goes to the dead-letter
 * queue with the error as `LeaseqReason` and is reported done; the others are reported in
 * batchItemFailures, so SQS delivers them again. When none is at its last receive, or
 * LEASEQ_MAX_RECEIVE_COUNT or LEASEQ_DLQ_URL is unset, or no dead letter could be sent, the error
 * is thrown as it was. A dead letter SQS refuses leaves its record failed, for SQS to deliver again.
 */
export function deadLetterLastReceives<Event, Context>(
  handler: (event: Event, context: Context) => Promise<SQSBatchResponse>,
  options: LastReceiveOptions,
): (event: Event, context: Context) => Promise<SQSBatchResponse> {
  const maxReceiveCount = maxReceiveCountOf(options.env);
  const deadLetterQueueUrl = options.env.LEASEQ_DLQ_URL;
  let sender: DeadLetterSender | undefined;

  return async (event, context) => {
    try {
      return await handler(event, context);
    } catch (error) {
      const records = (event as { Records?: SQSRecord[] } | undefined)?.Records;
      if (!Array.isArray(records) || !deadLetterQueueUrl || maxReceiveCount === undefined) throw error;
      if (!records.some((record) => atLastReceive(record, maxReceiveCount))) throw error;
      sender ??= sqsDeadLetterSender(deadLetterQueueUrl, functionSqsClient(options.env.LEASEQ_SQS_ENDPOINT));
      const failed = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      const why = redact(failed, options.env);
      const deadLettered: string[] = [];
      const failures: SQSBatchResponse["batchItemFailures"] = [];
      // A FIFO group whose dead letter could not be sent: its later records fail with it, so the
      // redrive policy moves them in order and the dead-letter queue keeps the group's order.
      const stuckGroups = new Set<string>();
      for (const record of records) {
        const group = record.attributes?.MessageGroupId;
        if (!atLastReceive(record, maxReceiveCount) || (group !== undefined && stuckGroups.has(group))) {
          failures.push({ itemIdentifier: record.messageId });
          continue;
        }
        const reason = `the function failed at this message's last receive (${receivedText(record, maxReceiveCount)}): ${why}`;
        try {
          await sender.send({ record, body: bodyWithTaskIds(record), reason });
          deadLettered.push(record.messageId);
        } catch (sendError) {
          options.logger.warn("dead letter not sent", {
            messageId: record.messageId,
            error: (sendError as Error).message,
          });
          failures.push({ itemIdentifier: record.messageId });
          if (group !== undefined) stuckGroups.add(group);
        }
      }
      if (deadLettered.length === 0) throw error;
      options.logger.error("invocation failed; the records at their last receive went to the dead-letter queue", {
        error: why,
        deadLettered,
        failed: failures.map((failure) => failure.itemIdentifier),
      });
      return { batchItemFailures: failures };
    }
  };
}
