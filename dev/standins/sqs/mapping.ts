import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { heldBack } from "./fifo.js";
import { REGION } from "./ids.js";
import { attributesToLambda, md5OfAttributes, systemAttributes } from "./message.js";
import type { Received, SqsQueue } from "./queue.js";

/** The function an event source mapping invokes: a Lambda handler with ReportBatchItemFailures. */
export type SqsHandler = (event: SQSEvent) => Promise<SQSBatchResponse | undefined>;

/** The mapping's settings. */
export interface MappingSettings {
  batchSize: number;
  /** Concurrent invocations, as the mapping's maximumConcurrency. */
  concurrency: number;
  /** Longest idle wait between receives; a message arriving ends the wait at once. */
  pollMs: number;
}

/** What the mapping did so far. */
export interface MappingCounts {
  invocations: number;
  /** Invocations running now. */
  inFlight: number;
}

/**
 * The Lambda event source mapping of one queue, with ReportBatchItemFailures: `concurrency`
 * pollers each receive a batch (through the same queue as the HTTP API) and invoke the handler;
 * records in `batchItemFailures`, or all when it throws or names an id not in the batch, stay and
 * come back after the visibility timeout; the rest are deleted. On a FIFO queue a batch holds each
 * group's records in order, no two invocations hold the same group (the queue hands out none of a
 * group in flight), and a failed record keeps every later record of its group in the queue too.
 * With a store, the handler is invoked once the receive is stored, so a record that takes the
 * process down with it still counts that receive, and reaches the dead-letter queue in the end.
 */
export class EventSourceMapping {
  readonly counts: MappingCounts = { invocations: 0, inFlight: 0 };
  private running: Promise<void>[] = [];
  private stopper = new AbortController();

  constructor(
    private readonly queue: SqsQueue,
    private readonly handler: SqsHandler,
    private readonly settings: MappingSettings,
    /** Resolves once the queue's changes so far are in its broker's store (SqsBroker.settled). */
    private readonly stored: () => Promise<void> = async () => {},
  ) {}

  /** Starts the pollers (no-op while running). */
  start(): void {
    if (this.running.length > 0) return;
    this.stopper = new AbortController();
    this.running = Array.from({ length: this.settings.concurrency }, () => this.poll(this.stopper.signal));
  }

  /** Stops receiving and waits for the invocations in flight to finish. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await Promise.all(this.running);
    this.running = [];
  }

  private async poll(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const batch = this.queue.receive(this.settings.batchSize);
      if (batch.length === 0) {
        await this.queue.waitForMessages(Date.now() + this.settings.pollMs, signal);
        continue;
      }
      await this.invoke(batch);
    }
  }

  private async invoke(batch: Received[]): Promise<void> {
    // A failed write was reported by the store; the records are delivered all the same, as at least once allows.
    await this.stored().catch(() => undefined);
    this.counts.invocations++;
    this.counts.inFlight++;
    const ids = new Set(batch.map(({ message }) => message.messageId));
    let failed: Set<string>;
    try {
      const response = await this.handler({ Records: batch.map((received) => this.record(received)) });
      const identifiers = (response?.batchItemFailures ?? []).map((failure) => failure?.itemIdentifier);
      // As Lambda: an empty, missing or unknown itemIdentifier fails the whole batch.
      failed = identifiers.every((id) => typeof id === "string" && ids.has(id)) ? new Set(identifiers) : ids;
    } catch {
      // A thrown handler fails the whole batch: every record comes back after its visibility timeout.
      failed = ids;
    } finally {
      this.counts.inFlight--;
    }
    const kept = heldBack(
      batch.map(({ message }) => message),
      failed,
      this.queue.settings.fifo,
    );
    for (const { message, receiptHandle } of batch) {
      if (!kept.has(message.messageId)) this.queue.delete(receiptHandle);
    }
  }

  private record({ message, receiptHandle }: Received): SQSRecord {
    const md5 = md5OfAttributes(message.attributes);
    const {
      SenderId,
      SentTimestamp,
      ApproximateReceiveCount,
      ApproximateFirstReceiveTimestamp,
      MessageGroupId,
      MessageDeduplicationId,
      SequenceNumber,
    } = systemAttributes(message);
    return {
      messageId: message.messageId,
      receiptHandle,
      body: message.body,
      attributes: {
        ApproximateReceiveCount,
        SentTimestamp,
        SenderId,
        ApproximateFirstReceiveTimestamp,
        // Lambda's records of a FIFO queue carry these three; a standard queue's do not.
        ...(SequenceNumber !== undefined && { SequenceNumber, MessageGroupId, MessageDeduplicationId }),
      },
      messageAttributes: attributesToLambda(message.attributes),
      md5OfBody: message.md5OfBody,
      ...(md5 && { md5OfMessageAttributes: md5 }),
      eventSource: "aws:sqs",
      eventSourceARN: this.queue.arn,
      awsRegion: REGION,
    };
  }
}
