// The Lua side of shared/protocol/: `npm run generate` writes lua/lib/protocol.lua from the record's
// declaration (its patterns, digit bounds and the functions that write a state) and the operations'
// (per operation, `<name>_args()`: its fixed arguments checked and returned in their declared
// order). The scripts read records and arguments only through them, so a field or an argument is
// declared in one place. test/shared/scripts-generated.test.ts fails when the file drifts.
import { LUA_CONSTANTS } from "../shared/config.js";
import {
  groupPatterns,
  LANE_FIELDS,
  LANE_HEAD_THROUGH,
  LANE_TAIL_WHEN,
  UNGROUPED_LANE,
} from "../shared/protocol/groups.js";
import { type Arg, fieldName, OPERATIONS, type Operation, type OperationName } from "../shared/protocol/operations.js";
import {
  BODY_FIELDS,
  BODY_FORMAT,
  LEASED_ANCHOR,
  LEGACY_BODY_FIELDS,
  namePatterns,
  QUARANTINED_MARK,
  recordBounds,
  recordPatterns,
  STATE_FIELDS,
  type StateField,
} from "../shared/protocol/record.js";
import { VALUES, valuePatterns, writtenValues } from "../shared/protocol/values.js";

/** A Lua string literal of `text` (single-quoted). */
function quoted(text: string): string {
  return `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** A Lua parameter name for a field: `type` and `error` are Lua's own. */
function luaName(field: string): string {
  return field === "type" ? "task_type" : field === "error" ? "error_text" : field;
}

/** The Lua expression that checks `arg`, ARGV[`at`], and gives its value(s). */
function argCheck(arg: Arg, at: number): string {
  const value = `ARGV[${at}]`;
  switch (arg.kind) {
    case "time":
      return `time_arg('${arg.name}', ${value})`;
    case "int":
      return `int_arg('${arg.name}', ${arg.default === undefined ? value : `${value} or '${arg.default}'`}, ${arg.min}, ${arg.max})`;
    case "flag":
      return `int_arg('${arg.name}', ${value}, 0, 1) == 1`;
    case "name":
      return arg.optional
        ? `name_arg('${arg.name}', ${value} or '', ${arg.max}, true)`
        : `name_arg('${arg.name}', ${value}, ${arg.max})`;
    case "id":
      return `id_arg('${arg.name}', ${value})`;
    case "callId":
      return `call_arg(${value})`;
    case "choice":
      return `choice_arg('${arg.name}', ${value} or '', ${quoted(`,${arg.values.join(",")},`)}, ${arg.optional ? "true" : "false"})`;
    case "text":
      return `${value} or ''`;
  }
}

/**
 * `<name>_args()`: the operation's fixed arguments, checked in order (the times first: each gives
 * its number and its text, so it needs a local; the others are checked where they are returned).
 */
function argsFunction(name: OperationName): string {
  const args: readonly Arg[] = OPERATIONS[name].args;
  const locals: string[] = [];
  const returned = args.flatMap((arg, i) => {
    if (arg.kind !== "time") return [argCheck(arg, i + 1)];
    locals.push(`  local t${i + 1}, t${i + 1}_text = ${argCheck(arg, i + 1)}`);
    return [`t${i + 1}`, `t${i + 1}_text`];
  });
  return [
    `-- ${name}: ${args.map((arg, i) => `ARGV[${i + 1}] ${arg.name}`).join(", ")}`,
    `local function ${name}_args()`,
    ...locals,
    `  return ${returned.join(", ")}`,
    "end",
  ].join("\n");
}

/**
 * The readers of an operation's items (shared/protocol/operations.ts, `Items`): how many there are,
 * checked, and each one's fields in their declared order. The only code that indexes ARGV beyond
 * the fixed arguments.
 */
function itemsFunctions(name: OperationName): string {
  const { args, items } = OPERATIONS[name] as Operation;
  if (!items) return "";
  const first = args.length + 1;
  const size = items.fields.length;
  const names = items.fields.map(fieldName);
  const values = (from: string, count: number, offset = 0) =>
    Array.from({ length: count }, (_, k) => (k + offset === 0 ? `ARGV[${from}]` : `ARGV[${from} + ${k + offset}]`));
  const lines = [`-- ${name}: per ${items.per} from ARGV[${first}]: ${names.join(", ")}`];
  if (items.more) {
    const more = items.more;
    const when = names.indexOf(more.when);
    const all = [...names, ...more.fields];
    lines.push(
      `-- (${more.fields.join(", ")} besides, unless ${more.when} is ${more.except.join(" or ")})`,
      `local ${name.toUpperCase()}_ITEMS_AT = ${first}`,
      `-- The ${items.per} from ARGV[at]: ${all.join(", ")} (nil where it has none), and where the next begins.`,
      `local function ${name}_item(at)`,
      `  local ${more.when} = ARGV[at + ${when}]`,
      `  if ${more.when} == nil or ${more.except.map((value) => `${more.when} == ${quoted(value)}`).join(" or ")} then`,
      `    return ${[...values("at", size), ...more.fields.map(() => "nil"), `at + ${size}`].join(", ")}`,
      "  end",
      `  return ${[...values("at", all.length), `at + ${all.length}`].join(", ")}`,
      "end",
    );
    return lines.join("\n");
  }
  // One line each: the readers of every operation have the same shape, the declaration is the source.
  const at =
    first - size === 0
      ? `${size} * i`
      : first - size > 0
        ? `${first - size} + ${size} * i`
        : `${size} * i - ${size - first}`;
  lines.push(
    `local function ${name}_items(max, min) return item_count(${first}, ${size}, max, min) end`,
    size === 1
      ? `local function ${name}_item(i) return ARGV[${first - 1} + i] end`
      : `local function ${name}_item(i) local at = ${at} return ${values("at", size).join(", ")} end`,
  );
  if (items.keys) {
    lines.push(
      `-- ${name}: with n ${items.per}s, the j-th ${fieldName(items.keys)} after them`,
      `local function ${name}_key(n, j) return ARGV[${first - 1} + ${size} * n + j] end`,
    );
  }
  return lines.join("\n");
}

const FIELDS = Object.keys(STATE_FIELDS) as StateField[];

/** state_line, state_text and new_state, from the state's fields in their declared order. */
function stateFunctions(): string {
  // state_line takes type and group as one "<type>|<group>" (the lane), as the patterns capture them.
  const params = FIELDS.filter((field) => field !== "group").map((field) =>
    field === "type" ? "lane" : luaName(field),
  );
  const given = FIELDS.filter((field) => !("initial" in STATE_FIELDS[field]));
  return [
    "-- The byte between a state's fields (a plain find of it cuts a field out without a pattern).",
    "local STATE_SEPARATOR = '|'",
    "",
    '-- A state record\'s text: its fields in their declared order, "|" between them; `lane` is type and',
    '-- group as one, "<type>|<group>" (as the patterns capture them).',
    `local function state_line(${params.join(", ")})`,
    `  return ${params.join(" .. '|' .. ")}`,
    "end",
    "",
    "-- A LEASED state without an error, its run field from its parts (RUN) in the same concatenation:",
    "-- a claim's lease of a task never claimed (no run_line string made per task).",
    `local function lease_line(${leaseParams().join(", ")})`,
    `  return 'L|' .. ${leaseParts().join(" .. '|' .. ")} .. '|'`,
    "end",
    "",
    "-- The text of a state read with parse_state (or made with new_state).",
    "local function state_text(state)",
    `  return state_line(${FIELDS.filter((field) => field !== "group")
      .map((field) => (field === "type" ? "state.type .. '|' .. state.group" : `state.${field}`))
      .join(", ")})`,
    "end",
    "",
    "-- A new state, for a task that had none (never claimed): the given fields, the others their initial value.",
    `local function new_state(${given.map(luaName).join(", ")})`,
    "  return {",
    ...FIELDS.map((field) => {
      const declared = STATE_FIELDS[field] as { initial?: string };
      return `    ${field} = ${declared.initial === undefined ? luaName(field) : quoted(declared.initial)},`;
    }),
    "  }",
    "end",
    "",
    laneLine(),
    "",
    "-- A state BARE_LEASE_PATTERN matched, with `flag` as its flags (its first empty field).",
    "local function flag_bare_lease(text, flag)",
    "  return (string.gsub(text, '||', '|' .. flag .. '|', 1))",
    "end",
    "",
    ...valueLines(),
    "-- A body record's text: the format mark, then its fields in their declared order; without a",
    "-- trace, the layout before the trace field (LEGACY_BODY_FIELDS), which workers of that layout read.",
    `local function body_line(${Object.keys(BODY_FIELDS).map(luaName).join(", ")})`,
    `  if trace == '' then return '${BODY_FORMAT}|' .. ${Object.keys(LEGACY_BODY_FIELDS).map(luaName).join(" .. '|' .. ")} end`,
    `  return '${BODY_FORMAT}|' .. ${Object.keys(BODY_FIELDS).map(luaName).join(" .. '|' .. ")}`,
    "end",
  ].join("\n");
}

/** lease_line's parameters: state_line's but the letter and the error, the run as its RUN parts. */
function leaseParams(): string[] {
  return FIELDS.filter((field) => field !== "group" && field !== "letter" && field !== "error").flatMap((field) =>
    field === "type" ? ["lane"] : field === "run" ? Object.keys(VALUES.RUN.fields).map(luaName) : [luaName(field)],
  );
}

/** lease_line's fields in order, the run's parts joined by RUN's separator. */
function leaseParts(): string[] {
  return FIELDS.filter((field) => field !== "group" && field !== "letter" && field !== "error").map((field) =>
    field === "type"
      ? "lane"
      : field === "run"
        ? Object.keys(VALUES.RUN.fields).map(luaName).join(` .. '${VALUES.RUN.separator}' .. `)
        : luaName(field),
  );
}

/**
 * lane_line: a group record's text from its fields, the head as texts and the tail as numbers,
 * printed only when the record is long (a record is written at every step that changes its lane), each number once per script (fmt_once: a batch's records share a few small counts).
 */
function laneLine(): string {
  const names = Object.keys(LANE_FIELDS).map(luaName);
  const headCount = names.indexOf(LANE_HEAD_THROUGH) + 1;
  const head = names.slice(0, headCount);
  const tail = names.slice(headCount);
  const tailKinds = Object.values(LANE_FIELDS)
    .slice(headCount)
    .map((field) => field.kind);
  return [
    "-- The byte between a group record's fields (a plain find of it tells a field holds no other).",
    "local LANE_SEPARATOR = '|'",
    "",
    `-- A group record's text: its fields in their declared order, "|" between them; the fields after`,
    `-- ${LANE_HEAD_THROUGH} (numbers: a negative count is written 0) only when ${LANE_TAIL_WHEN.join(" or ")} is above 0.`,
    `local function lane_line(${names.join(", ")})`,
    `  if ${LANE_TAIL_WHEN.map((name) => `${luaName(name)} <= 0`).join(" and ")} then return ${head.join(" .. '|' .. ")} end`,
    `  local line = ${head.join(" .. '|' .. ")} .. '|' .. ${tail
      .filter((_, i) => tailKinds[i] === "digits")
      .map((name) => `fmt_once(math.max(${name}, 0))`)
      .join(" .. '|' .. ")}`,
    ...tail
      .filter((_, i) => tailKinds[i] !== "digits")
      .map((name) => `  if ${name} ~= '' then line = line .. '|' .. ${name} end`),
    "  return line",
    "end",
  ].join("\n");
}

