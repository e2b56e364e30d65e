import { randomBytes } from "node:crypto";

const HANDLE_TAG = "leaseq-local-sqs";

/** What a receipt handle names: the queue, the message, and which receive of it handed the handle out. */
export interface Receipt {
  queueName: string;
  messageId: string;
  /** The message's receive count at that receive: a later receive makes the handle stale. */
  receiveCount: number;
}

/**
 * A receipt handle for one receive. It carries what it names, so no table of handles has to be
 * kept; the random tail makes every handle differ, as SQS's do.
 */
export function encodeReceipt({ queueName, messageId, receiveCount }: Receipt): string {
  const parts = [HANDLE_TAG, queueName, messageId, receiveCount, randomBytes(6).toString("hex")];
  return Buffer.from(parts.join("\n")).toString("base64url");
}

/** What a receipt handle names, or undefined when it is not one the stand-in handed out. */
export function decodeReceipt(receiptHandle: string): Receipt | undefined {
  const parts = Buffer.from(receiptHandle, "base64url").toString("utf8").split("\n");
  if (parts.length !== 5 || parts[0] !== HANDLE_TAG || !/^\d+$/.test(parts[3])) return undefined;
  return { queueName: parts[1], messageId: parts[2], receiveCount: Number(parts[3]) };
}
