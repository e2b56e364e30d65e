import { createHash } from "node:crypto";
import type { SQSMessageAttributes } from "aws-lambda";
import { sqsErrors } from "./errors.js";
import { ACCOUNT_ID } from "./ids.js";

/** One message attribute, with the field names of @aws-sdk/client-sqs's `MessageAttributeValue`. */
export interface SqsAttributeValue {
  /** `String`, `Number` or `Binary`, optionally with a custom label: `Number.float`. */
  DataType: string;
  StringValue?: string;
  BinaryValue?: Uint8Array;
}

/** Message attributes by name. */
export type SqsAttributes = Record<string, SqsAttributeValue>;

/** The default MaximumMessageSize: body plus attribute names, types and values, in bytes. */
export const MAX_MESSAGE_BYTES = 262_144;

/** DelaySeconds bounds, per message and per queue. */
export const MAX_DELAY_SECONDS = 900;

// The characters SQS accepts in bodies and string values (its error message lists the same set).
const INVALID_CHARACTER = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
const ATTRIBUTE_NAME = /^[A-Za-z0-9_-](?:[A-Za-z0-9_.-]{0,254}[A-Za-z0-9_-])?$/;
const DATA_TYPE = /^(String|Number|Binary)(\.[A-Za-z0-9_.-]+)?$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** The hex MD5 of a body, as MD5OfBody / MD5OfMessageBody (the SDK checks it on send and receive). */
export function md5OfBody(body: string): string {
  return createHash("md5").update(body, "utf8").digest("hex");
}

/**
 * The MD5OfMessageAttributes of SQS: attributes sorted by name, each encoded as the name, the data
 * type (both 4-byte big-endian length plus UTF-8 bytes), one transport byte (1 String/Number, 2
 * Binary), then the value (length plus bytes). Undefined without attributes, as SQS omits it.
 */
export function md5OfAttributes(attributes: SqsAttributes): string | undefined {
  const names = Object.keys(attributes).sort();
  if (names.length === 0) return undefined;
  const hash = createHash("md5");
  const lengthPrefixed = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length).update(bytes);
  };
  for (const name of names) {
    const value = attributes[name];
    lengthPrefixed(Buffer.from(name, "utf8"));
    lengthPrefixed(Buffer.from(value.DataType, "utf8"));
    const binary = value.DataType.startsWith("Binary");
    hash.update(Buffer.from([binary ? 2 : 1]));
    lengthPrefixed(binary ? Buffer.from(value.BinaryValue ?? []) : Buffer.from(value.StringValue ?? "", "utf8"));
  }
  return hash.digest("hex");
}

/** Bytes a message counts against MaximumMessageSize: body, and every attribute's name, type and value. */
export function messageBytes(body: string, attributes: SqsAttributes): number {
  let bytes = Buffer.byteLength(body, "utf8");
  for (const [name, value] of Object.entries(attributes)) {
    bytes += Buffer.byteLength(name, "utf8") + Buffer.byteLength(value.DataType, "utf8");
    bytes += value.BinaryValue ? value.BinaryValue.length : Buffer.byteLength(value.StringValue ?? "", "utf8");
  }
  return bytes;
}

/** Checks a message as SendMessage does; throws the SqsError SQS answers. */
export function validateMessage(
  body: string,
  attributes: SqsAttributes,
  delaySeconds: number,
  maxBytes = MAX_MESSAGE_BYTES,
): void {
  if (body.length === 0) throw sqsErrors.missingParameter("MessageBody");
  if (INVALID_CHARACTER.test(body)) {
    throw sqsErrors.invalidMessageContents(
      "Invalid binary character was found in the message body, the set of allowed characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF",
    );
  }
  validateAttributes(attributes);
  const bytes = messageBytes(body, attributes);
  if (bytes > maxBytes) {
    throw sqsErrors.invalidParameterValue(
      `One or more parameters are invalid. Reason: Message must be shorter than ${maxBytes} bytes.`,
    );
  }
  if (!Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > MAX_DELAY_SECONDS) {
    throw sqsErrors.invalidValue("DelaySeconds", delaySeconds, "DelaySeconds must be >= 0 and <= 900.");
  }
}

