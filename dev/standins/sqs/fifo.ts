import { createHash } from "node:crypto";
import { sqsErrors } from "./errors.js";
import type { StoredMessage } from "./stored-message.js";

/** The end of every FIFO queue's name, and of no standard queue's. */
export const FIFO_SUFFIX = ".fifo";

/** How long a FIFO queue remembers a deduplication id: SQS's deduplication interval. */
export const DEDUPLICATION_INTERVAL_MS = 5 * 60_000;

/**
 * The first SequenceNumber a FIFO queue gives. SQS's are 20-digit decimal strings that only grow
 * within a queue; starting at 10^19 keeps the stand-in's 20 digits long too.
 */
export const FIRST_SEQUENCE_NUMBER = 10n ** 19n;

// MessageGroupId and MessageDeduplicationId: 1 to 128 letters, digits and ASCII punctuation.
const FIFO_ID = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;

/** The members of a send that only FIFO queues take. */
export interface FifoMembers {
  delaySeconds?: number;
  messageGroupId?: string;
  messageDeduplicationId?: string;
}

/** The ids a FIFO message is sent with. */
export interface FifoIds {
  messageGroupId: string;
  messageDeduplicationId: string;
}

/**
 * Checks a send to a FIFO queue as SQS does and returns its ids: MessageGroupId is required
 * (MissingParameter); MessageDeduplicationId too unless the queue has content-based deduplication,
 * which uses the SHA-256 of the body (InvalidParameterValue); a per-message DelaySeconds other than
 * 0 is refused (InvalidParameterValue), as a FIFO queue's delay is the queue's own.
 */
export function fifoIds(body: string, members: FifoMembers, contentBasedDeduplication: boolean): FifoIds {
  if (members.delaySeconds !== undefined && members.delaySeconds !== 0) {
    throw sqsErrors.invalidValue(
      "DelaySeconds",
      members.delaySeconds,
      "The request include parameter that is not valid for this queue type.",
    );
  }
  const messageGroupId = members.messageGroupId;
  if (messageGroupId === undefined || messageGroupId === "") throw sqsErrors.missingParameter("MessageGroupId");
  checkId("MessageGroupId", messageGroupId);
  if (members.messageDeduplicationId !== undefined) {
    checkId("MessageDeduplicationId", members.messageDeduplicationId);
    return { messageGroupId, messageDeduplicationId: members.messageDeduplicationId };
  }
  if (!contentBasedDeduplication) {
    throw sqsErrors.invalidParameterValue(
      "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
    );
  }
  return { messageGroupId, messageDeduplicationId: createHash("sha256").update(body, "utf8").digest("hex") };
}

/** Refuses the FIFO-only members on a standard queue, as SQS does rather than ignore them. */
export function refuseFifoMembers(members: FifoMembers): undefined {
  if (members.messageGroupId !== undefined || members.messageDeduplicationId !== undefined) {
    throw sqsErrors.invalidParameterValue("The request include parameter that is not valid for this queue type");
  }
  return undefined;
}

function checkId(name: string, value: string): void {
  if (!FIFO_ID.test(value)) {
    throw sqsErrors.invalidValue(
      name,
      value,
      `${name} can only include alphanumeric and punctuation characters. 1 to 128 in length.`,
    );
  }
}

/** What a send deduplicated by an id answers: the id (and sequence number) of the first message sent with it. */
export interface FirstSend {
  messageId: string;
  sequenceNumber?: string;
}

/** One deduplication id a FIFO queue remembers, as a store keeps it. */
export interface DeduplicationEntry {
  id: string;
  sentMs: number;
  first: FirstSend;
}

/**
 * The deduplication ids a FIFO queue saw in the last 5 minutes, each with what its first send
 * returned. SQS keeps an id for the interval even after its message is received and deleted.
 */
export class Deduplication {
  // Insertion order is send order, so the expired entries are the first ones.
  private readonly seen = new Map<string, DeduplicationEntry>();

  /** Forgets the ids whose 5 minutes ended by `now`; returns them, so a store can forget them too. */
  forgetExpired(now: number): string[] {
    const expired: string[] = [];
    for (const [id, entry] of this.seen) {
      if (now - entry.sentMs < DEDUPLICATION_INTERVAL_MS) break;
      this.seen.delete(id);
      expired.push(id);
    }
    return expired;
  }

  /** What the first send of `id` returned, if that was less than 5 minutes before `now`. */
  find(id: string, now: number): FirstSend | undefined {
    const entry = this.seen.get(id);
    return entry !== undefined && now - entry.sentMs < DEDUPLICATION_INTERVAL_MS ? entry.first : undefined;
  }

  /** Remembers the first send of `id`, at `sentMs`; returns the entry, for a store to keep. */
  remember(id: string, first: FirstSend, sentMs: number): DeduplicationEntry {
    const entry = { id, sentMs, first };
    this.seen.delete(id);
    this.seen.set(id, entry);
    return entry;
  }
}

/**
 * The messages of a FIFO queue that one receive may hand out, in the order to hand them out. A
 * group with a message in flight gives none: handing out a later one would let it overtake. Any
 * other group gives its leading run of available messages, in send order, up to the first one
 * still hidden. Groups come by their oldest message, each whole before the next, as SQS returns as
 * many messages of one group as it can. `messages` is in send order.
 */
export function receivableInGroupOrder(messages: ReadonlyMap<string, StoredMessage>, now: number): StoredMessage[] {
  const inFlight = new Set<string | undefined>();
  for (const message of messages.values()) {
    if (message.receiveCount > 0 && message.availableAtMs > now) inFlight.add(message.messageGroupId);
  }
  const runs = new Map<string | undefined, StoredMessage[]>();
  const ended = new Set<string | undefined>();
  for (const message of messages.values()) {
    const group = message.messageGroupId;
    if (inFlight.has(group) || ended.has(group)) continue;
    if (message.availableAtMs > now) {
      ended.add(group);
      continue;
    }
    const run = runs.get(group) ?? [];
    run.push(message);
    runs.set(group, run);
  }
  return [...runs.values()].flat();
}

/**
 * The messages of a batch that must stay in the queue: the failed ones, and on a FIFO queue every
 * later message of a group one of whose messages failed, so a group is never processed out of
 * order whatever the handler reported (Lambda asks the handler to report them, and cannot check).
 */
export function heldBack(
  batch: ReadonlyArray<{ messageId: string; messageGroupId?: string }>,
  failed: ReadonlySet<string>,
  fifo: boolean,
): Set<string> {
  if (!fifo) return new Set(failed);
  const kept = new Set<string>();
  const stoppedGroups = new Set<string | undefined>();
  for (const { messageId, messageGroupId } of batch) {
    if (failed.has(messageId)) stoppedGroups.add(messageGroupId);
    if (stoppedGroups.has(messageGroupId)) kept.add(messageId);
  }
  return kept;
}
