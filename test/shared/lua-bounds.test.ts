// Two rules every script keeps, read off the sources and the compiled scripts (docs/design.md
// "Scripts"): no variadic command takes an unbounded list (Redis's Lua refuses to unpack about
// 8,000 values, so a script given a large but allowed input would fail, possibly half-way), and
// no script reads a global it does not mean (a helper used before its declaration compiles as a
// global, and fails only when that path runs).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import luaparse from "luaparse";
import { describe, expect, it } from "vitest";
import { LUA_DIR, luaSources } from "../../bin/generate-lua.js";
import { LIMITS } from "../../shared/config.js";
import { SCRIPTS } from "../../shared/scripts.js";

/** The top-level arguments of a call's argument text (commas inside parentheses do not split). */
function splitArguments(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of text) {
    if (char === "(") depth++;
    if (char === ")") depth--;
    if (char === "," && depth === 0) {
      parts.push(current.trim());
      current = "";
    } else current += char;
  }
  parts.push(current.trim());
  return parts;
}

/** Each `unpack(` of lua/, with its file, the function it is in and its arguments. */
function unpacks(): Array<{ file: string; fn: string; args: string }> {
  const found: Array<{ file: string; fn: string; args: string }> = [];
  for (const [file, text] of luaSources()) {
    let fn = "(top level)";
    for (const line of text.split("\n")) {
      const code = line.replace(/--.*$/, "");
      const declared = /^local function ([A-Za-z_]\w*)/.exec(code);
      if (declared) fn = declared[1];
      for (const match of code.matchAll(/\bunpack\(([^()]*(?:\([^()]*\)[^()]*)*)\)/g)) {
        found.push({ file, fn, args: match[1] });
      }
    }
  }
  return found;
}

describe("variadic commands in lua/", () => {
  it("unpack only in read_many and write_many, and only slices whose bound is in sight", () => {
    const all = unpacks();
    expect(all.length, "the reading above finds the unpacks").toBeGreaterThan(0);
    for (const { file, fn, args } of all) {
      expect(`${file}: ${fn}`).toMatch(/^lib\/variadic\.lua: (read_many|write_many)$/);
      // unpack(list, first, last): never the whole of a list whose length the script cannot see.
      expect(splitArguments(args), `${file}: unpack(${args})`).toHaveLength(3);
    }
  });

  it("slices at most LIMITS.variadicMax values, well below what Redis's Lua can unpack", () => {
    const lib = readFileSync(join(LUA_DIR, "lib", "variadic.lua"), "utf8");
    expect(lib).toMatch(/if n <= VARIADIC_MAX then return redis\.call\(command, key, unpack\(names, 1, n\)\) end/);
    expect(lib).toMatch(/local size = VARIADIC_MAX - VARIADIC_MAX % \(stride or 1\)/);
    expect(LIMITS.variadicMax).toBeLessThanOrEqual(1000);
  });
});

describe("the compiled scripts", () => {
  // What a script may read as a global: Redis's Lua environment.
  const ENVIRONMENT = new Set([
    "redis",
    "KEYS",
    "ARGV",
    "string",
    "table",
    "math",
    "tonumber",
    "tostring",
    "type",
    "pairs",
    "ipairs",
    "unpack",
    "error",
    "pcall",
    "select",
  ]);

  /** The names a chunk reads or writes as globals: identifiers luaparse's scope finds no local for. */
  function globalsOf(source: string): { read: Set<string>; written: Set<string> } {
    const read = new Set<string>();
    const written = new Set<string>();
    const visit = (node: unknown, assigned: boolean): void => {
      if (Array.isArray(node)) {
        for (const child of node) visit(child, assigned);
        return;
      }
      if (node === null || typeof node !== "object") return;
      const record = node as Record<string, unknown> & { type?: string; isLocal?: boolean; name?: string };
      if (record.type === "Identifier" && record.isLocal === false && record.name) {
        (assigned ? written : read).add(record.name);
        return;
      }
      if (record.type === "AssignmentStatement") {
        visit(record.variables, true);
        visit(record.init, false);
        return;
      }
      for (const [key, value] of Object.entries(record)) {
        // A member's name (t.name) and a table key (name = ...) are not variables.
        if (
          (record.type === "MemberExpression" && key === "identifier") ||
          (record.type === "TableKeyString" && key === "key")
        )
          continue;
        visit(value, false);
      }
    };
    visit(luaparse.parse(source, { scope: true, luaVersion: "5.1" }), false);
    return { read, written };
  }

  it.each(Object.values(SCRIPTS).map((script) => [script.name, script] as const))(
    "%s parses as Lua 5.1 and reads no global but Redis's",
    (_name, script) => {
      const { read, written } = globalsOf(script.body);
      expect(read.size, "the reading finds the globals read").toBeGreaterThan(0);
      expect([...read].filter((global) => !ENVIRONMENT.has(global)).sort()).toEqual([]);
      expect([...written], "no script writes a global").toEqual([]);
    },
  );

  it("finds a helper used before its declaration (it reads as a global)", () => {
    const { read } = globalsOf("local function a() return b() end\nlocal function b() return 1 end\nreturn a()");
    expect([...read]).toEqual(["b"]);
  });
});
