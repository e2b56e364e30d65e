// The only user of the Lua sources: shared/scripts.generated.ts carries each script of lua/ with the
// prelude it needs, as text (see bin/generate-lua.ts), so the library loads the same way under Node,
// tsx, vitest and bundlers.

import { createHash } from "node:crypto";
import { argIndex } from "./protocol/index.js";
import { LUA_BLOCKS, LUA_PER_CALL, LUA_SCRIPTS } from "./scripts.generated.js";
import { type LuaLibrary, type LuaScript, luaScript } from "./store.js";

type ScriptSource = keyof typeof LUA_SCRIPTS;

/**
 * A script's EVAL body: the shared blocks it uses, then its own text. The first block declares the
 * table of helpers, H (bin/generate-lua.ts); here it is made with room for the helpers this script
 * defines, so filling it rehashes nothing (a constructor of that many fields sizes the table).
 */
export function luaBody(name: ScriptSource): string {
  const { uses, text } = LUA_SCRIPTS[name];
  const helpers = uses.length - 1;
  const table = `local H = {${"_=0,".repeat(helpers)}}`;
  return [table, ...uses.slice(1).map((index) => LUA_BLOCKS[index]), text].join("\n");
}

/**
 * Every script as one Redis Functions library (FUNCTION LOAD, then FCALL by name): the helpers of
 * lua/lib/ are built once per load instead of once per call, so a call pays only its own work. Each
 * script's text becomes the body of its function; KEYS and ARGV are the library's locals, set at
 * the start of each call, and the blocks of per-call state (LUA_PER_CALL) run again there. The
 * library is named by the digest of its text, so releases that differ load side by side and a
 * worker of the previous release keeps calling its own. `flags` are added to every function's
 * (Upstash's `allow-key-locking`); a read-only script's function says `no-writes`.
 */
export function luaLibrary(flags: readonly string[] = []): LuaLibrary {
  const perCall = new Set(LUA_PER_CALL);
  const once = LUA_BLOCKS.slice(1).filter((_, index) => !perCall.has(index + 1));
  const state = LUA_PER_CALL.map((index) => LUA_BLOCKS[index]);
  // The library's text, its functions named after `library`: the name is the digest of the text
  // with the functions named after "" (the name cannot be in what it is the digest of).
  const text = (library: string) =>
    [
      `local H={${"_=0,".repeat(LUA_BLOCKS.length)}}`,
      "local KEYS,ARGV",
      ...once,
      "local function per_call()",
      ...state,
      "end",
      ...Object.entries(LUA_SCRIPTS).map(([script, { text }]) => {
        const all = [...(READ_ONLY.has(script) ? ["no-writes"] : []), ...flags].map((flag) => `'${flag}'`);
        return [
          `redis.register_function{function_name='${library}_${script}',flags={${all.join(",")}},callback=function(k,a)`,
          "KEYS,ARGV=k,a",
          "per_call()",
          text,
          "end}",
        ].join("\n");
      }),
    ].join("\n");
  const name = `leaseq_${createHash("sha1").update(text("")).digest("hex").slice(0, 16)}`;
  const functions = new Map(Object.keys(LUA_SCRIPTS).map((script) => [script, `${name}_${script}`]));
  return { name, code: `#!lua name=${name}\n${text(name)}`, functions };
}

/** The scripts that only read (a store may run them with EVALSHA_RO, FCALL_RO, or on a replica). */
const READ_ONLY = new Set(["stats", "inspect", "list", "history", "groups", "schedules"]);

/** The library the TCP store loads; the Upstash store loads its own, flagged (shared/stores/upstash.ts). */
export const LIBRARY = luaLibrary();

function withLib(name: ScriptSource, options: { repeatArg?: number } = {}): LuaScript {
  return luaScript(name, luaBody(name), { ...options, readOnly: READ_ONLY.has(name), library: LIBRARY });
}

/** Every operation script, the shared prelude prepended. */
export const SCRIPTS = {
  configure: withLib("configure"),
  enqueue: withLib("enqueue"),
  // The repeat flag: a store's retry sets it, so the script looks for the batch the first run
  // leased before it leases another.
  claim: withLib("claim", { repeatArg: argIndex("claim", "repeat") }),
  settle: withLib("settle"),
  extend: withLib("extend"),
  release: withLib("release"),
  reclaim: withLib("reclaim"),
  promote: withLib("promote"),
  trim: withLib("trim"),
  stats: withLib("stats"),
  tick: withLib("tick"),
  handoff: withLib("handoff"),
  inspect: withLib("inspect"),
  requeue: withLib("requeue"),
  amend: withLib("amend"),
  skip: withLib("skip"),
  list: withLib("list"),
  repair: withLib("repair"),
  delete: withLib("delete"),
  drop: withLib("drop"),
  pause: withLib("pause"),
  cancel: withLib("cancel"),
  history: withLib("history"),
  groups: withLib("groups"),
  check: withLib("check"),
  plan: withLib("plan"),
  schedules: withLib("schedules"),
  schedule: withLib("schedule"),
} as const satisfies Record<string, LuaScript>;

export type ScriptName = keyof typeof SCRIPTS;
