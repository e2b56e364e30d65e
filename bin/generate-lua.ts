// `npm run generate`: writes shared/scripts.generated.ts, the module that carries the text of every
// lua/*.lua file, so the library needs no loader for .lua files wherever it runs (tsx, vitest, Node,
// a bundler). test/shared/scripts-generated.test.ts fails when the committed module drifts from lua/.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { LUA_CONSTANTS, SINGLETON_GROUP_PREFIX } from "../shared/config.js";
import { queueKeys } from "../shared/keys.js";
import { type Block, blocksFor, topLevelBlocks } from "./lua-prelude.js";
import { protocolLua, runtimeProtocol, withScriptsTable } from "./lua-protocol.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const LUA_DIR = join(ROOT, "lua");
/**
 * The files of lua/lib/, the helpers every script may use, in the order they are joined (a helper
 * is declared before the helpers that use it). generatedModule refuses a file of lua/lib/ missing
 * here, and one listed that is not there.
 */
export const LIB_FILES = [
  "arguments",
  "protocol",
  "variadic",
  "config",
  "records",
  "writes",
  "steps",
  "lanes",
  "rates",
  "fair-turns",
  "parking",
  "lane-tasks",
  "overlap",
  "due",
  "wake-ups",
  "maintenance",
  "flow",
  "consistency",
];

/** The shared helpers: the files of lua/lib/ in LIB_FILES order, joined. */
export function libSource(dir: string = LUA_DIR): string {
  const present = readdirSync(join(dir, "lib"))
    .filter((name) => name.endsWith(".lua"))
    .map((name) => basename(name, ".lua"))
    .sort();
  const listed = [...LIB_FILES].sort();
  if (present.join() !== listed.join()) {
    throw new Error(`lua/lib/ holds ${present.join(", ")}; LIB_FILES lists ${listed.join(", ")}: make them agree`);
  }
  // A helper file named like a script reads as that script's part: name it for what it holds.
  const scripts = new Set(readdirSync(dir).filter((name) => name.endsWith(".lua")));
  const clashing = LIB_FILES.filter((name) => scripts.has(`${name}.lua`));
  if (clashing.length > 0) {
    throw new Error(
      `lua/lib/ ${clashing.join(", ")}: named like a script of lua/; name a helper file for what it holds`,
    );
  }
  return LIB_FILES.map((name) => readFileSync(join(dir, "lib", `${name}.lua`), "utf8")).join("\n");
}

/** Every Lua source: the operation scripts of lua/ and the helpers of lua/lib/, by path under lua/. */
export function luaSources(dir: string = LUA_DIR): Array<[string, string]> {
  const scripts = readdirSync(dir)
    .filter((name) => name.endsWith(".lua"))
    .sort();
  return [
    ...LIB_FILES.map((name): [string, string] => [
      `lib/${name}.lua`,
      readFileSync(join(dir, "lib", `${name}.lua`), "utf8"),
    ]),
    ...scripts.map((name): [string, string] => [name, readFileSync(join(dir, name), "utf8")]),
  ];
}
export const GENERATED_PATH = join(ROOT, "shared", "scripts.generated.ts");
export const DESIGN_PATH = join(ROOT, "docs", "design.md");
/** lua/lib/protocol.lua: written from shared/protocol/ (bin/lua-protocol.ts) before the module. */
export const PROTOCOL_LUA_PATH = join(LUA_DIR, "lib", "protocol.lua");

