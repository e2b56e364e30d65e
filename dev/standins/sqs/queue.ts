import { randomUUID } from "node:crypto";
import { sqsErrors } from "./errors.js";
import {
  Deduplication,
  FIFO_SUFFIX,
  FIRST_SEQUENCE_NUMBER,
  type FifoMembers,
  type FirstSend,
  fifoIds,
  receivableInGroupOrder,
  refuseFifoMembers,
} from "./fifo.js";
import { MAX_MESSAGE_BYTES, md5OfBody, type SqsAttributes, validateMessage } from "./message.js";
import { decodeReceipt, encodeReceipt } from "./receipts.js";
import type { QueueJournal, RestoredQueue } from "./store.js";
import type { Received, StoredMessage } from "./stored-message.js";

export type { FirstSend } from "./fifo.js";
export type { Arrival, Received, StoredMessage } from "./stored-message.js";

/** The RedrivePolicy of a source queue. */
export interface RedrivePolicy {
  deadLetterTargetArn: string;
  maxReceiveCount: number;
}

/** A queue's settings; the defaults are SQS's. */
export interface QueueSettings {
  /** A FIFO queue (its name ends in `.fifo`). Default: whether the name ends in `.fifo`. */
  fifo?: boolean;
  /** FIFO queues: a send without MessageDeduplicationId is deduplicated by the SHA-256 of its body. Default false. */
  contentBasedDeduplication?: boolean;
  /** Default 30 s; milliseconds, so tests can run with short timeouts. */
  visibilityTimeoutMs?: number;
  /** The queue's DelaySeconds. Default 0. */
  delaySeconds?: number;
  maxMessageBytes?: number;
  /** The ReceiveMessageWaitTimeSeconds used when a receive names no WaitTimeSeconds. Default 0. */
  receiveWaitSeconds?: number;
  redrivePolicy?: RedrivePolicy;
}

/** Per-queue totals since it was created. */
export interface QueueTotals {
  sent: number;
  deleted: number;
  /** Receives of a message after its first. */
  redelivered: number;
  /** Messages this queue's redrive policy moved to its dead-letter queue. */
  redriven: number;
  /** FIFO sends accepted but not stored: their deduplication id was seen in the last 5 minutes. */
  deduplicated: number;
}

/** What a send names besides the body, as SendMessage's members do. */
export interface SendOptions extends FifoMembers {
  attributes?: SqsAttributes;
}

/**
 * One queue: messages in send order, each hidden while delayed or in flight; a receive takes the
 * available ones, and moves those already received maxReceiveCount times to the dead-letter queue
 * instead, as SQS's redrive policy does. Long polls wait on `waitForMessages`. A FIFO queue also
 * deduplicates sends, and hands a group's messages out in send order, none while one is in flight.
 * With a journal, it reports every change to it, so a store can keep the messages beyond the process.
 */
export class SqsQueue {
  readonly settings: Required<Omit<QueueSettings, "redrivePolicy">> & { redrivePolicy?: RedrivePolicy };
  readonly totals: QueueTotals = { sent: 0, deleted: 0, redelivered: 0, redriven: 0, deduplicated: 0 };
  readonly createdMs = Date.now();
  lastPurgeMs: number | undefined;
  // A Map keeps insertion (send) order and deletes in O(1).
  private readonly messages = new Map<string, StoredMessage>();
  private readonly waiters = new Set<() => void>();
  private readonly deduplication = new Deduplication();
  private nextSequenceNumber = FIRST_SEQUENCE_NUMBER;

  constructor(
    readonly name: string,
    readonly arn: string,
    settings: QueueSettings,
    /** Finds the dead-letter queue of the redrive policy by ARN. */
    private readonly resolve: (arn: string) => SqsQueue | undefined,
    /** Where its changes go to outlive the process; none: they live in memory only. */
    private readonly journal?: QueueJournal,
  ) {
    this.settings = {
      fifo: name.endsWith(FIFO_SUFFIX),
      contentBasedDeduplication: false,
      visibilityTimeoutMs: 30_000,
      delaySeconds: 0,
      maxMessageBytes: MAX_MESSAGE_BYTES,
      receiveWaitSeconds: 0,
      ...settings,
    };
  }

