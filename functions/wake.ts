import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { WakeTo } from "../shared/types.js";
import type { WakeMessageBody } from "./messages.js";
import { WAKE_PARTITION_ATTRIBUTE, WAKE_TYPES_ATTRIBUTE } from "./wake-listen.js";

/** The longest delay SQS gives a message (DelaySeconds 900). */
export const MAX_WAKE_DELAY_SECONDS = 900;

/** Sends the worker's SQS queue a wake-up message due at a time. */
export interface WakeSender {
  /**
   * Sends `{"leaseq":"wake"}` delayed until `atMs` (whole seconds, rounded up), at most 15 minutes;
   * `forTypes`: for a worker with room for one of these types (a message attribute, which workers
   * of a release before ignore; functions/wake-listen.ts). `partition`: the partition of a
   * partitioned queue whose work it is for (the attribute WAKE_PARTITION_ATTRIBUTE).
   */
  wake(atMs: number, now: number, forTypes?: string[], partition?: number): Promise<void>;
}

/**
 * The DelaySeconds of a wake-up due at `atMs`: rounded up, so it never arrives before its work (a
 * worker woken early would find nothing, hand off the same time again and wake the next one early:
 * a chain of empty invocations).
 */
export function wakeDelaySeconds(atMs: number, now: number): number {
  return Math.min(MAX_WAKE_DELAY_SECONDS, Math.max(0, Math.ceil((atMs - now) / 1000)));
}

/** An SQS client for the functions: the Lambda runtime's SDK, or a local stand-in at `endpoint`. */
export function functionSqsClient(endpoint: string | undefined): SQSClient {
  if (!endpoint) return new SQSClient({});
  return new SQSClient({
    endpoint,
    region: process.env.AWS_REGION ?? "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

/**
 * A wake-up message's attributes (none when it has neither): the types it is for, the partition it
 * names (functions/wake-listen.ts reads both).
 */
export function wakeAttributes(
  forTypes: readonly string[] | undefined,
  partition: number | undefined,
): { MessageAttributes?: Record<string, { DataType: string; StringValue: string }> } {
  const attributes: Record<string, { DataType: string; StringValue: string }> = {};
  if (forTypes && forTypes.length > 0) {
    attributes[WAKE_TYPES_ATTRIBUTE] = { DataType: "String", StringValue: forTypes.join(",") };
  }
  if (partition !== undefined) {
    attributes[WAKE_PARTITION_ATTRIBUTE] = { DataType: "Number", StringValue: String(partition) };
  }
  return Object.keys(attributes).length > 0 ? { MessageAttributes: attributes } : {};
}

/** A sender for the queue at `queueUrl`. Throws when SQS refuses (callers log it: the reclaimer is the safety net). */
export function sqsWakeSender(queueUrl: string, client: SQSClient): WakeSender {
  const body: WakeMessageBody = { leaseq: "wake" };
  return {
    async wake(atMs, now, forTypes, partition) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify(body),
          DelaySeconds: wakeDelaySeconds(atMs, now),
          ...wakeAttributes(forTypes, partition),
        }),
      );
    },
  };
}

/**
 * Sends the wake-ups a call asked for on other deployments' wake queues (a queue two deployments
 * share: docs/wake-ups.md). Resolves to why SQS refused any, one line per queue, or [] when all went.
 */
export async function sendWakeTo(client: SQSClient, wakeTo: readonly WakeTo[], now: number): Promise<string[]> {
  const errors: string[] = [];
  for (const wake of wakeTo) {
    try {
      await sqsWakeSender(wake.queueUrl, client).wake(wake.atMs, now, undefined, wake.partition);
    } catch (error) {
      errors.push(`${wake.queueUrl}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return errors;
}
