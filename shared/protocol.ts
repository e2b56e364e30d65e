// The protocol between TypeScript and the Lua scripts, declared once: per operation its fixed
// arguments (ARGV, by name, in order) and the kind of items that follow them, and for the replies
// made of records the fields of one record. `Queue` encodes every call through `scriptArgs` and
// decodes every reply of records through `replyRows`, so no method counts a position, a stride
// or an offset of its own; test/shared/protocol.test.ts holds each script's header in lua/ and
// docs/design.md's scripts table to the same names.

/**
 * Per operation: its fixed arguments, by name, in order (ARGV[1], ARGV[2], ...), and what follows
 * them, when anything does (`items`: the words its header uses, e.g. "ids").
 */
export const ARGS = {
  cancel: { fixed: ["now"], items: "ids" },
  check: { fixed: ["now", "cursor", "count", "repair"] },
  claim: { fixed: ["now", "count", "maxLeaseMs", "claimId", "repeat", "promoteLimit", "types"] },
  configure: { fixed: ["revision", "now"], items: "field, value pairs" },
  delete: { fixed: ["now", "state"], items: "ids" },
  drop: { fixed: ["confirm", "name"] },
  enqueue: { fixed: ["now", "callId"], items: "per task, 4 each" },
  extend: { fixed: ["now"], items: "per item, 3 each" },
  groups: { fixed: ["cursor", "count"] },
  handoff: { fixed: ["now", "horizonMs", "cutOff", "callId"] },
  history: { fixed: ["now", "minutes"] },
  inspect: { fixed: ["id"] },
  list: { fixed: ["state", "offset", "limit"] },
  pause: { fixed: ["now", "action", "type", "callId"] },
  promote: { fixed: ["now", "limit"] },
  reclaim: { fixed: ["now", "limit"] },
  release: { fixed: ["now"], items: "per item, 2 each" },
  repair: { fixed: ["now"], items: "ids" },
  requeue: { fixed: ["now"], items: "ids" },
  settle: { fixed: ["now"], items: "per item" },
  stats: { fixed: ["now"] },
  tick: { fixed: ["now", "limit", "wakeHorizonMs", "callId"] },
  trim: { fixed: ["now", "limit", "doneRetentionMs", "failedRetentionMs"] },
} as const satisfies Record<string, { fixed: readonly string[]; items?: string }>;

export type OperationName = keyof typeof ARGS;

/** The fixed arguments of `name`, by their names. */
export type FixedArgs<N extends OperationName> = Record<(typeof ARGS)[N]["fixed"][number], string>;

/** The ARGV of a call of `name`: its fixed arguments in their declared order, then `items`. */
export function scriptArgs<N extends OperationName>(
  name: N,
  fixed: FixedArgs<N>,
  items: readonly string[] = [],
): string[] {
  const values = fixed as Record<string, string>;
  return [...ARGS[name].fixed.map((field: string) => values[field]), ...items];
}

/** The position (0-based, in ARGV) of a fixed argument of `name`. */
export function argIndex<N extends OperationName>(name: N, field: (typeof ARGS)[N]["fixed"][number]): number {
  return (ARGS[name].fixed as readonly string[]).indexOf(field);
}

/** Per operation: the fields of one record of its reply, and how many values come before the first. */
export const REPLIES = {
  /** Per task: status, state; one more value after the records: the wake-up time or "". */
  enqueue: { from: 0, fields: ["status", "state"] },
  /** Per task, in rank order (a reply of one value alone is the next due time instead). */
  claim: { from: 0, fields: ["id", "body", "attempt", "token", "deadline"] },
  settle: { from: 0, fields: ["status", "state"] },
  extend: { from: 0, fields: ["status", "deadline"] },
  /** Per lease: its id, and "R" (READY again) or "F" (FAILED). */
  reclaim: { from: 0, fields: ["id", "letter"] },
  /** After the first minute's start: per minute. */
  history: { from: 1, fields: ["done", "failed"] },
  /** After the next cursor ("0" at the end). */
  groups: { from: 1, fields: ["type", "group", "leased", "ready", "parked"] },
  list: { from: 0, fields: ["id", "score", "type", "attempts", "lastError", "group"] },
  /** After the cursor to go on from ("" when the check is complete). */
  check: { from: 1, fields: ["code", "subject", "detail", "repaired"] },
} as const satisfies Record<string, { from: number; fields: readonly string[] }>;

export type ReplyName = keyof typeof REPLIES;

/** One record of `name`'s reply: its fields by name, the values as the script sent them. */
export type ReplyRecord<N extends ReplyName> = Record<(typeof REPLIES)[N]["fields"][number], unknown>;

/**
 * The records of `name`'s reply (REPLIES), at most `limit` of them (the rest of the reply, such as
 * enqueue's wake-up time, is not a record).
 */
export function replyRows<N extends ReplyName>(name: N, reply: readonly unknown[], limit = Infinity): ReplyRecord<N>[] {
  const { from, fields } = REPLIES[name];
  const found: ReplyRecord<N>[] = [];
  for (let at = from; at + fields.length <= reply.length && found.length < limit; at += fields.length) {
    const record: Record<string, unknown> = {};
    fields.forEach((field, i) => {
      record[field] = reply[at + i];
    });
    found.push(record as ReplyRecord<N>);
  }
  return found;
}
