import { sqsErrors } from "./errors.js";

/** A parsed JSON request body. */
export type Input = Record<string, unknown>;

/** A required string member; missing answers MissingParameter, as SQS does. */
export function requireString(input: Input, name: string): string {
  const value = input[name];
  if (value === undefined || value === null || value === "") throw sqsErrors.missingParameter(name);
  if (typeof value !== "string") throw sqsErrors.invalidValue(name, JSON.stringify(value), "Must be a string.");
  return value;
}

/** An optional string member. */
export function optionalString(input: Input, name: string): string | undefined {
  return input[name] === undefined || input[name] === null ? undefined : requireString(input, name);
}

/** An optional integer member within [min, max]. */
export function optionalInteger(input: Input, name: string, min: number, max: number): number | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw sqsErrors.invalidValue(name, JSON.stringify(value), `Must be between ${min} and ${max}, if provided.`);
  }
  return value;
}

/** An optional list of strings. */
export function optionalStrings(input: Input, name: string): string[] {
  const value = input[name];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== "string")) {
    throw sqsErrors.invalidValue(name, JSON.stringify(value), "Must be a list of strings.");
  }
  return value as string[];
}

const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * The Entries of a batch request, checked as SQS checks them before running any: at least one, at
 * most 10, valid and distinct ids.
 */
export function batchEntries(input: Input, entryShape: string): Input[] {
  const entries = input.Entries;
  if (entries === undefined || entries === null || (Array.isArray(entries) && entries.length === 0)) {
    throw sqsErrors.emptyBatch(entryShape);
  }
  if (!Array.isArray(entries) || entries.some((entry) => typeof entry !== "object" || entry === null)) {
    throw sqsErrors.invalidValue("Entries", JSON.stringify(entries), `Must be a list of ${entryShape}.`);
  }
  if (entries.length > 10) throw sqsErrors.tooManyEntries(entries.length);
  const ids = new Set<string>();
  for (const entry of entries as Input[]) {
    const id = entry.Id;
    if (typeof id !== "string" || !BATCH_ENTRY_ID.test(id)) throw sqsErrors.invalidBatchEntryId();
    if (ids.has(id)) throw sqsErrors.idsNotDistinct(id);
    ids.add(id);
  }
  return entries as Input[];
}
