// A task's record, declared once (docs/storage.md): the state field `<id>:s` and the body field
// `<id>` of the task hash. `npm run generate` derives from these tables the Lua patterns every
// script reads a record with, the bounds its parsers check and the function that writes a state
// (lua/lib/protocol.lua); shared/records.ts builds and parses a body with the same declaration.

import { ID_CHARACTERS, ID_RESERVED_END, ID_SYMBOLS, NAME_CHARACTERS, NAME_SYMBOLS } from "../config.js";

/** The state letters (the first field of a state record), and what each means. */
export const STATE_LETTERS = {
  R: "ready",
  S: "scheduled",
  L: "leased",
  D: "done",
  F: "failed",
  W: "ready, but parked in the grouped set (behind its group's head, or set aside while its type may not run)",
} as const;

/** The flags a state may carry (its `flags` field: lower-case letters). */
export const STATE_FLAGS = {
  s: "returned by a reclaim: the next claim hands it out alone",
  h: "a retry of an ordered group, SCHEDULED, that keeps its group's slot meanwhile; or a task of an ordered group with onFailure hold, FAILED, that keeps its group's slot until it is requeued or skipped",
  u: "READY, let out of its group's parked tasks to run next",
  p: "a lease whose settle lets its group's parked tasks out",
  t: "parked while its type may not run",
  r: "a lease its holder confirmed (an extend): its handler started, so a reclaim charges the attempt",
  a: "a lease of a task that stalled twice (solo): its holder runs it alone",
  k: "a schedule's slot, SCHEDULED, that is passed over when it falls due while its schedule's previous slot's task is still waiting or running (overlap: skip)",
} as const;

/**
 * How a field is written: `letter` one of STATE_LETTERS; `digits` an integer in decimal, at most
 * `maxDigits` of them (so only its length needs checking); `digit list` and `id list` such values
 * joined by ","; `flags` lower-case letters; `name` 0 or
 * more characters of a type's (NAME_CHARACTERS: A-Z a-z 0-9 _ . -); `id` 0 or more of a group's
 * (ID_CHARACTERS: `:` and `@` too); `traceparent` empty or exactly `length` characters of
 * `0-9 a-f -` (a W3C traceparent); `remainder` the rest of the record, whatever it holds.
 */
type FieldKind = "letter" | "digits" | "digit list" | "id list" | "flags" | "name" | "id" | "traceparent" | "remainder";
export type Field = { kind: FieldKind; maxDigits?: number; length?: number; initial?: string; meaning: string };

/**
 * The state record's fields, in the order they are written, "|" between them. `initial` is the
 * value of a new state (a task that was never claimed); a field without one is given.
 */
export const STATE_FIELDS = {
  letter: { kind: "letter", meaning: "the state (STATE_LETTERS)" },
  attempts: { kind: "digits", maxDigits: 4, initial: "0", meaning: "claims that counted (a release gives one back)" },
  gen: {
    kind: "digits",
    maxDigits: 16,
    initial: "0",
    meaning:
      "the lease generation: a claim sets it to the queue's lease counter, a reclaim, release or cancel adds one",
  },
  max: { kind: "digits", maxDigits: 4, initial: "0", meaning: "the type's maxAttempts, recorded at claim" },
  at: {
    kind: "digits",
    maxDigits: 15,
    meaning: "R ready since, S due at, L lease deadline, D/F finished at (ms since epoch)",
  },
  flags: { kind: "flags", initial: "", meaning: "STATE_FLAGS" },
  rank: {
    kind: "digits",
    maxDigits: 16,
    meaning: "(priority + 1000) × rankSpan + arrival sequence: an exact integer below 2^53",
  },
  type: { kind: "name", meaning: "the task's type" },
  group: { kind: "id", meaning: "the task's group, or empty" },
  claim: {
    kind: "name",
    initial: "",
    meaning: "the claim id that leased it (L only): a repeated claim returns the same batch",
  },
  run: {
    kind: "digit list",
    initial: "",
    meaning:
      'the current (L) or last attempt: "<started>,<readySince>", when its claim leased it and since when it had been READY (ms: its wait is the difference); empty before the first',
  },
  error: {
    kind: "remainder",
    initial: "",
    meaning: "the last error; in a DONE state, the handler's result when its ack kept one (JSON text)",
  },
} as const satisfies Record<string, Field>;

export type StateField = keyof typeof STATE_FIELDS;