  /**
   * Takes back what a store kept of this queue, before anything is sent to it. A message that was
   * in flight is visible at once rather than when its visibility timeout ends: its consumer was the
   * event source mapping of the process that stopped, so nobody is left to delete it. A delayed
   * message keeps its due time; expired deduplication ids are dropped, from the store too.
   */
  restore(restored: RestoredQueue, now = Date.now()): void {
    if (this.messages.size > 0) throw new Error(`cannot restore SQS queue ${this.name}: it holds messages already`);
    for (const message of restored.messages) {
      if (message.receiveCount > 0 && message.availableAtMs > now) message.availableAtMs = now;
      this.messages.set(message.messageId, message);
    }
    const oldestFirst = [...restored.deduplication].sort((a, b) => a.sentMs - b.sentMs);
    for (const entry of oldestFirst) this.deduplication.remember(entry.id, entry.first, entry.sentMs);
    const expired = this.deduplication.forgetExpired(now);
    if (expired.length > 0) this.journal?.forgot(expired);
    if (restored.nextSequenceNumber !== undefined && restored.nextSequenceNumber > this.nextSequenceNumber) {
      this.nextSequenceNumber = restored.nextSequenceNumber;
    }
  }

  /**
   * SendMessage: validates as SQS does (throws its SqsError) and stores the message; returns its id
   * (and sequence number). On a FIFO queue, a deduplication id seen in the last 5 minutes returns
   * those of the first message sent with it and stores nothing.
   */
  send(body: string, options: SendOptions = {}, now = Date.now()): FirstSend {
    const attributes = options.attributes ?? {};
    const delay = options.delaySeconds ?? this.settings.delaySeconds;
    validateMessage(body, attributes, delay, this.settings.maxMessageBytes);
    const ids = this.settings.fifo
      ? fifoIds(body, options, this.settings.contentBasedDeduplication)
      : refuseFifoMembers(options);
    if (ids) {
      const expired = this.deduplication.forgetExpired(now);
      if (expired.length > 0) this.journal?.forgot(expired);
    }
    const original = ids && this.deduplication.find(ids.messageDeduplicationId, now);
    if (original) {
      this.totals.deduplicated++;
      return original;
    }
    this.totals.sent++;
    const message = this.accept({
      messageId: randomUUID(),
      body,
      attributes,
      md5OfBody: md5OfBody(body),
      sentMs: now,
      availableAtMs: now + delay * 1000,
      receiveCount: 0,
      firstReceivedMs: undefined,
      arrival: "send",
      ...ids,
    });
    if (ids) {
      const first = { messageId: message.messageId, sequenceNumber: message.sequenceNumber };
      const entry = this.deduplication.remember(ids.messageDeduplicationId, first, now);
      this.journal?.remembered(entry);
    }
    return message;
  }

  /**
   * Stores a message as it is (a redrive or a move task brings it) and wakes long polls. A FIFO
   * queue gives it the next sequence number, so they grow in the order it takes messages.
   */
  accept(message: StoredMessage): StoredMessage {
    if (this.settings.fifo) message.sequenceNumber = String(this.nextSequenceNumber++);
    this.messages.set(message.messageId, message);
    this.journal?.added(message);
    this.notify();
    return message;
  }

