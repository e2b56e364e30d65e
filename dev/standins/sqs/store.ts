import type { DeduplicationEntry } from "./fifo.js";
import type { StoredMessage } from "./stored-message.js";

/** One queue as a store gives it back when a broker opens: what the queue held when it last wrote. */
export interface RestoredQueue {
  /** In the order the queue took them (on a FIFO queue, SequenceNumber order). */
  messages: StoredMessage[];
  /** FIFO queues: the deduplication ids it remembered, expired ones included (the queue drops those). */
  deduplication: DeduplicationEntry[];
  /** FIFO queues: the SequenceNumber its next message gets, so numbers keep growing across restarts. */
  nextSequenceNumber?: bigint;
}

/**
 * What one queue tells its store, synchronously, after each change of its state. The store applies
 * the changes in that order; those of one synchronous stretch (one API call, one receive with its
 * redrives, one move task) land together or not at all.
 */
export interface QueueJournal {
  /** The queue took a message: sent, redriven into it, or moved there. */
  added(message: StoredMessage): void;
  /** A message's receive count or visibility changed: received, or ChangeMessageVisibility. */
  delivered(message: StoredMessage): void;
  /** A message left the queue: deleted, redriven to the dead-letter queue, or moved by a task. */
  removed(messageId: string): void;
  /** PurgeQueue: every message left. */
  purged(): void;
  /** FIFO: a deduplication id to remember for 5 minutes. */
  remembered(entry: DeduplicationEntry): void;
  /** FIFO: deduplication ids whose 5 minutes ended. */
  forgot(ids: readonly string[]): void;
}

/**
 * Where a broker's queues keep their messages beyond the process (redis-store.ts). A broker opened
 * on one restores its queues from `load()` and journals every change after.
 */
export interface MessageStore {
  /** Every queue the store holds, by name. */
  load(): Promise<Map<string, RestoredQueue>>;
  /** The journal one queue writes its changes to. */
  journal(queueName: string): QueueJournal;
  /**
   * Resolves once every change journaled so far is stored; rejects with the error of the write
   * that carried the latest ones, if it failed.
   */
  settled(): Promise<void>;
  /** Waits for the pending writes, then lets the connection go. */
  close(): Promise<void>;
}