/**
 * The state as leaseq wrote it before the `run` field: the same fields without it. Read, never
 * written (parse_state tries the current layout first): the states of a queue's tasks waiting across
 * the upgrade, and those a worker of the previous release still writes while a deploy rolls out.
 * The current layout's state has one "|" more after the claim, so a legacy state never matches
 * STATE_PATTERN, and one of the current layout read as legacy would keep its run in its error.
 */
export const LEGACY_STATE_FIELDS = (({ run: _, ...rest }) => rest)(STATE_FIELDS);
export const stateFieldNames = () => Object.keys(STATE_FIELDS) as StateField[];

/**
 * The member of the leased set at +inf that keeps it a skiplist (longer than a listpack's members
 * may be, 64 bytes; an id never starts with "#"): a listpack scans every member to find or insert
 * one. Counts and ranges of the set leave it out (docs/storage.md).
 */
export const LEASED_ANCHOR = "#anchor: keeps this sorted set a skiplist, whose inserts cost log n (not a task)";

/**
 * A member of a task set, or a field of the task hash, that is the queue's own marker and no task:
 * the scheduled set's and task hash's `#v0` guard, the leased set's anchor, the task hash's lease
 * counter `#lease`. An id never starts with "#" (shared/config.ts), so a reader of raw keys tells
 * them apart by that alone.
 */
export function isMarker(member: string): boolean {
  return member.startsWith("#");
}

/** What a quarantined task's state starts with, before the text it had. */
export const QUARANTINED_MARK = "C|";

/** The body's format mark: a body of the current format starts with it. */
export const BODY_FORMAT = "1";

/** The length of a W3C traceparent (`00-<trace id>-<span id>-<flags>`), the `trace` field when set. */
export const TRACEPARENT_LENGTH = 55;

/** The body record's fields after its format mark, in order, "|" between them. */
export const BODY_FIELDS = {
  enqueued: { kind: "digits", maxDigits: 15, meaning: "when it was enqueued (ms since epoch)" },
  type: { kind: "name", meaning: "the task's type (1 or more characters)" },
  group: { kind: "id", meaning: "the task's group, or empty" },
  trace: {
    kind: "traceparent",
    length: TRACEPARENT_LENGTH,
    meaning: "the W3C traceparent of the span that sent it, or empty (docs/lambda.md#tracing)",
  },
  payload: { kind: "remainder", meaning: "the payload's JSON, as the producer serialised it" },
} as const satisfies Record<string, Field>;

export type BodyField = keyof typeof BODY_FIELDS;

/**
 * The body as leaseq wrote it before the `trace` field: the same fields without it. Read, never
 * written: a queue keeps the bodies of the tasks waiting across an upgrade. A body tells its layout
 * by the field after its group: empty or a traceparent, then "|", in the current one; in this one
 * the payload's JSON starts there, which is never empty, never holds "|" after a run of hex digits
 * and dashes only, and never starts with "|".
 */
export const LEGACY_BODY_FIELDS = {
  enqueued: BODY_FIELDS.enqueued,
  type: BODY_FIELDS.type,
  group: BODY_FIELDS.group,
  payload: BODY_FIELDS.payload,
} as const satisfies Record<string, Field>;

/**
 * A Lua pattern class of A-Z a-z 0-9 and `symbols` (shared/config.ts): `%w` (Redis's Lua runs in
 * the C locale: ASCII letters and digits only) and each symbol, escaped when Lua would read it as
 * magic.
 */
function luaClass(symbols: string): string {
  return `[%w${symbols.replace(/[%^$().[\]*+\-?]/g, (c) => `%${c}`)}]`;
}

const NAME_CLASS = luaClass(NAME_SYMBOLS);
const ID_CLASS = luaClass(ID_SYMBOLS);

// Lua pattern classes per kind: strict (as written), loose (any length, for a record only skimmed)
// and filled (at least one character). Loose reads what the scripts themselves wrote from values
// checked strictly when they came in (the claim's lease state read by the ack, enqueue's body read by
// the claim): to the next "|", with no class to test per character. What comes from a caller (an
// argument, a body given to enqueue) and what a full parse reads (parse_state, parse_body) is read
// strictly, so a record edited by hand is still quarantined when it is next parsed.
const CLASS: Record<Exclude<FieldKind, "remainder">, { strict: string; loose: string; filled: string }> = {
  letter: { strict: `[${Object.keys(STATE_LETTERS).join("")}]`, loose: ".", filled: "." },
  digits: { strict: "%d+", loose: "%d*", filled: "%d+" },
  "digit list": { strict: "[%d,]*", loose: "[^|]*", filled: "[%d,]+" },
  "id list": { strict: "[^|]*", loose: "[^|]*", filled: "[^|]+" },
  flags: { strict: "%l*", loose: "%l*", filled: "%l+" },
  name: { strict: `${NAME_CLASS}*`, loose: "[^|]*", filled: `${NAME_CLASS}+` },
  id: { strict: `${ID_CLASS}*`, loose: "[^|]*", filled: `${ID_CLASS}+` },
  // Lua's patterns have no count: the parser checks the length (0 or the field's `length`).
  traceparent: { strict: "[%da-f%-]*", loose: "[^|]*", filled: "[%da-f%-]+" },
};

