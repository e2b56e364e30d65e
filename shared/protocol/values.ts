// The small records besides the task's and the group's, declared once: the config's hold, the
// schedules hash's counts and retirement, flow control's values and argument, and the lane name.
// `npm run generate` derives the pattern each script reads one with (lua/lib/protocol.lua), and
// shared/flow.ts writes the flow argument through flowLine; test/shared/protocol.test.ts fails when
// a script reads such a record with a pattern of its own.
import { type Field, type Read, recordPattern } from "./record.js";

type Value = {
  /** Where the record lives and what it is. */
  meaning: string;
  fields: Record<string, Field>;
  /** The fields each read takes (the others are skipped); all by default. */
  takes?: readonly string[];
  /** The last field may be missing, with its "|" (a dedupe's value has no window start). */
  lastOptional?: boolean;
  /** The pattern reads only the fields, not to the record's end. */
  open?: boolean;
  /** A remainder last field must hold at least one character. */
  restFilled?: boolean;
  /** One entry of a ","-separated list: the pattern is not anchored, and the last field ends at ",". */
  listItem?: boolean;
  /** Lua writes it: `npm run generate` gives the scripts `<name>_line(...)`, its fields in order. */
  written?: boolean;
  /** The writer's name when not `<name>_line`. */
  writer?: string;
  /** Between the fields: "|" unless given. */
  separator?: string;
  /**
   * The last field (a remainder) is written with its length in bytes first, then ":": entries of
   * such values follow one another with nothing between them, and the pattern reads the length and
   * where the text starts (the other fields skipped), so a reader steps from one entry to the next.
   */
  lengthPrefixed?: boolean;
};

const digits = (meaning: string): Field => ({ kind: "digits", meaning });

/** The flow modes' letters: d dedupe, b debounce, t throttle, s singleton. */
export const FLOW_MODE_LETTERS = "dbts";

export const VALUES = {
  RUN: {
    meaning: "a state's run field (STATE_FIELDS.run): when its attempt's claim leased it, and since when it was READY",
    written: true,
    fields: {
      started: digits("leased at (ms)"),
      readySince: digits("READY since (ms): its wait is started minus this"),
    },
    separator: ",",
  },
  HISTORY_ENTRY: {
    meaning:
      "one attempt of a task's history `<id>:h` (its entries one after another, oldest first): its number, start, wait, end, outcome and error",
    written: true,
    fields: {
      attempt: digits("the attempt's number"),
      started: { kind: "digits", meaning: "when its claim leased it (ms); empty when not recorded" },
      waited: { kind: "digits", meaning: "how long it had waited READY (ms); empty when not recorded" },
      ended: digits("when it ended (ms)"),
      outcome: { kind: "flags", meaning: "retried, failed, expired or edited" },
      error: { kind: "remainder", meaning: "its error (or an edit's note), cut to maxErrorBytes" },
    },
    separator: ",",
    lengthPrefixed: true,
  },
  POLICY: {
    meaning: "config `p:<type>` (a type's lease policy) and `d` (the queue's default one)",
    fields: { leaseMs: digits("the lease (ms)"), maxAttempts: digits("the claims a task may have") },
    separator: ",",
  },
  HOLD: {
    meaning: "config `hold` of an ordered queue: no claim before retryAtMs while task id is READY",
    written: true,
    fields: { retryAtMs: digits("when the retry may run"), id: { kind: "remainder", meaning: "the retrying task" } },
  },
  SCHEDULE_COUNTS: {
    meaning: "schedules hash `<name>:m`: the slots a schedule made and passed over",
    written: true,
    fields: { made: digits("slots made"), passed: digits("slots passed over (overlap skip)") },
  },
  SCHEDULE_RETIRED: {
    meaning: "a retired schedule's record: when, and by which deployment",
    written: true,
    fields: { at: digits("retired at (ms)"), by: { kind: "remainder", meaning: "the deployment that retired it" } },
  },
  FLOW: {
    meaning: "enqueue's flow argument per run of tasks: mode letter (d, b, t, s) and its two numbers",
    fields: {
      mode: { kind: "flags", meaning: "d dedupe, b debounce, t throttle, s singleton" },
      a: digits("the mode's first number"),
      b: digits("the mode's second number"),
    },
  },
  FLOW_RUN: {
    meaning:
      'one run of enqueue\'s flow argument (runs joined by ","): how many tasks in a row have the flow, then "-" (none) or a FLOW',
    fields: {
      count: digits("the tasks of the run"),
      flow: { kind: "remainder", meaning: '"-", or the FLOW of every task of the run' },
    },
    separator: ":",
    restFilled: true,
  },
  FLOW_HELD: {
    meaning: "a dedupe or debounce key's value (`!d:`, `!b:`): the task holding it, then its window",
    written: true,
    fields: {
      id: { kind: "id list", meaning: "the task holding the key" },
      first: digits("a dedupe's window end; a debounce's window start"),
      ends: { kind: "digits", maxDigits: 15, meaning: "a debounce's window end" },
    },
    lastOptional: true,
  },
  REPLACED: {
    meaning: "`!r:<id>`: a task a debounce or singleton replaced, by which task, until when",
    written: true,
    fields: {
      replacer: { kind: "id list", meaning: "the task that replaced it" },
      ends: digits("remembered until (ms)"),
    },
    takes: ["replacer"],
    open: true,
  },
  WAKE_ENTRY: {
    meaning:
      'one wake-up of config `wake` (its entries joined by ","): when, and the call that arranged it (a room mark after it)',
    fields: {
      at: digits("when the wake-up is due (ms)"),
      call: { kind: "remainder", meaning: "the call id that arranged it, and the room mark" },
    },
    listItem: true,
    written: true,
  },
  CHECK_CURSOR: {
    meaning:
      "check's cursor (a step returns it, the next takes it back; config `lsweep` keeps the tick's): the phase, then where in it",
    written: true,
    fields: {
      phase: { kind: "flags", meaning: "tasks, sets, lanes or plans" },
      position: {
        kind: "remainder",
        meaning: "an HSCAN cursor, a CHECK_POSITION, or `p<offset>` in the plan set",
      },
    },
    separator: ":",
    restFilled: true,
  },
  CHECK_POSITION: {
    meaning:
      "where check is within a phase: a set's number and an offset in it, or an HSCAN cursor and the records of its page read",
    written: true,
    fields: { at: digits("a set's number, or an HSCAN cursor"), offset: digits("how far in") },
    separator: ":",
  },
  LANE_NAME: {
    meaning: "a lane's name, `<type>|<group>`",
    fields: {
      type: { kind: "id list", meaning: "the task type" },
      group: { kind: "remainder", meaning: "the group" },
    },
    restFilled: true,
    written: true,
    writer: "lane_of",
  },
} as const satisfies Record<string, Value>;