/** `<name>_line` per value Lua writes: its fields' texts in their declared order, its separator between them. */
function valueLines(): string[] {
  return writtenValues().flatMap(({ name, meaning, fields: declared, lastOptional, separator, lengthPrefixed }) => {
    const fields = declared.map(luaName);
    const between = ` .. '${separator}' .. `;
    const text = fields[fields.length - 1];
    // A length-prefixed last field: its length in bytes, ":", then itself.
    const all = lengthPrefixed
      ? `${fields.slice(0, -1).join(between)}${between}#${text} .. ':' .. ${text}`
      : fields.join(between);
    const last = fields[fields.length - 1];
    return [
      `-- ${meaning}.`,
      `local function ${name}(${fields.join(", ")})`,
      ...(lastOptional ? [`  if ${last} == nil then return ${fields.slice(0, -1).join(between)} end`] : []),
      `  return ${all}`,
      "end",
      "",
    ];
  });
}

/** The text of lua/lib/protocol.lua. */
export function protocolLua(): string {
  return [
    "-- Generated by `npm run generate` from shared/protocol/ (record.ts, operations.ts): do not edit;",
    "-- change the declaration and run `npm run generate` (bin/lua-protocol.ts).",
    "--",
    "-- The task record: the patterns each script reads a record with, the most digits of its numbers,",
    "-- and the functions that write a state.",
    ...Object.entries(recordPatterns()).map(([name, pattern]) => `local ${name} = ${quoted(pattern)}`),
    "-- Names (task types, claim and call ids) and ids (task ids, groups): their patterns and characters,",
    "-- and a member of the grouped set (shared/config.ts declares the characters).",
    ...Object.entries(namePatterns()).map(([name, pattern]) => `local ${name} = ${quoted(pattern)}`),
    ...Object.entries(recordBounds()).map(([name, digits]) => `local ${name} = ${digits}`),
    "-- A group's record and a type's group policy (shared/protocol/groups.ts).",
    ...Object.entries(groupPatterns()).map(([name, pattern]) => `local ${name} = ${quoted(pattern)}`),
    "-- The small records: the hold, a schedule's counts, flow control's values (shared/protocol/values.ts).",
    ...Object.entries(valuePatterns()).map(([name, pattern]) => `local ${name} = ${quoted(pattern)}`),
    `-- A body of the current format starts with "${BODY_FORMAT}"; a quarantined state with "${QUARANTINED_MARK}";`,
    "-- the tasks without a group take turns as one more lane, of this name.",
    `local QUARANTINED = ${quoted(QUARANTINED_MARK)}`,
    "-- The leased set's member at +inf that keeps it a skiplist (shared/protocol/record.ts).",
    `local LEASED_ANCHOR = ${quoted(LEASED_ANCHOR)}`,
    `local UNGROUPED = ${quoted(UNGROUPED_LANE)}`,
    `local BODY_FORMAT_BYTE = ${BODY_FORMAT.charCodeAt(0)}`,
    "",
    stateFunctions(),
    "",
    '-- A `choice` argument: one of the comma-separated `values` ("" too when `optional`).',
    "local function choice_arg(name, value, values, optional)",
    "  if value == '' and optional then return value end",
    "  if value == '' or string.find(value, ',', 1, true) or not string.find(values, ',' .. value .. ',', 1, true) then",
    "    bad(name .. ' must be ' .. (optional and '\"\" (any) or ' or '') .. 'one of ' ..",
    "      string.gsub(string.sub(values, 2, -2), ',', ', ') ..",
    "      ', got \"' .. string.sub(value, 1, 40) .. '\"')",
    "  end",
    "  return value",
    "end",
    "",
    "-- Each operation's fixed arguments, checked in their declared order (a time gives its number, then",
    "-- its text), before the script reads or writes anything.",
    ...(Object.keys(OPERATIONS) as OperationName[]).map(argsFunction),
    "",
    "-- Each operation's items, read in their declared layout (no script indexes ARGV itself).",
    ...(Object.keys(OPERATIONS) as OperationName[]).map(itemsFunctions).filter((text) => text !== ""),
    "",
  ].join("\n");
}