/**
 * The patterns and texts of names and ids the argument checks use (lua/lib/arguments.lua), by their
 * Lua names, from the one declaration of their characters (shared/config.ts).
 */
export const namePatterns = () => ({
  /** A task type, a claim or call id, a queue name. */
  NAME_PATTERN: `^${NAME_CLASS}+$`,
  /** A task id or a group name. */
  ID_PATTERN: `^${ID_CLASS}+$`,
  /** How an id must not end: `:` and a lower-case letter name a task's own fields (`<id>:s`). */
  ID_RESERVED_END: ID_RESERVED_END.source,
  NAME_CHARACTERS,
  ID_CHARACTERS,
  /** A member of `grouped`: its rank and its task's id, after the lane or `@<type>` and NUL. */
  MEMBER_PATTERN: `%z(%d+)%z(${ID_CLASS}+)$`,
});

/**
 * How a pattern reads one field: `take` captures it, `skip` matches it uncaptured; `loose` and
 * `filled` change the class (CLASS); a `literal` is matched as written (no magic characters), a
 * `lua` text as a pattern. `lane` captures type and group together ("<type>|<group>").
 */
export type Read =
  | "take"
  | "skip"
  | "skip loose"
  | "take loose"
  | "take filled"
  | "skip filled"
  | { literal: string }
  | { lua: string };

/**
 * A Lua pattern over a record of `fields`, from its first field through `through`: each field as
 * `reads` says (unnamed: skip), anchored at the start. `end` is what follows the last field read:
 * "|" (the next field starts), "$" (the record ends there) or "()" (the position of the next field,
 * for a `remainder` field taken apart). `prefix` is matched before the first field (the body's mark).
 * `from` starts the pattern at a later field (read with string.match's init at the position a
 * pattern ending in "()" gave, the separator before it as `prefix`: Lua 5.1 anchors "^" at init).
 */
export function recordPattern<T extends Record<string, Field>>(
  fields: T,
  spec: {
    reads: Partial<Record<keyof T, Read>>;
    through: keyof T & string;
    end: "|" | "|$" | "|()" | "$" | `${string}()`;
    prefix?: string;
    lane?: { from: keyof T; to: keyof T; read: "take" };
    separator?: string;
    from?: keyof T & string;
  },
): string {
  const names = Object.keys(fields) as Array<keyof T & string>;
  const parts: string[] = [];
  for (const name of names.slice(spec.from ? names.indexOf(spec.from) : 0, names.indexOf(spec.through) + 1)) {
    const field: Field = fields[name];
    const read = spec.reads[name] ?? "skip";
    if (field.kind === "remainder")
      throw new Error(`recordPattern: ${name} is the remainder of the record; end with "|()"`);
    let text: string;
    if (typeof read === "object")
      text = "literal" in read ? read.literal.replace(/[%^$().[\]*+\-?|]/g, (c) => `%${c}`) : read.lua;
    else {
      const [verb, variant = "strict"] = read.split(" ") as ["take" | "skip", "loose" | "filled" | "strict"];
      const cls = CLASS[field.kind][variant];
      text = verb === "take" ? `(${cls})` : cls;
    }
    if (spec.lane?.from === name) text = `(${text}`;
    if (spec.lane?.to === name) text = `${text})`;
    parts.push(text);
  }
  return `^${spec.prefix ?? ""}${parts.join(spec.separator ?? "|")}${spec.end}`;
}

/**
 * The patterns the scripts read records with, by their Lua names. Each is derived from the
 * declarations above, so a field added there moves every pattern that reads past it. (Functions,
 * not constants: only the generator and the tests need them, so the bundles do not carry them.)
 */
