import { LIMITS } from "./config.js";
import { StoreError } from "./errors.js";
import { BODY_FIELDS, BODY_FORMAT, buildBody as bodyOf, parseRecord } from "./protocol/record.js";

/** A rank's priority: its high part (docs/design.md, "States and leases"). */
export function priorityOfRank(rank: number): number {
  return Math.floor(rank / LIMITS.rankSpan) + LIMITS.priorityMin;
}

/** The rank of the `arrival`-th task of `priority`. */
export function rankOf(priority: number, arrival: number): number {
  return (priority - LIMITS.priorityMin) * LIMITS.rankSpan + arrival;
}

/**
 * A task's body as stored (shared/protocol/record.ts): "1|<enqueuedAtMs>|<type>|<group>|<payload>".
 * The library builds it, the scripts check its prefix and store it as it came, and a claim returns
 * it whole: no script splits a payload out or copies it into a new string.
 */
export function buildBody(enqueuedAtMs: number, type: string, group: string, payload: string): string {
  return bodyOf({ enqueued: enqueuedAtMs, type, group, payload });
}

/** The parts of a body; throws StoreError when it is not one (a store answering something else). */
export function parseBody(body: string): { enqueuedAtMs: number; type: string; group: string; payload: string } {
  const fields = parseRecord(BODY_FIELDS, body, `${BODY_FORMAT}|`);
  if (!fields || fields.type === "") {
    throw new StoreError(`claim: the script returned a body that is not of format v2`, undefined);
  }
  return { enqueuedAtMs: Number(fields.enqueued), type: fields.type, group: fields.group, payload: fields.payload };
}
