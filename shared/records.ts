import { LIMITS } from "./config.js";
import { StoreError } from "./errors.js";
import { buildBody as bodyOf, parseBodyFields } from "./protocol/record.js";

/** A rank's priority: its high part (docs/design.md, "States and leases"). */
export function priorityOfRank(rank: number): number {
  return Math.floor(rank / LIMITS.rankSpan) + LIMITS.priorityMin;
}

/** The rank of the `arrival`-th task of `priority`. */
export function rankOf(priority: number, arrival: number): number {
  return (priority - LIMITS.priorityMin) * LIMITS.rankSpan + arrival;
}

/**
 * A task's body as stored (shared/protocol/record.ts):
 * "1|<enqueuedAtMs>|<type>|<group>|<trace>|<payload>", `trace` the W3C traceparent it was sent
 * under or "" (docs/lambda.md#tracing). The library builds it, the scripts check its prefix and
 * store it as it came, and a claim returns it whole: no script splits a payload out or copies it
 * into a new string.
 */
export function buildBody(enqueuedAtMs: number, type: string, group: string, trace: string, payload: string): string {
  return bodyOf({ enqueued: enqueuedAtMs, type, group, trace, payload });
}

/**
 * The parts of a body, of either layout (a body written before the trace field has trace "");
 * throws StoreError when it is not one (a store answering something else).
 */
export function parseBody(body: string): {
  enqueuedAtMs: number;
  type: string;
  group: string;
  trace: string;
  payload: string;
} {
  const fields = parseBodyFields(body);
  if (!fields || fields.type === "") {
    throw new StoreError(`claim: the script returned a body that is not of format v2`, undefined);
  }
  return {
    enqueuedAtMs: Number(fields.enqueued),
    type: fields.type,
    group: fields.group,
    trace: fields.trace,
    payload: fields.payload,
  };
}
