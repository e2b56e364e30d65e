// The only user of the Lua sources: shared/scripts.generated.ts carries each script of lua/ with the
// prelude it needs, as text (see bin/generate-lua.ts), so the library loads the same way under Node,
// tsx, vitest and bundlers.
import { argIndex } from "./protocol/index.js";
import { LUA_BLOCKS, LUA_SCRIPTS } from "./scripts.generated.js";
import { type LuaScript, luaScript } from "./store.js";

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

function withLib(name: ScriptSource, options: { readOnly?: boolean; repeatArg?: number } = {}): LuaScript {
  return luaScript(name, luaBody(name), options);
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
  stats: withLib("stats", { readOnly: true }),
  tick: withLib("tick"),
  handoff: withLib("handoff"),
  inspect: withLib("inspect", { readOnly: true }),
  requeue: withLib("requeue"),
  skip: withLib("skip"),
  list: withLib("list", { readOnly: true }),
  repair: withLib("repair"),
  delete: withLib("delete"),
  drop: withLib("drop"),
  pause: withLib("pause"),
  cancel: withLib("cancel"),
  history: withLib("history", { readOnly: true }),
  groups: withLib("groups", { readOnly: true }),
  check: withLib("check"),
  plan: withLib("plan"),
  schedules: withLib("schedules", { readOnly: true }),
  schedule: withLib("schedule"),
} as const satisfies Record<string, LuaScript>;

export type ScriptName = keyof typeof SCRIPTS;
