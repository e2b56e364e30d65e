// The protocol is declared once (shared/protocol/): the library encodes every call and decodes
// every reply through it, and `npm run generate` writes the scripts' record patterns and argument
// prologues (lua/lib/protocol.lua) and docs/design.md's scripts table from it. Held here: each
// script's header in lua/ names the declared arguments, docs/design.md carries the table the
// declaration gives, and the declared record is what the scripts write on a real Redis.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import luaparse from "luaparse";
import { describe, expect, it } from "vitest";
import { DESIGN_PATH, LUA_DIR, luaSources } from "../../bin/generate-lua.js";
import { withScriptsTable } from "../../bin/lua-protocol.js";
import { ID_PATTERN, ID_RESERVED_END, NAME_PATTERN } from "../../shared/config.js";
import { type LaneField, parseLane } from "../../shared/protocol/groups.js";
import { readReply } from "../../shared/protocol/index.js";
import { OPERATIONS, type OperationName } from "../../shared/protocol/operations.js";
import {
  BODY_FIELDS,
  namePatterns,
  parseBodyFields,
  parseRecord,
  recordPatterns,
  STATE_FIELDS,
  stateFieldNames,
} from "../../shared/protocol/record.js";
import { SCRIPTS } from "../../shared/scripts.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const operations = Object.keys(OPERATIONS) as OperationName[];

/** A script header's arguments: the fixed names in order, and where its `ARGV[k..]` line starts. */
function headerArguments(source: string): { fixed: string[]; itemsAt?: number } {
  const fixed: string[] = [];
  let itemsAt: number | undefined;
  for (const line of source.split("\n")) {
    const one = /^-- ARGV\[(\d+)\] ([A-Za-z]+)/.exec(line);
    if (one) {
      expect(Number(one[1]), `ARGV[${one[1]}] ${one[2]} in order`).toBe(fixed.length + 1);
      fixed.push(one[2]);
    }
    const items = /^-- ARGV\[(\d+)\.\.\]/.exec(line);
    if (items) itemsAt = Number(items[1]);
  }
  return { fixed, itemsAt };
}

/**
 * The string literals of `text` (Lua) that read or write a record's fields by hand: a "|" or a
 * "),(" (a policy's separator between captures) in a literal that is not prose (prose, an error
 * message, has spaces), by line.
 */
function recordLiterals(text: string): string[] {
  const found: string[] = [];
  const visit = (node: unknown): void => {
    if (!node || typeof node !== "object") return;
    const n = node as { type?: string; raw?: string; loc?: { start: { line: number } } };
    const raw = n.raw ?? "";
    // A record's pattern: a separator, two captures side by side, or a class before a separator or
    // a length's ":" ('%d*,', '%l+,', '(%d+):').
    if (
      n.type === "StringLiteral" &&
      !raw.includes(" ") &&
      (raw.includes("|") || /\),\(/.test(raw) || /%[dlw][*+-]?\)?[,:]/.test(raw))
    ) {
      found.push(`${n.loc?.start.line}: ${n.raw}`);
    }
    for (const value of Object.values(node)) {
      if (Array.isArray(value)) value.forEach(visit);
      else if (value && typeof value === "object") visit(value);
    }
  };
  visit(luaparse.parse(text, { locations: true, luaVersion: "5.1" }));
  return found;
}

/** The lines of `text` (Lua) where ARGV is indexed (ARGV[...]; `#ARGV` is no index). */
function argvIndexes(text: string): number[] {
  const lines: number[] = [];
  const visit = (node: unknown): void => {
    if (!node || typeof node !== "object") return;
    const n = node as { type?: string; base?: { type?: string; name?: string }; loc?: { start: { line: number } } };
    if (n.type === "IndexExpression" && n.base?.type === "Identifier" && n.base.name === "ARGV") {
      lines.push(n.loc?.start.line ?? 0);
    }
    for (const value of Object.values(node)) {
      if (Array.isArray(value)) value.forEach(visit);
      else if (value && typeof value === "object") visit(value);
    }
  };
  visit(luaparse.parse(text, { locations: true, luaVersion: "5.1" }));
  return lines;
}

