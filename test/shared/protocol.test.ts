// The protocol is declared once (shared/protocol.ts) and the library encodes every call through it;
// the two other places that spell it out are held to it here: each script's header in lua/ (its
// ARGV lines) and docs/design.md's scripts table (its ARGV column).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LUA_DIR, luaSources } from "../../bin/generate-lua.js";
import { ARGS, type OperationName } from "../../shared/protocol.js";
import { SCRIPTS } from "../../shared/scripts.js";

const operations = Object.keys(ARGS) as OperationName[];

/** A script header's arguments: the fixed names in order, and the text of its `ARGV[k..]` line. */
function headerArguments(source: string): { fixed: string[]; itemsAt?: number; items?: string } {
  const fixed: string[] = [];
  let itemsAt: number | undefined;
  let items: string | undefined;
  for (const line of source.split("\n")) {
    const one = /^-- ARGV\[(\d+)\] ([A-Za-z]+)/.exec(line);
    if (one) {
      expect(Number(one[1]), `ARGV[${one[1]}] ${one[2]} in order`).toBe(fixed.length + 1);
      fixed.push(one[2]);
    }
    const rest = /^-- ARGV\[(\d+)\.\.\] (.*)$/.exec(line);
    if (rest) [itemsAt, items] = [Number(rest[1]), rest[2]];
  }
  return { fixed, itemsAt, items };
}

/** The names of the ARGV column of a row of docs/design.md's scripts table, before its items. */
function documentedArguments(cell: string): string[] {
  let text = cell;
  // Drop parenthesised notes, innermost first.
  for (let previous = ""; previous !== text; ) [previous, text] = [text, text.replace(/\([^()]*\)/g, "")];
  return text
    .split(/,? then /)[0]
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
}

describe("the protocol declaration", () => {
  it("declares exactly the operation scripts there are", () => {
    const scripts = luaSources()
      .map(([file]) => file)
      .filter((file) => !file.startsWith("lib/"))
      .map((file) => file.replace(/\.lua$/, ""));
    expect([...operations].sort()).toEqual(scripts.sort());
    expect(Object.keys(SCRIPTS).sort()).toEqual([...operations].sort());
  });

  it.each(operations)("%s: its header in lua/ names the declared arguments in order", (name) => {
    const header = headerArguments(readFileSync(join(LUA_DIR, `${name}.lua`), "utf8"));
    const declared = ARGS[name] as { fixed: readonly string[]; items?: string };
    expect(header.fixed).toEqual(declared.fixed);
    if (declared.items === undefined) expect(header.items, "no items after the fixed arguments").toBeUndefined();
    else {
      expect(header.itemsAt).toBe(declared.fixed.length + 1);
      expect(header.items?.startsWith(declared.items), `ARGV[${header.itemsAt}..] ${header.items}`).toBe(true);
    }
  });

  it("docs/design.md's scripts table lists each operation with the declared arguments", () => {
    const design = readFileSync(join(LUA_DIR, "..", "docs", "design.md"), "utf8");
    const rows = new Map<string, string>();
    for (const match of design.matchAll(/^\| `([a-z]+)` \| (.*?) \| .* \|$/gm)) rows.set(match[1], match[2]);
    for (const name of operations) {
      expect(rows.has(name), `a row for ${name}`).toBe(true);
      expect(documentedArguments(rows.get(name) ?? ""), name).toEqual(ARGS[name].fixed);
    }
  });
});
