// The protocol between TypeScript and the Lua scripts, declared once: the task record
// (./record.ts) and each operation's arguments and reply (./operations.ts). `Queue` encodes every
// call through `scriptArgs` and decodes every reply through `readReply`, by name: no method counts a
// position, a stride or an offset of its own. At run time they read the declaration's names as
// `npm run generate` wrote them into shared/scripts.generated.ts (PROTOCOL), so the bundles carry
// the names and not the rest of the declaration (bounds, notes). `npm run generate` derives the scripts' record
// patterns and argument prologues (lua/lib/protocol.lua) and docs/design.md's scripts table from the
// same tables, and test/shared/protocol.test.ts fails when either drifts.
import { PROTOCOL } from "../scripts.generated.js";
import type { OPERATIONS, OperationName } from "./operations.js";

export type { Arg, Operation, OperationName } from "./operations.js";

type Named<S> = S extends `${infer N} ${string}` ? N : S;
type ArgNames<N extends OperationName> = (typeof OPERATIONS)[N]["args"][number]["name"];

/** The fixed arguments of `name`, by their names. */
export type FixedArgs<N extends OperationName> = Record<ArgNames<N>, string>;

/** The ARGV of a call of `name`: its fixed arguments in their declared order, then `items`. */
export function scriptArgs<N extends OperationName>(
  name: N,
  fixed: FixedArgs<N>,
  items: readonly string[] = [],
): string[] {
  const values = fixed as Record<string, string>;
  return [...(PROTOCOL[name].args as readonly string[]).map((arg) => values[arg]), ...items];
}

type ItemFieldNames<N extends OperationName> = (typeof OPERATIONS)[N] extends {
  items: { fields: infer F; more?: infer M };
}
  ?
      | Named<F extends readonly string[] ? F[number] : never>
      | (M extends { fields: infer G } ? (G extends readonly string[] ? G[number] : never) : never)
  : never;

/**
 * One item of a call of `name`: its fields in their declared order, then, with `more`, the fields
 * it has besides unless its `when` field is one of `except` (settle: an ack has no retryAtMs and
 * error). The one place the library lays out an item (lua/lib/protocol.lua reads it back).
 */
export function itemArgs<N extends OperationName>(
  name: N,
  values: Partial<Record<ItemFieldNames<N>, string>>,
): string[] {
  const declared = PROTOCOL[name] as {
    items: readonly string[];
    more?: { when: string; except: readonly string[]; fields: readonly string[] };
  };
  const given = values as Record<string, string | undefined>;
  const fields = [...declared.items];
  if (declared.more && !declared.more.except.includes(given[declared.more.when] ?? ""))
    fields.push(...declared.more.fields);
  return fields.map((field) => {
    const value = given[field];
    if (value === undefined) throw new Error(`${name}: item field ${field} missing`);
    return value;
  });
}

/** The position (0-based, in ARGV) of a fixed argument of `name`. */
export function argIndex<N extends OperationName>(name: N, arg: ArgNames<N>): number {
  return (PROTOCOL[name].args as readonly string[]).indexOf(arg);
}

type ReplyOf<N extends OperationName> = (typeof OPERATIONS)[N]["reply"];
type Values<L> = L extends readonly string[] ? Record<Named<L[number]>, unknown> : Record<never, unknown>;
type Head<N extends OperationName> = Values<ReplyOf<N> extends { head: infer H } ? H : undefined>;
type Tail<N extends OperationName> = Values<ReplyOf<N> extends { tail: infer T } ? T : undefined>;
/** One record of `name`'s reply rows: its fields by name, the values as the script sent them. */
export type ReplyRecord<N extends OperationName> = Values<ReplyOf<N> extends { fields: infer F } ? F : undefined>;

/**
 * `name`'s reply by the names its declaration gives: the head's values, the rows (at most `rows`
 * of them when the caller knows how many), then the tail's values. The values are as the script
 * sent them.
 */
export function readReply<N extends OperationName>(
  name: N,
  reply: readonly unknown[],
  rows?: number,
): Head<N> & Tail<N> & { rows: ReplyRecord<N>[] } {
  const { head, fields, tail } = PROTOCOL[name] as {
    head: readonly string[];
    fields: readonly string[];
    tail: readonly string[];
  };
  const out: Record<string, unknown> = {};
  head.forEach((field, i) => {
    out[field] = reply[i];
  });
  const found: Record<string, unknown>[] = [];
  const end = reply.length - tail.length;
  const count = fields.length === 0 ? 0 : Math.min(rows ?? Infinity, Math.floor((end - head.length) / fields.length));
  for (let row = 0, at = head.length; row < count; row++, at += fields.length) {
    const record: Record<string, unknown> = {};
    fields.forEach((field, i) => {
      record[field] = reply[at + i];
    });
    found.push(record);
  }
  const tailAt = head.length + count * fields.length;
  tail.forEach((field, i) => {
    out[field] = reply[tailAt + i];
  });
  out.rows = found;
  return out as Head<N> & Tail<N> & { rows: ReplyRecord<N>[] };
}

/** The rows of `name`'s reply (see readReply). */
export function replyRows<N extends OperationName>(
  name: N,
  reply: readonly unknown[],
  rows?: number,
): ReplyRecord<N>[] {
  return readReply(name, reply, rows).rows;
}