// A Lua token: a quoted string, a comment (to the end of the line), a run of name or number
// characters (dots included, so `a.b` and `1.5` stay whole), spaces, or an operator.
const LUA_TOKEN =
  /(?<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(?<comment>--.*$)|(?<word>[A-Za-z_0-9.]+)|(?<space>\s+)|(?<op>[^\s])/gy;

/**
 * One line of Lua without its comment and without the spaces Lua does not need, each word of
 * `literals` replaced by its literal (a name mapped to `H.<name>` too: see helperTable).
 */
function squeezeLine(line: string, literals: ReadonlyMap<string, string>): string {
  let out = "";
  LUA_TOKEN.lastIndex = 0;
  for (let match = LUA_TOKEN.exec(line); match; match = LUA_TOKEN.exec(line)) {
    const { comment, space, word } = match.groups ?? {};
    if (comment !== undefined) break;
    if (space !== undefined) continue;
    const token = (word !== undefined && literals.get(word)) || match[0];
    const before = out.at(-1) ?? "";
    const after = token[0];
    // A space stays where two names or numbers meet, where a dot would join a number or a `..`
    // (`1 .. x`), and between two minus signs (`--` would start a comment).
    if (
      (/\w/.test(before) && /\w/.test(after)) ||
      (/[\d.]/.test(before) && after === ".") ||
      (before === "." && /\d/.test(after)) ||
      (before === "-" && after === "-")
    ) {
      out += " ";
    }
    out += token;
  }
  return out;
}

/**
 * Lua without comments, indentation, blank lines or the spaces between tokens it does not need: a
 * third of the text Redis parses and the bundles carry. The headers stay readable in lua/. With
 * `literals`, each of those names is written as its value (see literalConstants).
 */
export function compactLua(source: string, literals: ReadonlyMap<string, string> = new Map()): string {
  return source
    .split("\n")
    .map((line) => squeezeLine(line, literals))
    .filter((line) => line !== "")
    .join("\n");
}

/**
 * The helpers of lua/lib/ as fields of one table, `H`: a script's prelude declares `local H = {}`,
 * each helper `function H.name(...)` (or `H.name = ...`), and every use of a helper reads `H.name`.
 * Why: Redis runs a script's whole chunk on every call, so every helper's closure is built anew each
 * time, and Lua 5.1 finds each upvalue a new closure captures by walking the list of open upvalues;
 * with a local per helper, a claim's closures walked lists of a hundred locals (callgrind: the
 * largest single cost of a claim after the interpreter loop). With one table, each closure captures
 * `H` alone. Returns the name → `H.name` map for compactLua, and each block's text rewritten.
 */
export function helperTable(blocks: Block[]): { names: Map<string, string>; texts: string[] } {
  const names = new Map<string, string>();
  for (const block of blocks) for (const name of block.names) names.set(name, `H.${name}`);
  const texts = blocks.map((block) =>
    block.text
      .split("\n")
      .map((line) =>
        line
          .replace(/^local function ([A-Za-z_][A-Za-z0-9_]*)\(/, "function H.$1(")
          .replace(/^local ([A-Za-z_][A-Za-z0-9_]*) =/, "H.$1 ="),
      )
      .join("\n"),
  );
  return { names, texts };
}

/**
 * The names declared inside the functions of `source` (locals, parameters, loop variables) that are
 * also helpers: helperTable would rewrite them, so generation refuses them (rename the local).
 */
export function shadowedHelpers(source: string, helpers: ReadonlyMap<string, string>): string[] {
  const code = source
    .split("\n")
    .map((line) => line.replace(/--.*$/, "").replace(/'(?:[^'\\]|\\.)*'/g, "''"))
    .join("\n");
  const found = new Set<string>();
  const check = (list: string) => {
    for (const name of list.split(",").map((part) => part.trim())) if (helpers.has(name)) found.add(name);
  };
  for (const match of code.matchAll(/^[ \t]+local\s+(?:function\s+)?([\w, \t]+?)\s*(?:=|\(|$)/gm)) check(match[1]);
  for (const match of code.matchAll(/function\s*[\w.]*\s*\(([^)]*)\)/g)) check(match[1]);
  for (const match of code.matchAll(/\bfor\s+([\w, \t]+?)\s+(?:in|=)/g)) check(match[1]);
  for (const match of code.matchAll(/[{,]\s*([A-Za-z_]\w*)\s*=[^=]/g)) check(match[1]); // table constructor keys
  return [...found];
}

/** A top-level constant of lua/lib/ whose value is a literal: a quoted string or an integer. */
const LITERAL_LOCAL = /^local ([A-Z][A-Z0-9_]*) = ('(?:[^'\\]|\\.)*'|-?\d+)\s*(?:--.*)?$/;

/**
 * The names the compacted scripts get as literals: the bounds of shared/config.ts, the constants of
 * lua/lib/ whose value is a literal, and `K.<key>` as `KEYS[<its position>]`. Why: Redis runs a
 * script's whole chunk on every call, so each helper's closure is built anew each time, and Lua 5.1
 * finds each upvalue it captures by walking the list of open upvalues: with a local per constant,
 * that walk was the largest cost of a claim (callgrind). A literal is no upvalue at all.
 */
export function literalConstants(libSource: string): Map<string, string> {
  const literals = new Map<string, string>();
  const literal = (value: string) => (value.startsWith("-") ? `(${value})` : value);
  for (const [name, value] of Object.entries(LUA_CONSTANTS)) literals.set(name, literal(String(value)));
  for (const line of libSource.split("\n")) {
    const match = LITERAL_LOCAL.exec(line);
    if (match) literals.set(match[1], literal(match[2]));
  }
  for (const [index, name] of Object.keys(queueKeys("q")).entries()) literals.set(`K.${name}`, `KEYS[${index + 1}]`);
  literals.set("SINGLETON_GROUP_PREFIX", `'${SINGLETON_GROUP_PREFIX}'`);
  return literals;
}

/** A block that assigns a value to a field of H (not a function): `H.name=...`. */
function valueName(block: Block): string | undefined {
  return /^H\.([A-Za-z_]\w*)=/.exec(block.text)?.[1];
}

/**
 * The blocks holding per-call state: every value of H but a constant, which is named in capitals,
 * reads neither KEYS nor ARGV, calls nothing (a library's code runs at load with no globals but
 * `redis`) and is not an empty table (a table to fill is state). A script run by
 * EVAL runs every block on every call; a function library (shared/scripts.ts) runs these once per
 * call and the rest once per load, so a value one call leaves must not reach the next.
 */
export function perCallBlocks(blocks: Block[]): number[] {
  return blocks.flatMap((block, index) => {
    const name = valueName(block);
    if (name === undefined) return [];
    const constant =
      /^[A-Z][A-Z0-9_]*$/.test(name) &&
      !/\b(KEYS|ARGV)\b/.test(block.text) &&
      !/\(/.test(block.text.replace(/'(?:[^'\\]|\\.)*'/g, "''")) &&
      !/^H\.\w+=\{\}$/.test(block.text);
    return constant ? [] : [index];
  });
}

/**
 * What keeps a library's helpers from carrying state from one call to the next: code assigns only
 * the per-call fields of H, and never writes into a constant (`H.NAME[k]=`, `H.NAME.k=`,
 * `table.insert(H.NAME, …)`). Throws naming the file and the field.
 */
export function checkLibraryState(blocks: Block[], perCall: number[], scripts: Array<[string, string]>): void {
  const state = new Set(perCall.map((index) => valueName(blocks[index])));
  const problems: string[] = [];
  const scan = (where: string, code: string) => {
    for (const match of code.matchAll(/(?<![.\w])H\.([A-Za-z_]\w*)=(?!=)/g)) {
      if (!state.has(match[1])) problems.push(`${where} assigns H.${match[1]}, which is no per-call field`);
    }
    for (const match of code.matchAll(/(?<![.\w])H\.([A-Z][A-Z0-9_]*)(?:\[[^\]]*\]|\.\w+)+=(?!=)/g)) {
      if (!state.has(match[1])) problems.push(`${where} writes into the constant H.${match[1]}`);
    }
    for (const match of code.matchAll(/table\.\w+\(H\.([A-Z][A-Z0-9_]*)\b/g)) {
      if (!state.has(match[1])) problems.push(`${where} changes the constant H.${match[1]}`);
    }
  };
  for (const block of blocks) {
    // A value block's own first assignment is its declaration.
    const code = valueName(block) === undefined ? block.text : block.text.replace(/^H\.\w+=/, "");
    scan(`the block of ${block.names.join(", ")}`, code);
  }
  for (const [file, text] of scripts) scan(`lua/${file}`, text);
  if (problems.length > 0) {
    throw new Error(
      `${problems.join("; ")}: a function library keeps H between calls, so state lives in a field declared at the top of lua/lib/ with a lower-case name (or \`{}\`), which runs again every call`,
    );
  }
}

/** The helpers of lua/lib/ (of `helpers`) that a script's own code names, comments aside, sorted. */
export function helpersNamed(source: string, helpers: ReadonlySet<string>): string[] {
  const code = source
    .split("\n")
    .map((line) => line.replace(/--.*$/, "").replace(/'(?:[^'\\]|\\.)*'/g, "''"))
    .join("\n");
  const found = new Set<string>();
  for (const match of code.matchAll(/(?<![.\w])([A-Za-z_][A-Za-z0-9_]*)/g))
    if (helpers.has(match[1])) found.add(match[1]);
  return [...found].sort();
}

/** What a script's header says it uses: the names of its `-- Uses:` lines (undefined: none). */
export function declaredUses(source: string): string[] | undefined {
  const lines = source.split("\n").filter((line) => line.startsWith("-- Uses:"));
  if (lines.length === 0) return undefined;
  return lines
    .flatMap((line) => line.slice("-- Uses:".length).split(","))
    .map((name) => name.trim())
    .filter((name) => name !== "")
    .sort();
}

/**
 * The text of the generated module: the shared blocks (the top-level declarations of lua/lib/,
 * compacted, constants written as literals) once, and per operation script the blocks it uses
 * (bin/lua-prelude.ts) and its own text. shared/scripts.ts joins them into each EVAL body, so the
 * bundles carry the helpers once. The bounds of shared/config.ts reach every script as literals, so
 * Lua and TypeScript check the same numbers.
 */
export function generatedModule(dir: string = LUA_DIR): string {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith(".lua"))
    .sort();
  const lib = libSource(dir);
  const literals = literalConstants(lib);
  // A constant written as a literal needs no declaration; the other helpers go into the table H.
  const declared = topLevelBlocks(lib).filter((block) => !block.names.every((name) => literals.has(name)));
  const { names, texts } = helperTable(declared);
  const rewrite = new Map([...literals, ...names]);
  const sources = new Map(files.map((file) => [file, readFileSync(join(dir, file), "utf8")]));
  for (const [file, source] of [["lua/lib/", lib], ...sources] as Array<[string, string]>) {
    const shadowed = shadowedHelpers(source, names);
    if (shadowed.length > 0) {
      throw new Error(
        `${file}: ${shadowed.join(", ")} ${shadowed.length === 1 ? "is a helper" : "are helpers"} of lua/lib/: rename the local`,
      );
    }
  }
  // Each script's header names the helpers of lua/lib/ it calls (`-- Uses:`), so a reader sees its
  // dependencies where it is: held to what its code names.
  const helperNames = new Set(declared.flatMap((block) => block.names));
  for (const [file, source] of sources) {
    const named = helpersNamed(source, helperNames);
    const said = declaredUses(source) ?? [];
    const missing = named.filter((name) => !said.includes(name));
    const extra = said.filter((name) => !named.includes(name));
    if (missing.length > 0 || extra.length > 0) {
      throw new Error(
        `lua/${file}: its "-- Uses:" lines must name the helpers of lua/lib/ it calls` +
          `${missing.length > 0 ? `; missing: ${missing.join(", ")}` : ""}${extra.length > 0 ? `; not used: ${extra.join(", ")}` : ""}`,
      );
    }
  }
  // What each script uses is read from the compacted text (`K.task` is `KEYS[1]` there: no use of K).
  const blocks = [
    { names: ["H"], text: "local H = {}" },
    ...declared.map((block, index) => ({ names: block.names, text: compactLua(texts[index], rewrite) })),
  ];
  const compacted = [...sources].map(([file, source]): [string, string] => [file, compactLua(source, rewrite)]);
  const perCall = perCallBlocks(blocks);
  checkLibraryState(blocks, perCall, compacted);
  const entries = compacted.map(([file, own]) => {
    const uses = [...new Set([0, ...blocksFor(blocks, own)])].sort((a, b) => a - b);
    return `  ${basename(file, ".lua")}: { uses: ${JSON.stringify(uses)}, text: ${JSON.stringify(own)} },`;
  });
  return [
    "// Generated by `npm run generate` from lua/*.lua: the top-level blocks of lua/lib/*.lua, then each",
    "// script with the blocks it uses (comments and spaces dropped; the constants of shared/config.ts",
    "// and of lua/lib/ written as literals; the helpers as fields of one table, H: bin/generate-lua.ts).",
    "// Do not edit: change the .lua files and run `npm run generate`;",
    "// test/shared/scripts-generated.test.ts checks they agree.",
    "export const LUA_BLOCKS: readonly string[] = [",
    ...blocks.map((block) => `  ${JSON.stringify(block.text)},`),
    "];",
    "",
    "// The blocks a function library runs again at the start of every call (shared/scripts.ts): the",
    "// helpers' per-call state, and what is read from KEYS. The other blocks run once, when it loads.",
    `export const LUA_PER_CALL: readonly number[] = ${JSON.stringify(perCall)};`,
    "",
    "export const LUA_SCRIPTS = {",
    ...entries,
    "} as const;",
    "",
    "// Each operation's argument names and reply field names (shared/protocol/operations.ts, names only:",
    "// what the library encodes and decodes by; the rest of the declaration stays out of the bundles).",
    `export const PROTOCOL = ${JSON.stringify(runtimeProtocol())} as const;`,
    "",
  ].join("\n");
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(PROTOCOL_LUA_PATH, protocolLua());
  writeFileSync(GENERATED_PATH, generatedModule());
  writeFileSync(DESIGN_PATH, withScriptsTable(readFileSync(DESIGN_PATH, "utf8")));
  for (const path of [PROTOCOL_LUA_PATH, GENERATED_PATH, DESIGN_PATH])
    console.log(`wrote ${path.slice(ROOT.length + 1)}`);
}
