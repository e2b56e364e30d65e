import { randomUUID } from "node:crypto";
import { sqsErrors } from "./errors.js";
import type { SqsQueue } from "./queue.js";

/** One StartMessageMoveTask, as ListMessageMoveTasks reports it. */
export interface MoveTask {
  taskHandle: string;
  status: "RUNNING" | "COMPLETED" | "CANCELLED" | "FAILED";
  sourceArn: string;
  destinationArn?: string;
  maxNumberOfMessagesPerSecond?: number;
  approximateNumberOfMessagesMoved: number;
  approximateNumberOfMessagesToMove: number;
  failureReason?: string;
  startedMs: number;
}

/**
 * Message move tasks (DLQ redrive). A task runs to completion at once: every message of the
 * dead-letter queue that is not in flight goes to `destinationArn`, or back to the queue its
 * redrive policy moved it from. A moved message is sent anew: new id, receive count 0, same
 * body and attributes. In-flight messages stay (SQS would move them once their timeout ends).
 */
/** What moving messages needs of the broker (dev/standins/sqs/broker.ts): its queues by ARN. */
export interface MoveSources {
  byArn(arn: string): SqsQueue | undefined;
  /** The queues whose redrive policy names `deadLetterQueue`. */
  sourcesOf(deadLetterQueue: SqsQueue): SqsQueue[];
}

export class MoveTasks {
  private readonly tasks: MoveTask[] = [];

  constructor(private readonly broker: MoveSources) {}

  /** StartMessageMoveTask; returns the finished task. */
  start(sourceArn: string, destinationArn?: string, maxNumberOfMessagesPerSecond?: number, now = Date.now()): MoveTask {
    const source = this.broker.byArn(sourceArn);
    if (source === undefined) {
      throw sqsErrors.resourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.");
    }
    const sources = this.broker.sourcesOf(source);
    if (sources.length === 0) {
      throw sqsErrors.invalidParameterValue("Source queue must be configured as a Dead Letter Queue.");
    }
    const destination = destinationArn === undefined ? undefined : this.broker.byArn(destinationArn);
    if (destinationArn !== undefined && destination === undefined) {
      throw sqsErrors.resourceNotFound(
        "The resource that you specified for the DestinationArn parameter doesn't exist.",
      );
    }
    if (destination !== undefined && destination.settings.fifo !== source.settings.fifo) {
      throw sqsErrors.invalidParameterValue(
        "The source queue and the destination queue must be of the same type: both FIFO or both standard.",
      );
    }
    const task: MoveTask = {
      taskHandle: Buffer.from(JSON.stringify({ taskId: randomUUID(), sourceArn })).toString("base64"),
      status: "RUNNING",
      sourceArn,
      ...(destinationArn !== undefined && { destinationArn }),
      ...(maxNumberOfMessagesPerSecond !== undefined && { maxNumberOfMessagesPerSecond }),
      approximateNumberOfMessagesMoved: 0,
      approximateNumberOfMessagesToMove: source.all().length,
      startedMs: now,
    };
    const unplaced: string[] = [];
    for (const message of source.all()) {
      if (message.availableAtMs > now && message.receiveCount > 0) continue;
      // Sent straight to the DLQ (no source recorded): back to its only source queue, if it has one.
      const target =
        destination ??
        (message.sourceArn ? this.broker.byArn(message.sourceArn) : sources.length === 1 ? sources[0] : undefined);
      if (target === undefined) {
        unplaced.push(message.messageId);
        continue;
      }
      source.remove(message.messageId);
      target.accept({
        ...message,
        messageId: randomUUID(),
        sentMs: now,
        availableAtMs: now,
        receiveCount: 0,
        firstReceivedMs: undefined,
        arrival: "move",
        sourceArn: undefined,
      });
      task.approximateNumberOfMessagesMoved++;
    }
    task.status = unplaced.length > 0 ? "FAILED" : "COMPLETED";
    if (unplaced.length > 0) {
      task.failureReason = `${unplaced.length} messages have no source queue to return to; pass DestinationArn`;
    }
    this.tasks.unshift(task);
    return task;
  }

  /** ListMessageMoveTasks: the most recent tasks of a source queue first. */
  list(sourceArn: string, maxResults = 1): MoveTask[] {
    if (this.broker.byArn(sourceArn) === undefined) {
      throw sqsErrors.resourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.");
    }
    return this.tasks.filter((task) => task.sourceArn === sourceArn).slice(0, maxResults);
  }
}