/** A bound as the docs show it: a number, or the value of the shared/config.ts constant it names. */
function bound(value: number | string): string {
  const n = typeof value === "number" ? value : LUA_CONSTANTS[value];
  if (n === undefined) throw new Error(`shared/protocol/operations.ts: no constant ${value} in LUA_CONSTANTS`);
  return n < 0 ? `−${-n}` : String(n);
}

/** One argument as docs/design.md's ARGV column shows it. */
function argText(arg: Arg): string {
  const notes: string[] = [];
  if (arg.kind === "int") notes.push(`${bound(arg.min)}..${bound(arg.max)}${arg.unit ? ` ${arg.unit}` : ""}`);
  if (arg.kind === "time") notes.push("ms");
  if (arg.kind === "flag") notes.push("0/1");
  if (arg.kind === "choice")
    notes.push(`${arg.optional ? '`""`, ' : ""}${arg.values.map((v) => `\`${v}\``).join("/")}`);
  if (arg.kind === "callId") notes.push('retry-safe, or `""`');
  if (arg.note) notes.push(arg.note);
  return notes.length === 0 ? arg.name : `${arg.name} (${notes.join("; ")})`;
}

/** docs/design.md's scripts table: one row per operation, from its declaration. */
export function scriptsTable(): string {
  const rows = (Object.keys(OPERATIONS) as OperationName[]).map((name) => {
    const { args, items, reply } = OPERATIONS[name] as Operation;
    const argv = [
      args.map(argText).join(", "),
      ...(items
        ? [
            `then per ${items.per}: ${items.fields.join(", ")}${
              items.more
                ? `, then ${items.more.fields.join(", ")} unless ${items.more.when} is ${items.more.except.map((v) => `\`${v}\``).join(" or ")}`
                : ""
            }${items.note ? ` (${items.note})` : ""}${items.keys ? `, then ${items.keys}` : ""}`,
          ]
        : []),
    ].join(", ");
    const parts: string[] = [];
    if (reply.head) parts.push(reply.head.join(", "));
    if (reply.fields) parts.push(`${parts.length > 0 ? "then " : ""}per ${reply.per}: ${reply.fields.join(", ")}`);
    if (reply.tail) parts.push(`then ${reply.tail.join(", ")}`);
    let returns = parts.join(", ");
    if (reply.note) returns += reply.note.startsWith("(") ? ` ${reply.note}` : `; ${reply.note}`;
    return `| \`${name}\` | ${argv} | ${returns} |`;
  });
  return ["| script | ARGV | returns |", "|---|---|---|", ...rows].join("\n");
}