describe("the protocol declaration", () => {
  it("reads a record by its declaration, a remainder whole however many | it holds, and refuses what is not one", () => {
    expect(parseRecord(BODY_FIELDS, `1|1800000000000|send|g:1||{"a":"x|y"}`, "1|")).toEqual({
      enqueued: "1800000000000",
      type: "send",
      group: "g:1",
      trace: "",
      payload: `{"a":"x|y"}`,
    });
    expect(
      parseRecord(STATE_FIELDS, "L|1|7|3|1800000000500|r|4398046511105|send||c1|1800000000000,250|failed: a|b"),
    ).toMatchObject({
      letter: "L",
      gen: "7",
      flags: "r",
      group: "",
      claim: "c1",
      run: "1800000000000,250",
      error: "failed: a|b",
    });
    expect(parseRecord(STATE_FIELDS, "X|1|7|3|1|r|4|send||c1||")).toBeUndefined(); // no such state
    expect(parseRecord(STATE_FIELDS, "L|1|7|3|1|r|12345678901234567|send||c1||")).toBeUndefined(); // rank too long
    expect(parseRecord(BODY_FIELDS, "R|send|5|0|0|0|1|0|{}", "1|")).toBeUndefined(); // format v0
  });

  it("reads a body's trace when empty or a whole traceparent, and a body of the layout before the trace as one without", () => {
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    expect(parseBodyFields(`1|1800000000000|send|g:1|${traceparent}|{"a":"x|y"}`)).toEqual({
      enqueued: "1800000000000",
      type: "send",
      group: "g:1",
      trace: traceparent,
      payload: `{"a":"x|y"}`,
    });
    // The legacy layout: the payload right after the group, whatever "|" it holds.
    for (const payload of [`{"a":"x|y"}`, `"a|b"`, "12", "", `["0af7|"]`]) {
      expect(parseBodyFields(`1|1800000000000|send|g:1|${payload}`), payload).toEqual({
        enqueued: "1800000000000",
        type: "send",
        group: "g:1",
        trace: "",
        payload,
      });
    }
    // A trace of another length, or with upper-case hex, is no trace: the body reads as legacy.
    expect(parseBodyFields(`1|0|send||${traceparent.slice(1)}|{}`)?.payload).toBe(`${traceparent.slice(1)}|{}`);
    expect(parseBodyFields(`1|0|send||${traceparent.toUpperCase()}|{}`)?.trace).toBe("");
    expect(parseBodyFields("1|0||||{}")).toBeUndefined(); // no type
    expect(parseBodyFields("2|0|send|||{}")).toBeUndefined(); // another format mark
  });

  it("declares exactly the operation scripts there are", () => {
    const scripts = luaSources()
      .map(([file]) => file)
      .filter((file) => !file.startsWith("lib/"))
      .map((file) => file.replace(/\.lua$/, ""));
    expect([...operations].sort()).toEqual(scripts.sort());
    expect(Object.keys(SCRIPTS).sort()).toEqual([...operations].sort());
  });

  it.each(operations)(
    "%s: its header names the declared arguments in order, and it checks them with %s_args()",
    (name) => {
      const source = readFileSync(join(LUA_DIR, `${name}.lua`), "utf8");
      const header = headerArguments(source);
      const declared = OPERATIONS[name];
      expect(header.fixed).toEqual(declared.args.map((arg) => arg.name));
      expect(header.itemsAt, "ARGV[k..] after the fixed arguments when items follow them").toBe(
        "items" in declared ? declared.args.length + 1 : undefined,
      );
      expect(source).toContain(`${name}_args()`);
    },
  );

  it("no script or helper indexes ARGV: the fixed arguments and every item are read through the generated readers", () => {
    const sources = luaSources();
    expect(sources.length).toBeGreaterThan(20);
    const indexed = sources
      .filter(([file]) => file !== "lib/protocol.lua")
      .flatMap(([file, text]) => argvIndexes(text).map((line) => `${file}:${line}`));
    expect(indexed, "ARGV[...] outside lua/lib/protocol.lua: declare the layout in shared/protocol/").toEqual([]);
    // The generated readers are where it is indexed: the rule sees an index where there is one.
    const [, protocol] = sources.find(([file]) => file === "lib/protocol.lua") ?? ["", ""];
    expect(argvIndexes(protocol).length).toBeGreaterThan(50);
  });

  it("no script or helper reads or writes a record with a pattern or a text of its own: the records are declared in shared/protocol/", () => {
    const sources = luaSources();
    const byHand = sources
      .filter(([file]) => file !== "lib/protocol.lua")
      .flatMap(([file, text]) => recordLiterals(text).map((literal) => `${file}:${literal}`));
    expect(byHand, "a record's pattern or text outside lua/lib/protocol.lua: declare it in shared/protocol/").toEqual(
      [],
    );
    // The generated code is where they are: the rule sees a record's pattern where there is one.
    const [, protocol] = sources.find(([file]) => file === "lib/protocol.lua") ?? ["", ""];
    expect(recordLiterals(protocol).length).toBeGreaterThan(15);
    expect(recordLiterals("local x = string.match(text, '^(%d+)|(%d+)$')")).toEqual([`1: '^(%d+)|(%d+)$'`]);
    expect(recordLiterals("local x = string.match(text, '^(%d+),(%d+)$')")).toEqual([`1: '^(%d+),(%d+)$'`]);
    // A length-prefixed entry, its fields skipped (how the history's pattern was once written by hand).
    expect(recordLiterals("local P = '^%d*,%d*,%l+,(%d+):()'")).toEqual([`1: '^%d*,%d*,%l+,(%d+):()'`]);
  });

  it("docs/design.md's scripts table is the one the declaration gives (`npm run generate` writes it)", () => {
    const design = readFileSync(DESIGN_PATH, "utf8");
    expect(design).toBe(withScriptsTable(design));
    // And a row edited by hand is caught.
    const edited = design.replace("| `list` | state", "| `list` | status");
    expect(edited).not.toBe(design);
    expect(withScriptsTable(edited)).not.toBe(edited);
  });

  it("reads a reply by the declared names: head, rows, tail", () => {
    const reply = ["0", "R", "", "5", "S", "a", "1700000000000"];
    expect(readReply("enqueue", reply, 2)).toEqual({
      rows: [
        { status: "0", state: "R", other: "" },
        { status: "5", state: "S", other: "a" },
      ],
      wakeAt: "1700000000000",
    });
    expect(readReply("groups", ["", "t", "g", 1, 2, 3, "", "1700000000000"])).toEqual({
      cursor: "",
      rows: [{ type: "t", group: "g", leased: 1, ready: 2, parked: 3, held: "", parkedSince: "1700000000000" }],
    });
  });
});

