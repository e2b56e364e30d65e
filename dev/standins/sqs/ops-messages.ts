import { SqsError, sqsErrors } from "./errors.js";
import {
  attributesFromJson,
  attributesToJson,
  md5OfAttributes,
  md5OfBody,
  messageBytes,
  selectAttributes,
  systemAttributes,
} from "./message.js";
import type { Operation } from "./operations.js";
import { batchEntries, type Input, optionalInteger, optionalString, optionalStrings, requireString } from "./params.js";
import type { Received, SqsQueue } from "./queue.js";

const MAX_VISIBILITY_SECONDS = 43_200;

// One SendMessage or batch entry, validated by the queue as the in-process send() is. The MD5s
// are of what was sent: a deduplicated send answers the first message's id with its own digests,
// which the SDK checks against what it sent.
function sendOne(queue: SqsQueue, input: Input): Input {
  const body = requireString(input, "MessageBody");
  const attributes = attributesFromJson(input.MessageAttributes);
  const message = queue.send(body, {
    attributes,
    delaySeconds: optionalInteger(input, "DelaySeconds", Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    messageGroupId: optionalString(input, "MessageGroupId"),
    messageDeduplicationId: optionalString(input, "MessageDeduplicationId"),
  });
  const md5 = md5OfAttributes(attributes);
  return {
    MessageId: message.messageId,
    MD5OfMessageBody: md5OfBody(body),
    ...(md5 && { MD5OfMessageAttributes: md5 }),
    ...(message.sequenceNumber !== undefined && { SequenceNumber: message.sequenceNumber }),
  };
}

// An entry's size; a malformed one counts its body only and fails on its own below.
function entryBytes(entry: Input): number {
  const body = typeof entry.MessageBody === "string" ? entry.MessageBody : "";
  try {
    return messageBytes(body, attributesFromJson(entry.MessageAttributes));
  } catch {
    return messageBytes(body, {});
  }
}

// A batch runs entry by entry; an entry SQS rejects lands in Failed, the others still go.
function perEntry(entries: Input[], run: (entry: Input) => Input): Input {
  const Successful: Input[] = [];
  const Failed: Input[] = [];
  for (const entry of entries) {
    try {
      Successful.push({ Id: entry.Id, ...run(entry) });
    } catch (error) {
      if (!(error instanceof SqsError)) throw error;
      Failed.push({ Id: entry.Id, SenderFault: true, Code: error.queryCode, Message: error.message });
    }
  }
  return { Successful, Failed };
}

function toWire(received: Received, systemNames: string[], attributeNames: string[]): Input {
  const { message, receiptHandle } = received;
  const wire: Input = {
    MessageId: message.messageId,
    ReceiptHandle: receiptHandle,
    MD5OfBody: message.md5OfBody,
    Body: message.body,
  };
  const all = systemAttributes(message);
  const system = Object.fromEntries(
    Object.entries(all).filter(([name]) => systemNames.includes("All") || systemNames.includes(name)),
  );
  if (Object.keys(system).length > 0) wire.Attributes = system;
  // The digest covers the attributes returned, so a client can check what it got.
  const selected = selectAttributes(message.attributes, attributeNames);
  const md5 = md5OfAttributes(selected);
  if (md5) {
    wire.MD5OfMessageAttributes = md5;
    wire.MessageAttributes = attributesToJson(selected);
  }
  return wire;
}

/** SendMessage, SendMessageBatch, ReceiveMessage, DeleteMessage(Batch), ChangeMessageVisibility(Batch). */
export const messageOperations: Record<string, Operation> = {
  SendMessage: (input, { broker }) => sendOne(broker.byUrl(requireString(input, "QueueUrl")), input),

  SendMessageBatch: (input, { broker }) => {
    const queue = broker.byUrl(requireString(input, "QueueUrl"));
    const entries = batchEntries(input, "SendMessageBatchRequestEntry");
    // The whole request is limited too: one entry over the size fails the batch, as on AWS.
    const bytes = entries.reduce((sum, entry) => sum + entryBytes(entry), 0);
    if (bytes > queue.settings.maxMessageBytes) throw sqsErrors.batchTooLong(queue.settings.maxMessageBytes, bytes);
    return perEntry(entries, (entry) => sendOne(queue, entry));
  },

  ReceiveMessage: async (input, { broker, signal }) => {
    const queue = broker.byUrl(requireString(input, "QueueUrl"));
    const max = optionalInteger(input, "MaxNumberOfMessages", 1, 10) ?? 1;
    const waitSeconds = optionalInteger(input, "WaitTimeSeconds", 0, 20) ?? queue.settings.receiveWaitSeconds;
    const visibility = optionalInteger(input, "VisibilityTimeout", 0, MAX_VISIBILITY_SECONDS);
    const systemNames = [
      ...optionalStrings(input, "AttributeNames"),
      ...optionalStrings(input, "MessageSystemAttributeNames"),
    ];
    const attributeNames = optionalStrings(input, "MessageAttributeNames");
    const deadline = Date.now() + waitSeconds * 1000;
    for (;;) {
      const received = queue.receive(max, visibility === undefined ? undefined : visibility * 1000);
      if (received.length > 0) return { Messages: received.map((one) => toWire(one, systemNames, attributeNames)) };
      if (Date.now() >= deadline) return {};
      // Long polling: back as soon as a message may be available, else at the deadline.
      await queue.waitForMessages(deadline, signal);
      // The client left or the server closes: receive nothing, so no message goes in flight for nobody.
      if (signal.aborted) return {};
    }
  },

  DeleteMessage: (input, { broker }) => {
    broker.byUrl(requireString(input, "QueueUrl")).delete(requireString(input, "ReceiptHandle"));
    return {};
  },

  DeleteMessageBatch: (input, { broker }) => {
    const queue = broker.byUrl(requireString(input, "QueueUrl"));
    return perEntry(batchEntries(input, "DeleteMessageBatchRequestEntry"), (entry) => {
      queue.delete(requireString(entry, "ReceiptHandle"));
      return {};
    });
  },

  ChangeMessageVisibility: (input, { broker }) => {
    const queue = broker.byUrl(requireString(input, "QueueUrl"));
    const timeout = optionalInteger(input, "VisibilityTimeout", 0, MAX_VISIBILITY_SECONDS);
    if (timeout === undefined) throw sqsErrors.missingParameter("VisibilityTimeout");
    queue.changeVisibility(requireString(input, "ReceiptHandle"), timeout);
    return {};
  },

  ChangeMessageVisibilityBatch: (input, { broker }) => {
    const queue = broker.byUrl(requireString(input, "QueueUrl"));
    return perEntry(batchEntries(input, "ChangeMessageVisibilityBatchRequestEntry"), (entry) => {
      const timeout = optionalInteger(entry, "VisibilityTimeout", 0, MAX_VISIBILITY_SECONDS);
      if (timeout === undefined) throw sqsErrors.missingParameter("VisibilityTimeout");
      queue.changeVisibility(requireString(entry, "ReceiptHandle"), timeout);
      return {};
    });
  },
};