export const TABLE_START =
  "<!-- the scripts table: `npm run generate` writes it from shared/protocol/operations.ts -->";
export const TABLE_END = "<!-- end of the scripts table -->";

/** `design` (docs/design.md's text) with its scripts table as the declaration gives it. */
export function withScriptsTable(design: string): string {
  const start = design.indexOf(TABLE_START);
  const end = design.indexOf(TABLE_END);
  if (start < 0 || end < start)
    throw new Error(`docs/design.md: the scripts table must sit between ${TABLE_START} and ${TABLE_END}`);
  return `${design.slice(0, start + TABLE_START.length)}\n${scriptsTable()}\n${design.slice(end)}`;
}

/**
 * The declaration's names, all the library needs at run time: per operation its argument names,
 * its items' field names (and `more`: the fields an item has besides unless `when` is one of
 * `except`), and its reply fields.
 */
export function runtimeProtocol(): Record<
  string,
  {
    args: string[];
    items: string[];
    more?: { when: string; except: string[]; fields: string[] };
    head: string[];
    fields: string[];
    tail: string[];
  }
> {
  return Object.fromEntries(
    (Object.entries(OPERATIONS) as Array<[string, Operation]>).map(([name, { args, items, reply }]) => [
      name,
      {
        args: args.map((arg) => arg.name),
        items: (items?.fields ?? []).map(fieldName),
        ...(items?.more
          ? { more: { when: items.more.when, except: [...items.more.except], fields: [...items.more.fields] } }
          : {}),
        head: (reply.head ?? []).map(fieldName),
        fields: (reply.fields ?? []).map(fieldName),
        tail: (reply.tail ?? []).map(fieldName),
      },
    ]),
  );
}
