// Every key a leaseq script touches comes from KEYS: the rule Upstash's allow-key-locking flag
// requires (a flagged script that builds a key name is refused), and the one Redis Cluster needs.
// A static reading of lua/: each redis.call names a literal command (or, in the two helpers that
// slice variadic commands, read_many and write_many, a command every caller names literally), and
// its key is one of the queue's keys taken from KEYS (K.<name>), or a helper's parameter that every
// caller fills with one.
import { describe, expect, it } from "vitest";
import { luaSources } from "../../bin/generate-lua.js";
import { queueKeys } from "../../shared/keys.js";

// The queue's keys, by the names shared/keys.ts gives them (lua/lib/arguments.lua reads them by position).
const KEY_NAMES = Object.keys(queueKeys("q"));
const K_FIELD = new RegExp(`^K\\.(${KEY_NAMES.join("|")})$`);
/** Parameters and loop variables that hold a key; each is checked against its callers below. */
const KEY_VARIABLES = new Set(["set_key", "set", "key", "K[name]", "K[SET_OF_LETTER[letter]]"]);

/** Lua code without its comments (no string in lua/ contains "--"). */
function code(text: string): string {
  return text
    .split("\n")
    .map((line) => line.replace(/--.*$/, ""))
    .join("\n");
}

/** Every Lua source by its path under lua/: the helpers of lua/lib/ and the operation scripts. */
const sources = new Map(luaSources().map(([file, text]) => [file, code(text)]));

/** The first argument expressions of every call of `callee` (text up to the next top-level comma). */
function firstArguments(source: string, callee: RegExp, skip = 0): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(callee)) {
    let depth = 0;
    let argument = "";
    let index = 0;
    for (const char of source.slice((match.index ?? 0) + match[0].length)) {
      if ("([{".includes(char)) depth++;
      if (")]}".includes(char)) {
        if (depth === 0) break;
        depth--;
      }
      if (char === "," && depth === 0) {
        if (index === skip) break;
        index++;
        argument = "";
        continue;
      }
      argument += char;
    }
    found.push(argument.trim());
  }
  return found;
}

describe("the keys of the Lua scripts", () => {
  it("reads KEYS only to name the queue's keys (and to drop them all)", () => {
    const uses = [...sources].flatMap(([file, source]) =>
      source
        .split("\n")
        .filter((line) => /\bKEYS\b/.test(line))
        .map((line) => `${file}: ${line.trim()}`),
    );
    expect(uses).toEqual([
      "lib/arguments.lua: local K = keys_of(KEYS)",
      "drop.lua: for i = 2, #KEYS do rest[#rest + 1] = KEYS[i] end",
      "drop.lua: return write_many('UNLINK', KEYS[1], rest)",
    ]);
  });

  it("runs only literal commands, each on a key from KEYS", () => {
    const problems: string[] = [];
    for (const [file, source] of sources) {
      for (const match of source.matchAll(
        /(?<!function )(redis\.p?call|read_many|write_many)\(\s*([^,)]+)\s*(?:,\s*([^,)]*))?/g,
      )) {
        const [, callee, command, key] = match;
        // The helpers pass their callers' command and key on (their callers are checked here too).
        if (callee === "redis.call" && command === "command" && key.trim() === "key" && file === "lib/variadic.lua")
          continue;
        if (!/^'[A-Z_]+'$/.test(command)) problems.push(`${file}: command ${command} is not a literal`);
        else if (command === "'UNLINK'" && file === "drop.lua" && key.trim() === "KEYS[1]") continue;
        // The store's clock (lib/config.lua's store_time): a command on no key at all.
        else if (command === "'TIME'" && key === undefined && file === "lib/config.lua") continue;
        else if (!K_FIELD.test(key.trim()) && !KEY_VARIABLES.has(key.trim()))
          problems.push(`${file}: ${command} on ${key.trim()}`);
      }
    }
    expect(problems).toEqual([]);
    // The scripts do run commands, so the reading above found them.
    expect([...sources.values()].join("\n").match(/redis\.call\(/g)?.length).toBeGreaterThan(40);
  });

  it("fills every key parameter with a key from KEYS", () => {
    const problems: string[] = [];
    const check = (file: string, where: string, expression: string) => {
      // K[name] and K[SET_OF_LETTER[letter]] index the queue's keys by a name from a list checked below.
      if (
        expression !== "nil" &&
        !K_FIELD.test(expression) &&
        expression !== "K[name]" &&
        expression !== "K[SET_OF_LETTER[letter]]"
      )
        problems.push(`${file}: ${where} gets ${expression}`);
    };
    for (const [file, source] of sources) {
      // trim_before(set_key, ...), zadd/zrem(writes, key, ...) and quarantine(writes, id, from, ...):
      // their key parameters reach redis.call through apply()'s `for key, ... in pairs(writes.*)`.
      // (Definitions are skipped: `function f(` is not a call.)
      for (const key of firstArguments(source, /(?<!function )\btrim_before\(/g)) check(file, "trim_before", key);
      for (const key of firstArguments(source, /(?<!function )(?<![.\w])zadd\(/g, 1)) check(file, "zadd", key);
      for (const key of firstArguments(source, /(?<!function )(?<![.\w])zrem\(/g, 1)) {
        // quarantine() passes its own `from` on; delete.lua picks from its table of sets (checked below).
        if (!(key === "from" && file.startsWith("lib/")) && key !== "key" && key !== "sets[letter]")
          check(file, "zrem", key);
      }
      // The lists of sets a loop's `key` or `K[name]` runs over.
      for (const match of source.matchAll(/local (?:TASK_SETS|CHECK_SETS|SET_OF_LETTER) = \{([^}]*)\}/g)) {
        for (const item of match[1].split(",")) {
          const value = item.includes("=") ? item.split("=")[1].trim() : item.trim();
          if (value.startsWith("K.")) check(file, "a list of sets", value);
          else if (!KEY_NAMES.includes(value.replace(/'/g, "")))
            problems.push(`${file}: a list of sets names ${value}`);
        }
      }
      for (const match of source.matchAll(/writes\.(?:adds|removes)\[([^\]]+)\]/g)) {
        if (match[1] !== "key") check(file, "writes", match[1]);
      }
      // Loops whose variable `key` is passed on: over a literal list of K fields only.
      for (const match of source.matchAll(/for _, key in ipairs\(\{([^}]*)\}\)/g)) {
        for (const item of match[1].split(",")) check(file, "a key loop", item.trim());
      }
      // list.lua's and delete.lua's tables of sets; queue_stats' K[name] over literal names.
      for (const match of source.matchAll(/local sets = \{([^}]*)\}/g)) {
        for (const item of match[1].split(",")) check(file, "list's sets", item.split("=")[1].trim());
      }
      for (const match of source.matchAll(/for _, name in ipairs\(\{([^}]*)\}\)/g)) {
        for (const item of match[1].split(",")) {
          const name = item.trim().replace(/'/g, "");
          if (!KEY_NAMES.includes(name)) problems.push(`${file}: K[name] over "${name}"`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