/** The Lua pattern of each value, `<NAME>_PATTERN`. */
export const valuePatterns = (): Record<string, string> =>
  Object.fromEntries(
    Object.entries(VALUES as Record<string, Value>).map(([name, value]) => {
      const names = Object.keys(value.fields);
      const last = names[names.length - 1];
      const remainder = value.fields[last].kind === "remainder";
      const through = remainder || value.lastOptional || value.open ? names[names.length - 2] : last;
      const reads: Record<string, Read> = Object.fromEntries(
        names.map((field): [string, Read] => [
          field,
          !value.takes || value.takes.includes(field) ? "take filled" : "skip",
        ]),
      );
      if (name === "FLOW") reads.mode = { lua: `([${FLOW_MODE_LETTERS}])` };
      if (value.lengthPrefixed) {
        // Every field but the text skipped (loose: a started or waited time may be empty), then the
        // text's length and where the text starts.
        const skipped = names.slice(0, -1).map((field) => (value.fields[field].kind === "flags" ? "%l+" : "%d*"));
        return [`${name}_PATTERN`, `^${skipped.join(value.separator ?? "|")}${value.separator ?? "|"}(%d+):()`];
      }
      const separator = value.separator ?? "|";
      const pattern = recordPattern(value.fields, {
        reads,
        through,
        end: value.open ? "|" : remainder ? `${separator}()` : "$",
        separator: value.separator,
      });
      // What recordPattern cannot say: the rest of the record as the last capture, an optional last
      // field, a read that stops before the record's end.
      if (value.listItem) return [`${name}_PATTERN`, pattern.replace(/^\^/, "").replace(/\|\(\)$/, "|?([^,]*)")];
      if (remainder) return [`${name}_PATTERN`, pattern.replace(/\(\)$/, value.restFilled ? "(.+)$" : "(.*)$")];
      if (value.lastOptional) return [`${name}_PATTERN`, pattern.replace(/\|\(\)$|\$$/, "|?(%d*)$")];
      if (value.open) return [`${name}_PATTERN`, pattern.replace(/\|$/, "")];
      return [`${name}_PATTERN`, pattern];
    }),
  );

/** The values Lua writes, with their fields in order: `<name>_line(...)` in lua/lib/protocol.lua. */
export const writtenValues = (): Array<{
  name: string;
  meaning: string;
  fields: string[];
  lastOptional: boolean;
  separator: string;
  lengthPrefixed: boolean;
}> =>
  Object.entries(VALUES as Record<string, Value>)
    .filter(([, value]) => value.written)
    .map(([name, value]) => ({
      name: value.writer ?? `${name.toLowerCase()}_line`,
      meaning: value.meaning,
      fields: Object.keys(value.fields),
      lastOptional: value.lastOptional === true,
      separator: value.separator ?? "|",
      lengthPrefixed: value.lengthPrefixed === true,
    }));

/**
 * One entry of a history (HISTORY_ENTRY) as JavaScript reads it from the start of a text: its fields
 * before the error, each captured, then the error's length in bytes (the error follows the match).
 */
export const historyEntryRegExp = (): RegExp => {
  const fields = Object.values(VALUES.HISTORY_ENTRY.fields as Record<string, Field>).slice(0, -1);
  const captured = fields.map((field) => (field.kind === "flags" ? "([a-z]+)" : "(\\d*)"));
  return new RegExp(`^${captured.join(VALUES.HISTORY_ENTRY.separator)}${VALUES.HISTORY_ENTRY.separator}(\\d+):`);
};

/** A lease policy's text, as config p:<type> and d hold it. */
export function policyLine(leaseMs: number, maxAttempts: number): string {
  return [leaseMs, maxAttempts].join(VALUES.POLICY.separator);
}

/** The flow argument's text for one run of tasks. */
export function flowLine(mode: string, a: number, b: number): string {
  return [mode, a, b].join("|");
}

/** One run of enqueue's flow argument: `count` tasks in a row with `flow` (a flowLine, or "-"). */
export function flowRunLine(count: number, flow: string): string {
  return [count, flow].join(VALUES.FLOW_RUN.separator);
}
