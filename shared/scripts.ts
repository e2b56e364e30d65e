// The only user of the Lua sources: shared/scripts.generated.ts carries lua/*.lua as text (see
// bin/generate-lua.ts), so the library loads the same way under Node, tsx, vitest and bundlers.
import { LUA_SOURCES } from "./scripts.generated.js";
import { type LuaScript, luaScript } from "./store.js";

type ScriptSource = Exclude<keyof typeof LUA_SOURCES, "lib">;

function withLib(name: ScriptSource, retrySafe = true): LuaScript {
  return luaScript(name, `${LUA_SOURCES.lib}\n${LUA_SOURCES[name]}`, retrySafe);
}

/** Every operation script, the shared prelude prepended. */
export const SCRIPTS = {
  enqueue: withLib("enqueue"),
  claim: withLib("claim", false),
  settle: withLib("settle"),
  extend: withLib("extend"),
  release: withLib("release"),
  reclaim: withLib("reclaim"),
  promote: withLib("promote"),
  trim: withLib("trim"),
  stats: withLib("stats"),
  tick: withLib("tick"),
  inspect: withLib("inspect"),
  requeue: withLib("requeue"),
  list: withLib("list"),
  drop: withLib("drop"),
} as const satisfies Record<string, LuaScript>;

export type ScriptName = keyof typeof SCRIPTS;