describe("the declared record is what the scripts write (real Redis)", () => {
  const { redis, fresh } = queueFixture(adapters[0]);

  it("every state a task goes through, and its body, match the declared patterns", async () => {
    const queue = await fresh();
    const now = Date.now();
    await queue.enqueue([{ id: "p1", type: "t", group: "g", payload: { a: 1 } }], { now });
    const match = async (pattern: string, field: string) =>
      (await redis.eval(
        "local v = redis.call('HGET', KEYS[1], ARGV[2]) if not v then return {} end return { string.match(v, ARGV[1]) }",
        1,
        queue.keys.task,
        pattern,
        field,
      )) as unknown[];
    // A body without a trace keeps the layout before the trace field: enqueued, type, group, and
    // where the payload starts; the current layout's pattern does not take it.
    expect((await match(recordPatterns().LEGACY_BODY_PATTERN, "p1")).slice(1, 3)).toEqual(["t", "g"]);
    expect(await match(recordPatterns().BODY_PATTERN, "p1")).toEqual([]);
    const tasks = await queue.claim({ count: 1, now });
    expect(tasks.map((task) => task.id)).toEqual(["p1"]);
    // A lease: every field (the error as its position), and what the claim's and settle's fast paths read.
    const leased = await match(recordPatterns().STATE_PATTERN, "p1:s");
    expect(leased).toHaveLength(stateFieldNames().length);
    expect(leased[0]).toBe("L");
    expect(`${leased[6]}.${leased[2]}`).toBe(tasks[0].token);
    expect(await match(recordPatterns().ACK_STATE_PATTERN, "p1:s")).toHaveLength(7);
    expect(await match(recordPatterns().SLOT_STATE_PATTERN, "p1:s")).toEqual(["L", "", "t|g"]);
    expect(await match(recordPatterns().LANE_OF_STATE_PATTERN, "p1:s")).toEqual(["t", "g"]);
    await queue.ack(tasks, { now });
    expect((await match(recordPatterns().STATE_PATTERN, "p1:s"))[0]).toBe("D");
  });

  it("so do those of an id and a group with ':' and '@', and a parked member of them", async () => {
    const queue = await fresh({ typeGroups: { t: { concurrency: 1 } } });
    const now = Date.now();
    const [first, second] = ["user:42@eu", "sweep-2026-12-01T21:15:00Z"];
    await queue.enqueue(
      [first, second].map((id) => ({ id, type: "t", group: "@tenant:1" })),
      { now },
    );
    const patterns = recordPatterns();
    const body = (await redis.hget(queue.keys.task, first)) as string;
    expect(
      (await redis.eval(
        "return { string.match(ARGV[1], ARGV[2]) }",
        0,
        body,
        patterns.LEGACY_BODY_PATTERN,
      )) as unknown[],
    ).toEqual([String(now), "t", "@tenant:1", body.length - 1]); // no trace: no trace field; the payload "{}" after the position
    const [task] = await queue.claim({ count: 10, now });
    expect(task.id).toBe(first);
    const state = (await redis.hget(queue.keys.task, `${first}:s`)) as string;
    const read = async (pattern: string) =>
      (await redis.eval("return { string.match(ARGV[1], ARGV[2]) }", 0, state, pattern)) as unknown[];
    expect(await read(patterns.STATE_PATTERN)).toHaveLength(stateFieldNames().length);
    expect((await read(patterns.ACK_STATE_PATTERN))[5]).toBe("t|@tenant:1");
    expect(await read(patterns.SLOT_STATE_PATTERN)).toEqual(["L", "p", "t|@tenant:1"]); // p: its settle lets the next out
    expect(await read(patterns.LANE_OF_STATE_PATTERN)).toEqual(["t", "@tenant:1"]);
    // The second waits parked behind its group: "<type>|<group>\0<rank>\0<id>".
    const [member] = await redis.zrange(queue.keys.grouped, 0, -1);
    expect(member.split("\0")[0]).toBe("t|@tenant:1");
    const parked = (await redis.eval(
      "return { string.match(ARGV[1], ARGV[2]) }",
      0,
      member,
      namePatterns().MEMBER_PATTERN,
    )) as string[];
    expect(parked[1]).toBe(second);
  });
});