export const recordPatterns = () => ({
  /** Every field of a state, the error's position last. */
  STATE_PATTERN: recordPattern(STATE_FIELDS, {
    reads: Object.fromEntries(stateFieldNames().map((name) => [name, "take"])),
    through: "run",
    end: "|()",
  }),
  /** Every field of a state of the layout before `run` (LEGACY_STATE_FIELDS), the error's position last. */
  LEGACY_STATE_PATTERN: recordPattern(LEGACY_STATE_FIELDS, {
    reads: Object.fromEntries(Object.keys(LEGACY_STATE_FIELDS).map((name) => [name, "take"])),
    through: "claim",
    end: "|()",
  }),
  /**
   * A LEASED state's attempts, gen, max, flags, rank, "<type>|<group>" and where its claim starts
   * (settle's common path: the claim is skipped and the run cut out with plain finds of
   * STATE_SEPARATOR, not matched byte by byte).
   */
  ACK_STATE_PATTERN: recordPattern(STATE_FIELDS, {
    reads: {
      letter: { literal: "L" },
      attempts: "take",
      gen: "take",
      max: "take",
      flags: "take",
      rank: "take",
      // Written by the claim that leased it, from fields checked when they came in: read loose
      // (to the next "|"), as the ack copies them into the DONE state unread.
      type: "skip loose",
      group: "skip loose",
    },
    through: "group",
    end: "|()",
    lane: { from: "type", to: "group", read: "take" },
  }),
  /**
   * The state enqueue gives a task of a group, READY and never claimed (claim's common path): since
   * when it is READY, its flags ("u" when let out of parking), rank, "<type>|<group>" and type.
   */
  FRESH_GROUPED_PATTERN: recordPattern(STATE_FIELDS, {
    reads: {
      letter: { literal: "R" },
      attempts: { literal: "0" },
      gen: { literal: "0" },
      max: { literal: "0" },
      at: "take",
      flags: { lua: "(u?)" },
      rank: "take",
      type: "take filled",
      group: "skip filled",
      claim: { literal: "" },
      run: { literal: "" },
    },
    through: "run",
    end: "|$",
    lane: { from: "type", to: "group", read: "take" },
  }),
  /** A LEASED state without flags (a claim's own fresh lease, before it flags it). */
  BARE_LEASE_PATTERN: recordPattern(STATE_FIELDS, {
    reads: { letter: { literal: "L" }, flags: { literal: "" } },
    through: "flags",
    end: "|",
  }),
  /**
   * A parked state's time (when it became READY): what a let-out needs of the parked task after its
   * page (parkedsince), read without the whole state.
   */
  PARKED_AT_PATTERN: recordPattern(STATE_FIELDS, {
    reads: { letter: { literal: "W" }, attempts: "skip loose", gen: "skip loose", max: "skip loose", at: "take" },
    through: "at",
    end: "|",
  }),
  /** Any state's type and group, both non-empty (the lane of a task of a group). */
  LANE_OF_STATE_PATTERN: recordPattern(STATE_FIELDS, {
    reads: {
      letter: "skip",
      attempts: "skip loose",
      gen: "skip loose",
      max: "skip loose",
      at: "skip loose",
      rank: "skip loose",
      type: "take filled",
      group: "take filled",
    },
    through: "group",
    end: "|",
  }),
  /** The letter, flags and "<type>|<group>" of a state that may hold its group's slot. */
  SLOT_STATE_PATTERN: recordPattern(STATE_FIELDS, {
    reads: {
      letter: { lua: "([LSRWF])" },
      attempts: "skip loose",
      gen: "skip loose",
      max: "skip loose",
      at: "skip loose",
      flags: "take",
      rank: "skip loose",
      type: "skip loose",
      group: "skip loose",
    },
    through: "group",
    end: "|",
    lane: { from: "type", to: "group", read: "take" },
  }),
  /**
   * A body's enqueue time, type, group and trace, and the payload's position. The trace's length
   * is checked apart (0 or LENGTH_TRACE); a body it does not match may be of the legacy layout.
   */
  BODY_PATTERN: recordPattern(BODY_FIELDS, {
    prefix: `${BODY_FORMAT}|`,
    reads: { enqueued: "take", type: "take filled", group: "take", trace: "take" },
    through: "trace",
    end: "|()",
  }),
  /** A body of the legacy layout (LEGACY_BODY_FIELDS): enqueue time, type and group, the payload's position. */
  LEGACY_BODY_PATTERN: recordPattern(LEGACY_BODY_FIELDS, {
    prefix: `${BODY_FORMAT}|`,
    // Strict: enqueue checks the bodies callers give with it.
    reads: { enqueued: "take", type: "take filled", group: "take" },
    through: "group",
    end: "|()",
  }),
  /**
   * A body's enqueue time, type and group, of either layout (they agree up to the group): claim's
   * common path, which needs neither the trace nor the payload.
   */
  FRESH_BODY_PATTERN: recordPattern(BODY_FIELDS, {
    prefix: `${BODY_FORMAT}|`,
    // Written by enqueue, which checked type and group strictly: read to the next "|".
    reads: { enqueued: "take", type: { lua: "([^|]+)" }, group: "take loose" },
    through: "group",
    end: "|",
  }),
});

