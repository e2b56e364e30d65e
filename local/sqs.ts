import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";

/** One message as the local queue keeps it. */
export interface LocalMessage {
  messageId: string;
  body: string;
  sentMs: number;
  receiveCount: number;
  firstReceivedMs: number | undefined;
  /** Hidden from receives until this time (the visibility timeout after a receive). */
  visibleAtMs: number;
}

/** Settings of the SQS stand-in; the defaults mirror the stack's event source mapping, scaled for a laptop. */
export interface LocalSqsOptions {
  /** Records per handler invocation, as the event source mapping's batchSize. Default 10. */
  batchSize?: number;
  /** How long a received message stays hidden before it can be received again. Default 30 s. */
  visibilityTimeoutMs?: number;
  /** Receives before a message moves to the dead-letter list instead of being delivered. Default 5. */
  maxReceiveCount?: number;
  /** Concurrent handler invocations, as the mapping's maxConcurrency. Default 4. */
  concurrency?: number;
  /** Idle poll interval. Default 25 ms. */
  pollMs?: number;
  queueName?: string;
}

/** What happened so far, for the live view and the summary. */
export interface SqsCounts {
  visible: number;
  inFlight: number;
  deleted: number;
  /** Receives after the first: records reported in batchItemFailures, or of a batch that threw. */
  redelivered: number;
  deadLettered: number;
  invocations: number;
}

/**
 * An in-process stand-in for an SQS queue and its Lambda event source mapping with
 * ReportBatchItemFailures: batches of visible messages go to the handler; records it reports in
 * `batchItemFailures` (or all, when it throws) stay and come back after the visibility timeout;
 * the rest are deleted; a message received `maxReceiveCount` times moves to `deadLetters`.
 */
export class LocalSqs {
  readonly deadLetters: LocalMessage[] = [];
  private readonly messages: LocalMessage[] = [];
  private readonly settings: Required<LocalSqsOptions>;
  private readonly counts = { deleted: 0, redelivered: 0, invocations: 0, inFlight: 0 };
  private running: Promise<void>[] = [];
  private stopping = false;

  constructor(
    private readonly handler: (event: SQSEvent) => Promise<SQSBatchResponse | undefined>,
    options: LocalSqsOptions = {},
  ) {
    this.settings = {
      batchSize: 10,
      visibilityTimeoutMs: 30_000,
      maxReceiveCount: 5,
      concurrency: 4,
      pollMs: 25,
      queueName: "leaseq-local",
      ...options,
    };
  }

  /** Adds a message, as SendMessage; returns its id. */
  send(body: string, now = Date.now()): string {
    const messageId = randomUUID();
    this.messages.push({ messageId, body, sentMs: now, receiveCount: 0, firstReceivedMs: undefined, visibleAtMs: now });
    return messageId;
  }

  /** Starts the pollers: `concurrency` loops, each invoking the handler with one batch at a time. */
  start(): void {
    this.stopping = false;
    this.running = Array.from({ length: this.settings.concurrency }, () => this.poll());
  }

  /** Stops receiving and waits for the invocations in flight to finish. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.running);
  }

  /** Counts for the live view and the summary. */
  stats(now = Date.now()): SqsCounts {
    return {
      visible: this.messages.filter((message) => message.visibleAtMs <= now).length,
      inFlight: this.counts.inFlight,
      deleted: this.counts.deleted,
      redelivered: this.counts.redelivered,
      deadLettered: this.deadLetters.length,
      invocations: this.counts.invocations,
    };
  }

  /** Takes up to a batch of visible messages, moving those received too often to the dead letters. */
  receive(now = Date.now()): LocalMessage[] {
    const batch: LocalMessage[] = [];
    for (let i = 0; i < this.messages.length && batch.length < this.settings.batchSize; ) {
      const message = this.messages[i];
      if (message.visibleAtMs > now) {
        i++;
        continue;
      }
      if (message.receiveCount >= this.settings.maxReceiveCount) {
        // As SQS's redrive policy: moved on the receive after the last allowed one.
        this.messages.splice(i, 1);
        this.deadLetters.push(message);
        continue;
      }
      message.receiveCount++;
      message.firstReceivedMs ??= now;
      if (message.receiveCount > 1) this.counts.redelivered++;
      message.visibleAtMs = now + this.settings.visibilityTimeoutMs;
      batch.push(message);
      i++;
    }
    return batch;
  }

  private async poll(): Promise<void> {
    while (!this.stopping) {
      const batch = this.receive();
      if (batch.length === 0) {
        await sleep(this.settings.pollMs);
        continue;
      }
      this.counts.invocations++;
      this.counts.inFlight++;
      let failed: Set<string>;
      try {
        const response = await this.handler({ Records: batch.map((message) => this.record(message)) });
        failed = new Set((response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
      } catch {
        // A thrown handler fails the whole batch: every record comes back after its visibility timeout.
        failed = new Set(batch.map((message) => message.messageId));
      } finally {
        this.counts.inFlight--;
      }
      for (const message of batch) if (!failed.has(message.messageId)) this.delete(message.messageId);
    }
  }

  private delete(messageId: string): void {
    const index = this.messages.findIndex((message) => message.messageId === messageId);
    if (index >= 0) {
      this.messages.splice(index, 1);
      this.counts.deleted++;
    }
  }

  private record(message: LocalMessage): SQSRecord {
    const arn = `arn:aws:sqs:local:000000000000:${this.settings.queueName}`;
    return {
      messageId: message.messageId,
      receiptHandle: `${message.messageId}#${message.receiveCount}`,
      body: message.body,
      attributes: {
        ApproximateReceiveCount: String(message.receiveCount),
        SentTimestamp: String(message.sentMs),
        SenderId: "local",
        ApproximateFirstReceiveTimestamp: String(message.firstReceivedMs ?? message.sentMs),
      },
      messageAttributes: {},
      md5OfBody: createHash("md5").update(message.body).digest("hex"),
      eventSource: "aws:sqs",
      eventSourceARN: arn,
      awsRegion: "local",
    };
  }
}
