import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { isWakeBody } from "./crash-watch.js";

/**
 * How long a wake-up a running worker took stays invisible before it comes back: it is deleted as
 * soon as the claim it prompted is made, so this only matters when the worker dies in between, or
 * when its long poll was cut short with the message on its way (the drain ended).
 */
const TAKEN_VISIBILITY_SECONDS = 10;

/** The message attribute naming the types a wake-up is for: those its sender had no room left for. */
export const WAKE_TYPES_ATTRIBUTE = "leaseqTypes";

/**
 * The message attribute naming the partition of a partitioned queue a wake-up is for (docs/partitions.md):
 * the worker claims from it first. None: a queue of one partition's, or a sender that names none (the worker chooses).
 */
export const WAKE_PARTITION_ATTRIBUTE = "leaseqPartition";

/** The partition a wake-up's attributes name (Lambda's record or SQS's message), or undefined. */
export function wakePartition(
  attributes: Record<string, { stringValue?: string; StringValue?: string }> | undefined,
): number | undefined {
  const value = attributes?.[WAKE_PARTITION_ATTRIBUTE];
  const partition = Number(value?.stringValue ?? value?.StringValue);
  return value && Number.isInteger(partition) && partition >= 0 ? partition : undefined;
}

/** A wake-up message a running worker received from the wake queue, invisible to others meanwhile. */
export interface TakenWakeUp {
  /** The types it is for (a worker with room for one of them), or undefined: any work. */
  forTypes: string[] | undefined;
  /** The partition it is for (WAKE_PARTITION_ATTRIBUTE), or undefined. */
  partition: number | undefined;
  /** The claim it asked for was made: the message is deleted, as Lambda deletes a handled record. */
  done(): Promise<void>;
  /** Not used (the worker had no room by then): visible again at once for another worker. */
  giveBack(): Promise<void>;
}

/**
 * Waits up to `maxWaitMs` (whole seconds, at most 20) for wake-ups: the ones that came (up to 10,
 * all taken: use one, give the others back), or none.
 */
export type WakeListen = (signal: AbortSignal, maxWaitMs: number) => Promise<TakenWakeUp[]>;

/**
 * A running worker with free slots takes wake-ups itself (docs/wake-ups.md "Free slots listen"): it
 * long-polls the wake queue, as the event source mapping does, so work arriving while every
 * invocation the mapping may start is busy (its maximum concurrency reached, long tasks running)
 * starts in a free slot of one of them at once, not when an invocation ends. A long poll costs SQS
 * requests (three a minute while it waits), never Redis commands. Never throws: a failed receive
 * is no wake-up (the event source mapping still reads the queue).
 */
export function wakeListener(options: { client: SQSClient; queueUrl: string }): WakeListen {
  const { client, queueUrl } = options;
  // Best effort: a message not deleted comes back after its visibility timeout, one more wake-up;
  // one not given back comes back then too.
  const settle = async (receiptHandle: string, visible: boolean) => {
    const target = { QueueUrl: queueUrl, ReceiptHandle: receiptHandle };
    await (visible
      ? client.send(new ChangeMessageVisibilityCommand({ ...target, VisibilityTimeout: 0 }))
      : client.send(new DeleteMessageCommand(target))
    ).catch(() => {});
  };
  return async (signal, maxWaitMs) => {
    const waitSeconds = Math.min(20, Math.max(1, Math.floor(maxWaitMs / 1000)));
    let messages:
      | Array<{ Body?: string; ReceiptHandle?: string; MessageAttributes?: Record<string, { StringValue?: string }> }>
      | undefined;
    try {
      // Up to 10 at once: a wake-up for tasks this worker has no room for may come first.
      ({ Messages: messages } = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          MessageAttributeNames: [WAKE_TYPES_ATTRIBUTE, WAKE_PARTITION_ATTRIBUTE],
          WaitTimeSeconds: waitSeconds,
          VisibilityTimeout: TAKEN_VISIBILITY_SECONDS,
        }),
        { abortSignal: signal },
      ));
    } catch {
      return [];
    }
    const taken: TakenWakeUp[] = [];
    for (const message of messages ?? []) {
      const handle = message.ReceiptHandle;
      if (!handle) continue;
      // The wake queue holds wake-ups only; anything else is the mapping's to handle.
      if (!isWakeBody(message.Body ?? "")) {
        await settle(handle, true);
        continue;
      }
      const types = message.MessageAttributes?.[WAKE_TYPES_ATTRIBUTE]?.StringValue;
      taken.push({
        forTypes: types ? types.split(",") : undefined,
        partition: wakePartition(message.MessageAttributes),
        done: () => settle(handle, false),
        giveBack: () => settle(handle, true),
      });
    }
    return taken;
  };
}