describe("names and ids: the library and the scripts take the same characters (real Redis)", () => {
  const { redis } = queueFixture(adapters[0]);
  const lua = namePatterns();
  /** Whether each text matches `pattern` in Redis's Lua (string.find). */
  const luaFinds = async (pattern: string, texts: string[]) =>
    (await redis.eval(
      "local found = {} for i = 2, #ARGV do found[i - 1] = string.find(ARGV[i], ARGV[1]) and 1 or 0 end return found",
      0,
      pattern,
      ...texts,
    )) as number[];

  it("every byte is in the id alphabet and the name alphabet alike in TypeScript and in Lua", async () => {
    const texts = Array.from({ length: 256 }, (_, byte) => `a${String.fromCharCode(byte)}b`);
    const bytes = (pattern: RegExp) => texts.map((text) => (pattern.test(text) ? 1 : 0));
    // Latin-1 text is sent as UTF-8: every byte above 127 becomes two, and neither side takes it.
    expect(await luaFinds(lua.ID_PATTERN, texts)).toEqual(bytes(ID_PATTERN));
    expect(await luaFinds(lua.NAME_PATTERN, texts)).toEqual(bytes(NAME_PATTERN));
    const idOnly = texts.filter((text) => ID_PATTERN.test(text) && !NAME_PATTERN.test(text));
    expect(idOnly).toEqual(["a:b", "a@b"]);
    for (const separator of ["|", ",", "\0", "#", "{", "}", " ", "\n"])
      expect(ID_PATTERN.test(`a${separator}b`), JSON.stringify(separator)).toBe(false);
  });

  it("an id's reserved ending is the same in TypeScript and in Lua", async () => {
    const texts = ["a:s", "a:x", "a:z", "a:S", "a:1", "a:", "a:ss", "a:s1", "user:42", "@:s", "s", "a@s"];
    expect(await luaFinds(lua.ID_RESERVED_END, texts)).toEqual(
      texts.map((text) => (ID_RESERVED_END.test(text) ? 1 : 0)),
    );
    expect(texts.filter((text) => ID_RESERVED_END.test(text))).toEqual(["a:s", "a:x", "a:z", "@:s"]);
  });
});

