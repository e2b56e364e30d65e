// The JSON a Redis store keeps per message and per deduplication id (key layout: redis-keys.ts),
// and the checks that read it back: a record that does not parse names its key and field.
import type { DeduplicationEntry } from "./fifo.js";
import { attributesFromJson, attributesToJson, md5OfBody } from "./message.js";
import type { QueueKeys } from "./redis-keys.js";
import type { Arrival, StoredMessage } from "./stored-message.js";

type Json = Record<string, unknown>;

/** The raw hashes and string a store read for one queue, field name to JSON text. */
export interface QueueHashes {
  messages: Map<string, string>;
  deliveries: Map<string, string>;
  deduplication: Map<string, string>;
  /** The next SequenceNumber, decimal; null when the queue never took a FIFO message. */
  sequence: string | null;
}

/** One message as a store read it back, with its place in the queue. */
export interface PositionedMessage {
  message: StoredMessage;
  /** Grows with every message the store is told of: sorts a queue's messages into the order it took them. */
  position: number;
}

const ARRIVALS: readonly Arrival[] = ["send", "redrive", "move"];
const DECIMAL = /^\d{1,30}$/;

/** What does not change while the message is in the queue: written once, when the queue takes it. */
export function encodeMessage(message: StoredMessage, position: number): string {
  return JSON.stringify({
    position,
    body: message.body,
    attributes: attributesToJson(message.attributes),
    sentMs: message.sentMs,
    arrival: message.arrival,
    sourceArn: message.sourceArn,
    messageGroupId: message.messageGroupId,
    messageDeduplicationId: message.messageDeduplicationId,
    sequenceNumber: message.sequenceNumber,
  });
}

/** What every receive and visibility change rewrites. */
export function encodeDelivery(message: StoredMessage): string {
  return JSON.stringify({
    availableAtMs: message.availableAtMs,
    receiveCount: message.receiveCount,
    firstReceivedMs: message.firstReceivedMs,
  });
}

/** A deduplication id's first send; the id is the hash field. */
export function encodeDeduplication(entry: DeduplicationEntry): string {
  return JSON.stringify({ sentMs: entry.sentMs, ...entry.first });
}

/**
 * Reads one queue's records back: its messages with their positions, and its deduplication ids.
 * Throws an Error naming the key, the field and what is wrong when a record does not parse. A
 * message whose delivery record is missing is taken as never received.
 */
export function decodeQueue(
  keys: QueueKeys,
  hashes: QueueHashes,
): { messages: PositionedMessage[]; deduplication: DeduplicationEntry[]; nextSequenceNumber?: bigint } {
  const messages: PositionedMessage[] = [];
  for (const [messageId, text] of hashes.messages) {
    const record = new RecordReader(keys.messages, messageId, text);
    const sentMs = record.number("sentMs");
    const deliveryText = hashes.deliveries.get(messageId);
    const delivery =
      deliveryText === undefined ? undefined : new RecordReader(keys.deliveries, messageId, deliveryText);
    const body = record.string("body");
    const sequenceNumber = record.optionalDecimal("sequenceNumber");
    messages.push({
      position: record.number("position"),
      message: {
        messageId,
        body,
        attributes: record.attributes("attributes"),
        md5OfBody: md5OfBody(body),
        sentMs,
        availableAtMs: delivery?.number("availableAtMs") ?? sentMs,
        receiveCount: delivery?.number("receiveCount") ?? 0,
        firstReceivedMs: delivery?.optionalNumber("firstReceivedMs"),
        arrival: record.oneOf("arrival", ARRIVALS),
        ...record.optionalStrings("sourceArn", "messageGroupId", "messageDeduplicationId"),
        ...(sequenceNumber !== undefined && { sequenceNumber }),
      },
    });
  }
  const deduplication = [...hashes.deduplication].map(([id, text]): DeduplicationEntry => {
    const record = new RecordReader(keys.deduplication, id, text);
    const sequenceNumber = record.optionalDecimal("sequenceNumber");
    return {
      id,
      sentMs: record.number("sentMs"),
      first: { messageId: record.string("messageId"), ...(sequenceNumber !== undefined && { sequenceNumber }) },
    };
  });
  if (hashes.sequence !== null && !DECIMAL.test(hashes.sequence)) {
    throw new Error(`${keys.sequence} is not a decimal number: ${JSON.stringify(hashes.sequence)}`);
  }
  return {
    messages: messages.sort((a, b) => a.position - b.position),
    deduplication,
    ...(hashes.sequence !== null && { nextSequenceNumber: BigInt(hashes.sequence) }),
  };
}

// Reads the fields of one JSON record, throwing an Error that names the key, the field and the problem.
class RecordReader {
  private readonly record: Json;

  constructor(
    private readonly key: string,
    private readonly field: string,
    text: string,
  ) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw this.problem("is not JSON");
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw this.problem("is not a JSON object");
    this.record = parsed as Json;
  }

  number(name: string): number {
    const value = this.record[name];
    if (typeof value !== "number" || !Number.isFinite(value)) throw this.problem(`has no number ${name}`);
    return value;
  }

  optionalNumber(name: string): number | undefined {
    return this.record[name] === undefined ? undefined : this.number(name);
  }

  string(name: string): string {
    const value = this.record[name];
    if (typeof value !== "string") throw this.problem(`has no string ${name}`);
    return value;
  }

  /** The named fields that are present, each a string. */
  optionalStrings<Name extends string>(...names: Name[]): Partial<Record<Name, string>> {
    const found: Partial<Record<Name, string>> = {};
    for (const name of names) if (this.record[name] !== undefined) found[name] = this.string(name);
    return found;
  }

  optionalDecimal(name: string): string | undefined {
    if (this.record[name] === undefined) return undefined;
    const value = this.string(name);
    if (!DECIMAL.test(value)) throw this.problem(`has ${name} ${JSON.stringify(value)}, not a decimal number`);
    return value;
  }

  oneOf<Value extends string>(name: string, allowed: readonly Value[]): Value {
    const value = this.string(name);
    if (!allowed.includes(value as Value)) {
      throw this.problem(`has ${name} ${JSON.stringify(value)}; allowed: ${allowed.join(", ")}`);
    }
    return value as Value;
  }

  attributes(name: string): StoredMessage["attributes"] {
    try {
      return attributesFromJson(this.record[name]);
    } catch (error) {
      throw this.problem(`has unreadable ${name}: ${(error as Error).message}`);
    }
  }

  private problem(what: string): Error {
    return new Error(`${this.key} field ${this.field} ${what}`);
  }
}
