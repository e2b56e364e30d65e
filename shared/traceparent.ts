// A W3C traceparent as leaseq stores it (docs/lambda.md#tracing): the format and its check, apart
// from shared/tracing.ts and shared/tracing-spans.ts, which both use them (no import circle).
import { TRACEPARENT_LENGTH } from "./protocol/record.js";

/** A W3C traceparent, version 00: trace id, span id, flags. */
export const TRACEPARENT = /^00-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/**
 * Whether `value` is a traceparent leaseq stores: version 00, lower-case hex, neither id all zeros
 * (what the intake takes from a message; what a body's `trace` holds when set).
 */
export function isTraceparent(value: unknown): value is string {
  return (
    typeof value === "string" &&
    value.length === TRACEPARENT_LENGTH &&
    TRACEPARENT.test(value) &&
    !value.startsWith("00-00000000000000000000000000000000-") &&
    !value.includes("-0000000000000000-")
  );
}