describe("a group record: what the scripts read is what its declaration reads (real Redis)", () => {
  const { redis, fresh } = queueFixture(adapters[0]);

  it("the groups view and the check read short, long and listed records as parseLane does, and refuse the same malformed ones", async () => {
    // parseLane splits on "|"; the digit fields must hold digits (a count) or digits and "," (last).
    const digits: readonly LaneField[] = ["ready", "parked", "window", "count"];
    const expected = (text: string) => {
      const fields = parseLane(text);
      if (!fields || !/^[\d,]*$/.test(fields.last) || digits.some((name) => !/^\d+$/.test(fields[name])))
        return undefined;
      return fields;
    };
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const alphabet = ["0", "1", "9", "|", "|", ",", "a", "x", "\0"];
    const texts = [
      "1|2|a",
      "1||",
      "0|5,7|a,b|3|0|0",
      "1|2|a|3|4|5|0000000000000001\0t1,0000000000000002\0t2",
      "1|2|a|3|4|5|",
      "1|2|a|3|4|5|x|y",
      "1|2|a|3|4",
      "1|2|a|3|4|5x",
      "|2|a",
      ...Array.from({ length: 2000 }, () =>
        Array.from({ length: Math.floor(random() * 16) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(
          "",
        ),
      ),
    ];
    // Each text the record of group g<i> of type t, read by the scripts that read records
    // (lua/lib/lanes.lua lane_fields): the groups view and the check.
    const queue = await fresh();
    await redis.hset(queue.keys.groups, Object.fromEntries(texts.map((text, i) => [`t|g${i}`, text])));
    const rows = new Map<string, { ready: number; parked: number }>();
    let cursor: string | undefined = "0";
    while (cursor !== undefined) {
      const page = await queue.admin.groups({ cursor, count: 1000 });
      for (const row of page.groups) rows.set(row.group, { ready: row.ready, parked: row.parked });
      cursor = page.next;
    }
    const unreadable = (await queue.admin.checkAll({ now: Date.now() }))
      .filter((problem) => problem.code === "group_record")
      .map((problem) => problem.subject);
    const readable = texts.map(expected);
    expect(readable.filter(Boolean).length).toBeGreaterThan(20); // the random texts hold long forms too
    expect([...rows.keys()].sort()).toEqual(texts.flatMap((_, i) => (readable[i] ? [`g${i}`] : [])).sort());
    for (const [i, fields] of readable.entries()) {
      if (fields)
        expect(rows.get(`g${i}`), JSON.stringify(texts[i])).toEqual({
          ready: Number(fields.ready),
          parked: Number(fields.parked),
        });
    }
    expect(unreadable.sort()).toEqual(texts.flatMap((_, i) => (readable[i] ? [] : [`t|g${i}`])).sort());
  });
});
