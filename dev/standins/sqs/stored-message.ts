import type { SqsAttributes } from "./message.js";

/** How a message got into its queue: sent, moved there by a redrive policy, or by a message move task. */
export type Arrival = "send" | "redrive" | "move";

/** One message as a queue keeps it. */
export interface StoredMessage {
  messageId: string;
  body: string;
  attributes: SqsAttributes;
  md5OfBody: string;
  sentMs: number;
  /** Hidden until then: the delay of a message never received, else the visibility timeout of its last receive. */
  availableAtMs: number;
  receiveCount: number;
  firstReceivedMs: number | undefined;
  arrival: Arrival;
  /** The queue a redrive policy moved it from (the DeadLetterQueueSourceArn system attribute). */
  sourceArn?: string;
  /** FIFO queues: the group it is ordered within. */
  messageGroupId?: string;
  /** FIFO queues: the id a send within 5 minutes with the same id is deduplicated by. */
  messageDeduplicationId?: string;
  /** FIFO queues: its place in the queue, a decimal string that grows with every message the queue takes. */
  sequenceNumber?: string;
}

/** A message handed out by a receive, with the receipt handle of that receive. */
export interface Received {
  message: StoredMessage;
  receiptHandle: string;
}
