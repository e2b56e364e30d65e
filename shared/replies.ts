// The shapes of the scripts' replies: per operation that answers a list of records, the values of
// one record in the order the script writes them (its header in lua/ says the same), and where
// the records start. `Queue` decodes every such reply through `replyRows`, so no method counts a
// stride or an offset of its own.

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
