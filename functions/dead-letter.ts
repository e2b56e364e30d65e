import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import { MAX_MESSAGE_BYTES } from "./messages.js";

/** The message attributes a dead-lettered record carries: why, and where it came from. */
export const DEAD_LETTER_ATTRIBUTES = {
  reason: "LeaseqReason",
  sourceMessageId: "LeaseqSourceMessageId",
  sourceQueue: "LeaseqSourceQueue",
  taskIndexes: "LeaseqTaskIndexes",
} as const;

/** What the worker puts in the dead-letter queue for one record. */
export interface DeadLetter {
  record: SQSRecord;
  /** The body to send: the original one, or the record's invalid tasks only. */
  body: string;
  reason: string;
  /** Indexes of the invalid tasks in the original message, when only some were invalid. */
  taskIndexes?: number[];
}

/**
 * Sends permanently invalid input to the dead-letter queue at once, instead of after maxReceiveCount,
 * and a record that fails at its last receive with the reason it failed.
 */
export interface DeadLetterSender {
  send(letter: DeadLetter): Promise<void>;
  /**
   * The source queue's redrive policy's maxReceiveCount (LEASEQ_MAX_RECEIVE_COUNT), when known: a
   * record received this many times and failed again is moved to this queue without a reason.
   */
  readonly maxReceiveCount?: number;
}

const MAX_REASON_CHARS = 1024;

/**
 * A sender for the queue at `queueUrl`, with the worker's SQS client (built once per cold start).
 * Throws when SQS refuses; the caller then reports the record in batchItemFailures, so it is never
 * lost.
 */
export function sqsDeadLetterSender(queueUrl: string, client: SQSClient, maxReceiveCount?: number): DeadLetterSender {
  return {
    maxReceiveCount,
    async send(letter) {
      const reason =
        letter.reason.length > MAX_REASON_CHARS ? `${letter.reason.slice(0, MAX_REASON_CHARS - 3)}...` : letter.reason;
      const attributes: Record<string, { DataType: "String"; StringValue: string }> = {
        [DEAD_LETTER_ATTRIBUTES.reason]: { DataType: "String", StringValue: reason },
        [DEAD_LETTER_ATTRIBUTES.sourceMessageId]: { DataType: "String", StringValue: letter.record.messageId },
        [DEAD_LETTER_ATTRIBUTES.sourceQueue]: {
          DataType: "String",
          StringValue: letter.record.eventSourceARN || "unknown",
        },
      };
      if (letter.taskIndexes) {
        attributes[DEAD_LETTER_ATTRIBUTES.taskIndexes] = {
          DataType: "String",
          StringValue: letter.taskIndexes.join(","),
        };
      }
      const size =
        Buffer.byteLength(letter.body) +
        Object.entries(attributes).reduce(
          (sum, [name, value]) => sum + name.length + 6 + Buffer.byteLength(value.StringValue),
          0,
        );
      if (size > MAX_MESSAGE_BYTES) {
        throw new Error(`the dead letter would be ${size} bytes with its attributes; SQS takes ${MAX_MESSAGE_BYTES}`);
      }
      // A FIFO queue's dead letters go to a FIFO queue: in the record's group, one letter per record.
      const fifo = queueUrl.endsWith(".fifo")
        ? {
            MessageGroupId: letter.record.attributes?.MessageGroupId ?? "leaseq",
            MessageDeduplicationId: letter.record.messageId,
          }
        : {};
      await client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: letter.body,
          MessageAttributes: attributes,
          ...fifo,
        }),
      );
    },
  };
}