/**
 * The most digits of the records' numeric fields, by their Lua names: `DIGITS_<FIELD>` (DIGITS_RANK,
 * DIGITS_GEN, ...). A parser checks a field's length against it before it does arithmetic.
 */
export const recordBounds = (): Record<string, number> =>
  Object.fromEntries([
    ...[...Object.entries(STATE_FIELDS), ...Object.entries(BODY_FIELDS)]
      .filter(([, field]) => "maxDigits" in field)
      .map(([name, field]) => [`DIGITS_${name.toUpperCase()}`, (field as Field).maxDigits as number]),
    // A field of a fixed length when set (LENGTH_TRACE): a parser takes it when empty or that long.
    ...Object.entries(BODY_FIELDS)
      .filter(([, field]) => "length" in field)
      .map(([name, field]) => [`LENGTH_${name.toUpperCase()}`, (field as Field).length as number]),
  ]);

const KIND_TEST: Record<FieldKind, RegExp> = {
  letter: new RegExp(`^[${Object.keys(STATE_LETTERS).join("")}]$`),
  digits: /^\d+$/,
  "digit list": /^[\d,]*$/,
  "id list": /^[^|]*$/,
  flags: /^[a-z]*$/,
  name: /^[^|]*$/,
  id: /^[^|]*$/,
  traceparent: /^[\da-f-]*$/,
  remainder: /^/,
};

/**
 * A record's fields by name, read by its declaration (`fields` in order, "|" between them, after
 * `prefix`): each checked against its kind, a `remainder` taking the rest of the text as it is (it
 * is never split, however long). Undefined when the text is not such a record. The scripts read the
 * same records with the patterns generated from the same declaration.
 */
export function parseRecord<T extends Record<string, Field>>(
  fields: T,
  text: string,
  prefix = "",
): Record<keyof T & string, string> | undefined {
  if (!text.startsWith(prefix)) return undefined;
  const parsed: Record<string, string> = {};
  let at = prefix.length;
  for (const [name, field] of Object.entries(fields)) {
    if (field.kind === "remainder") {
      parsed[name] = text.slice(at);
      at = text.length + 1;
      continue;
    }
    const end = text.indexOf("|", at);
    const value = end < 0 ? text.slice(at) : text.slice(at, end);
    if (
      !KIND_TEST[field.kind].test(value) ||
      (field.maxDigits !== undefined && value.length > field.maxDigits) ||
      (field.length !== undefined && value.length !== 0 && value.length !== field.length)
    ) {
      return undefined;
    }
    if (end < 0 && name !== Object.keys(fields).at(-1)) return undefined;
    parsed[name] = value;
    at = end < 0 ? text.length + 1 : end + 1;
  }
  return parsed as Record<keyof T & string, string>;
}

/** The body of a task as stored: the format mark, then BODY_FIELDS in order. */
export function buildBody(fields: Record<BodyField, string | number>): string {
  // Without a trace, the layout before the trace field: a worker of that layout, still running
  // while a deploy rolls out, reads it as it always did (docs/deploy.md), and it costs no byte more.
  const names = Object.keys(fields.trace === "" ? LEGACY_BODY_FIELDS : BODY_FIELDS) as BodyField[];
  return [BODY_FORMAT, ...names.map((name) => fields[name])].join("|");
}

/**
 * A body's fields, of the current layout or the legacy one (LEGACY_BODY_FIELDS: its `trace` then
 * empty), read as the scripts read it (lua/lib/records.lua parse_body: a type is never empty);
 * undefined when it is neither.
 */
export function parseBodyFields(text: string): Record<BodyField, string> | undefined {
  const prefix = `${BODY_FORMAT}|`;
  const fields = parseRecord(BODY_FIELDS, text, prefix);
  if (fields && fields.type !== "") return fields;
  const legacy = parseRecord(LEGACY_BODY_FIELDS, text, prefix);
  return legacy && legacy.type !== "" ? { ...legacy, trace: "" } : undefined;
}
