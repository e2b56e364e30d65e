import { sqsErrors } from "./errors.js";
import type { MoveTask } from "./moves.js";
import type { Operation } from "./operations.js";
import { type Input, optionalInteger, optionalString, optionalStrings, requireString } from "./params.js";
import type { SqsQueue } from "./queue.js";

// Attribute values as GetQueueAttributes returns them: all strings, RedrivePolicy as JSON text.
function queueAttributes(queue: SqsQueue, now = Date.now()): Record<string, string | undefined> {
  const counts = queue.counts(now);
  const { settings } = queue;
  const seconds = (ms: number) => String(Math.floor(ms / 1000));
  return {
    ApproximateNumberOfMessages: String(counts.visible),
    ApproximateNumberOfMessagesNotVisible: String(counts.notVisible),
    ApproximateNumberOfMessagesDelayed: String(counts.delayed),
    CreatedTimestamp: seconds(queue.createdMs),
    LastModifiedTimestamp: seconds(queue.createdMs),
    DelaySeconds: String(settings.delaySeconds),
    MaximumMessageSize: String(settings.maxMessageBytes),
    MessageRetentionPeriod: "345600",
    QueueArn: queue.arn,
    ReceiveMessageWaitTimeSeconds: String(settings.receiveWaitSeconds),
    // Rounded up: a sub-second test timeout must not read as 0 (which would mean "visible at once").
    VisibilityTimeout: String(Math.ceil(settings.visibilityTimeoutMs / 1000)),
    RedrivePolicy: settings.redrivePolicy && JSON.stringify(settings.redrivePolicy),
    SqsManagedSseEnabled: "false",
    // A standard queue has no FIFO attributes: asked for, they are left out, as SQS does.
    FifoQueue: settings.fifo ? "true" : undefined,
    ContentBasedDeduplication: settings.fifo ? String(settings.contentBasedDeduplication) : undefined,
    DeduplicationScope: settings.fifo ? "queue" : undefined,
    FifoThroughputLimit: settings.fifo ? "perQueue" : undefined,
    // Valid names the local queues never set: asked for, they are left out, as SQS does.
    Policy: undefined,
    RedriveAllowPolicy: undefined,
    KmsMasterKeyId: undefined,
    KmsDataKeyReusePeriodSeconds: undefined,
  };
}

function moveTaskToWire(task: MoveTask): Input {
  return {
    // SQS gives the handle only while a task runs (it is what CancelMessageMoveTask takes).
    ...(task.status === "RUNNING" && { TaskHandle: task.taskHandle }),
    Status: task.status,
    SourceArn: task.sourceArn,
    ...(task.destinationArn !== undefined && { DestinationArn: task.destinationArn }),
    ...(task.maxNumberOfMessagesPerSecond !== undefined && {
      MaxNumberOfMessagesPerSecond: task.maxNumberOfMessagesPerSecond,
    }),
    ApproximateNumberOfMessagesMoved: task.approximateNumberOfMessagesMoved,
    ApproximateNumberOfMessagesToMove: task.approximateNumberOfMessagesToMove,
    ...(task.failureReason !== undefined && { FailureReason: task.failureReason }),
    StartedTimestamp: task.startedMs,
  };
}

/**
 * GetQueueUrl, ListQueues, GetQueueAttributes, ListDeadLetterSourceQueues, PurgeQueue,
 * StartMessageMoveTask, ListMessageMoveTasks.
 */
export const queueOperations: Record<string, Operation> = {
  GetQueueUrl: (input, { broker, origin }) => {
    const queue = broker.byName(requireString(input, "QueueName"), optionalString(input, "QueueOwnerAWSAccountId"));
    return { QueueUrl: broker.urlOf(queue, origin) };
  },

  ListQueues: (input, { broker, origin }) => {
    const prefix = optionalString(input, "QueueNamePrefix") ?? "";
    const max = optionalInteger(input, "MaxResults", 1, 1000);
    const start = Number(optionalString(input, "NextToken") ?? 0);
    if (!Number.isInteger(start) || start < 0) throw sqsErrors.invalidParameterValue("Invalid NextToken value.");
    const names = broker.list().filter((queue) => queue.name.startsWith(prefix));
    const page = names.slice(start, max === undefined ? undefined : start + max);
    if (page.length === 0) return {};
    const more = max !== undefined && start + max < names.length;
    return {
      QueueUrls: page.map((queue) => broker.urlOf(queue, origin)),
      ...(more && { NextToken: String(start + max) }),
    };
  },

  GetQueueAttributes: (input, { broker }) => {
    const queue = broker.byUrl(requireString(input, "QueueUrl"));
    const all = queueAttributes(queue);
    const names = optionalStrings(input, "AttributeNames");
    const wanted = names.includes("All") ? Object.keys(all) : names;
    const attributes: Record<string, string> = {};
    for (const name of wanted) {
      if (!(name in all)) throw sqsErrors.invalidAttributeName(name);
      const value = all[name];
      if (value !== undefined) attributes[name] = value;
    }
    return Object.keys(attributes).length > 0 ? { Attributes: attributes } : {};
  },

  ListDeadLetterSourceQueues: (input, { broker, origin }) => {
    const queue = broker.byUrl(requireString(input, "QueueUrl"));
    return { queueUrls: broker.sourcesOf(queue).map((source) => broker.urlOf(source, origin)) };
  },

  PurgeQueue: (input, { broker }) => {
    const queue = broker.byUrl(requireString(input, "QueueUrl"));
    const now = Date.now();
    // SQS allows one purge a minute per queue; code that purges in a loop fails there too.
    if (queue.lastPurgeMs !== undefined && now - queue.lastPurgeMs < 60_000)
      throw sqsErrors.purgeInProgress(queue.name);
    queue.lastPurgeMs = now;
    queue.purge();
    return {};
  },

  StartMessageMoveTask: (input, { broker }) => {
    const task = broker.moves.start(
      requireString(input, "SourceArn"),
      optionalString(input, "DestinationArn"),
      optionalInteger(input, "MaxNumberOfMessagesPerSecond", 1, 500),
    );
    return { TaskHandle: task.taskHandle };
  },

  ListMessageMoveTasks: (input, { broker }) => {
    const tasks = broker.moves.list(
      requireString(input, "SourceArn"),
      optionalInteger(input, "MaxResults", 1, 10) ?? 1,
    );
    return { Results: tasks.map(moveTaskToWire) };
  },
};