  /**
   * Takes up to `max` available messages, hiding each for `visibilityTimeoutMs`; on a FIFO queue,
   * only those `receivableInGroupOrder` allows, in that order.
   */
  receive(max: number, visibilityTimeoutMs = this.settings.visibilityTimeoutMs, now = Date.now()): Received[] {
    const received: Received[] = [];
    const policy = this.settings.redrivePolicy;
    const deadLetterQueue = policy && this.resolve(policy.deadLetterTargetArn);
    const candidates = this.settings.fifo ? receivableInGroupOrder(this.messages, now) : this.messages.values();
    for (const message of candidates) {
      if (received.length >= max) break;
      if (message.availableAtMs > now) continue;
      if (policy && deadLetterQueue && message.receiveCount >= policy.maxReceiveCount) {
        // As SQS: moved on the receive attempt after the last allowed one, keeping id and receive count.
        this.messages.delete(message.messageId);
        this.journal?.removed(message.messageId);
        this.totals.redriven++;
        deadLetterQueue.accept({ ...message, arrival: "redrive", sourceArn: this.arn, availableAtMs: now });
        continue;
      }
      message.receiveCount++;
      message.firstReceivedMs ??= now;
      if (message.receiveCount > 1) this.totals.redelivered++;
      message.availableAtMs = now + visibilityTimeoutMs;
      this.journal?.delivered(message);
      const receipt = { queueName: this.name, messageId: message.messageId, receiveCount: message.receiveCount };
      received.push({ message, receiptHandle: encodeReceipt(receipt) });
    }
    return received;
  }

  /**
   * DeleteMessage. A handle of an earlier receive (the message was received again since) succeeds
   * without deleting, as the SQS API reference documents; so does a handle of a deleted message.
   */
  delete(receiptHandle: string): boolean {
    const message = this.receivedBy(receiptHandle);
    if (message === undefined) return false;
    this.messages.delete(message.messageId);
    this.journal?.removed(message.messageId);
    this.totals.deleted++;
    // On a FIFO queue the deleted message may have held its group back: long polls look again.
    if (this.settings.fifo) this.notify();
    return true;
  }

  /** ChangeMessageVisibility: counts from now; 0 makes the message available at once. */
  changeVisibility(receiptHandle: string, timeoutSeconds: number, now = Date.now()): void {
    const message = this.receivedBy(receiptHandle);
    if (message === undefined) throw sqsErrors.receiptHandleExpired(receiptHandle);
    if (message.availableAtMs <= now) throw sqsErrors.messageNotInflight();
    message.availableAtMs = now + timeoutSeconds * 1000;
    this.journal?.delivered(message);
    this.notify();
  }

  /** PurgeQueue: drops every message. */
  purge(): void {
    this.messages.clear();
    this.journal?.purged();
  }

  /** All messages, in send order (snapshots are the caller's to take). */
  all(): StoredMessage[] {
    return [...this.messages.values()];
  }

  /** How many messages the queue holds, in any state. */
  get size(): number {
    return this.messages.size;
  }

  /** Removes one message by id (a move task taking it elsewhere). */
  remove(messageId: string): void {
    if (this.messages.delete(messageId)) this.journal?.removed(messageId);
  }

  /** The ApproximateNumberOfMessages* attributes. */
  counts(now = Date.now()): { visible: number; notVisible: number; delayed: number } {
    const counts = { visible: 0, notVisible: 0, delayed: 0 };
    for (const message of this.messages.values()) {
      if (message.availableAtMs <= now) counts.visible++;
      else if (message.receiveCount === 0) counts.delayed++;
      else counts.notVisible++;
    }
    return counts;
  }

  /**
   * Resolves when a message may have become available: one arrived or changed visibility, the
   * earliest hidden one is due, `untilMs` passed, or `signal` aborted. Callers receive again after.
   */
  async waitForMessages(untilMs: number, signal?: AbortSignal): Promise<void> {
    const now = Date.now();
    let wakeAtMs = untilMs;
    for (const message of this.messages.values()) {
      if (message.availableAtMs > now) wakeAtMs = Math.min(wakeAtMs, message.availableAtMs);
    }
    if (wakeAtMs <= now || signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, wakeAtMs - now);
      this.waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * The message a receipt handle of this queue names, if it is still in the queue and that receive
   * was its last; throws ReceiptHandleIsInvalid for a handle this queue never handed out.
   */
  private receivedBy(receiptHandle: string): StoredMessage | undefined {
    const receipt = decodeReceipt(receiptHandle);
    if (receipt === undefined || receipt.queueName !== this.name) throw sqsErrors.receiptHandleIsInvalid(receiptHandle);
    const message = this.messages.get(receipt.messageId);
    return message?.receiveCount === receipt.receiveCount ? message : undefined;
  }

  private notify(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