function validateAttributes(attributes: SqsAttributes): void {
  const names = Object.keys(attributes);
  if (names.length > 10) {
    throw sqsErrors.invalidParameterValue(
      `Number of message attributes [${names.length}] exceeds the allowed maximum [10].`,
    );
  }
  for (const name of names) {
    const { DataType: type, StringValue: text, BinaryValue: binary } = attributes[name];
    const invalid = (reason: string) => sqsErrors.invalidParameterValue(`Message (user) attribute '${name}' ${reason}`);
    if (!ATTRIBUTE_NAME.test(name) || name.includes("..") || /^(aws|amazon)\./i.test(name)) {
      throw invalid("has an invalid name: use letters, digits, - _ and single inner periods, not AWS. or Amazon.");
    }
    if (typeof type !== "string" || type.length > 256 || !DATA_TYPE.test(type)) {
      throw invalid(`has an invalid data type ${String(type)}: String, Number or Binary, optionally .label.`);
    }
    if (type.startsWith("Binary")) {
      if (!binary || binary.length === 0) throw invalid("must contain a non-empty BinaryValue for type Binary.");
      continue;
    }
    if (typeof text !== "string" || text.length === 0) {
      throw invalid(`must contain a non-empty StringValue for type ${type}.`);
    }
    if (INVALID_CHARACTER.test(text)) throw invalid("contains characters SQS does not allow.");
    if (type.startsWith("Number") && (!NUMBER.test(text) || text.replace(/\D/g, "").length > 38)) {
      throw invalid(`has the value ${text}, which is not a valid Number.`);
    }
  }
}

/** Attributes a ReceiveMessage asked for: `All` or `.*`, exact names, and `prefix.*` wildcards. */
export function selectAttributes(attributes: SqsAttributes, requested: readonly string[]): SqsAttributes {
  const wanted = (name: string) =>
    requested.some(
      (pattern) =>
        pattern === "All" ||
        pattern === ".*" ||
        pattern === name ||
        (pattern.endsWith(".*") && name.startsWith(pattern.slice(0, -1))),
    );
  return Object.fromEntries(Object.entries(attributes).filter(([name]) => wanted(name)));
}

/** Attributes as the JSON protocol carries them: BinaryValue as base64. */
export function attributesToJson(attributes: SqsAttributes): Record<string, Record<string, string>> {
  const json: Record<string, Record<string, string>> = {};
  for (const [name, value] of Object.entries(attributes)) {
    json[name] = { DataType: value.DataType };
    if (value.StringValue !== undefined) json[name].StringValue = value.StringValue;
    if (value.BinaryValue !== undefined) json[name].BinaryValue = Buffer.from(value.BinaryValue).toString("base64");
  }
  return json;
}

/** Attributes from a JSON request; shape errors answer InvalidParameterValue, as SQS's validation does. */
export function attributesFromJson(json: unknown): SqsAttributes {
  if (json === undefined || json === null) return {};
  if (typeof json !== "object" || Array.isArray(json)) {
    throw sqsErrors.invalidParameterValue("MessageAttributes must be a map of name to MessageAttributeValue.");
  }
  const attributes: SqsAttributes = {};
  for (const [name, raw] of Object.entries(json as Record<string, Record<string, unknown>>)) {
    const value: SqsAttributeValue = { DataType: raw?.DataType as string };
    if (typeof raw?.StringValue === "string") value.StringValue = raw.StringValue;
    if (typeof raw?.BinaryValue === "string") value.BinaryValue = Buffer.from(raw.BinaryValue, "base64");
    attributes[name] = value;
  }
  return attributes;
}

/** Attributes in the shape Lambda puts them into an SQS event record. */
export function attributesToLambda(attributes: SqsAttributes): SQSMessageAttributes {
  const lambda: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(attributes)) {
    lambda[name] = {
      ...(value.StringValue !== undefined && { stringValue: value.StringValue }),
      ...(value.BinaryValue !== undefined && { binaryValue: Buffer.from(value.BinaryValue).toString("base64") }),
      stringListValues: [],
      binaryListValues: [],
      dataType: value.DataType,
    };
  }
  return lambda;
}

/**
 * The system attributes SQS gives a received message (ReceiveMessage `Attributes`, a Lambda
 * record's `attributes`); a FIFO queue's messages also carry their group, deduplication id and
 * sequence number.
 */
export function systemAttributes(message: {
  sentMs: number;
  receiveCount: number;
  firstReceivedMs: number | undefined;
  sourceArn?: string;
  messageGroupId?: string;
  messageDeduplicationId?: string;
  sequenceNumber?: string;
}): Record<string, string> {
  return {
    SenderId: ACCOUNT_ID,
    SentTimestamp: String(message.sentMs),
    ApproximateReceiveCount: String(message.receiveCount),
    ApproximateFirstReceiveTimestamp: String(message.firstReceivedMs ?? message.sentMs),
    ...(message.sourceArn !== undefined && { DeadLetterQueueSourceArn: message.sourceArn }),
    ...(message.messageGroupId !== undefined && { MessageGroupId: message.messageGroupId }),
    ...(message.messageDeduplicationId !== undefined && { MessageDeduplicationId: message.messageDeduplicationId }),
    ...(message.sequenceNumber !== undefined && { SequenceNumber: message.sequenceNumber }),
  };
}
