// The only importer of ../lua/*.lua. Bundlers inline them as text (esbuild loader ".lua": "text");
// vitest and tsx load them through the same text loader (see vitest.config.ts and bin/lua-loader.mjs).
import lib from "../lua/_lib.lua";
import claim from "../lua/claim.lua";
import enqueue from "../lua/enqueue.lua";
import extend from "../lua/extend.lua";
import inspect from "../lua/inspect.lua";
import list from "../lua/list.lua";
import promote from "../lua/promote.lua";
import reclaim from "../lua/reclaim.lua";
import release from "../lua/release.lua";
import requeue from "../lua/requeue.lua";
import settle from "../lua/settle.lua";
import stats from "../lua/stats.lua";
import tick from "../lua/tick.lua";
import trim from "../lua/trim.lua";
import { type LuaScript, luaScript } from "./store.js";

function withLib(name: string, body: string, retrySafe = true): LuaScript {
  return luaScript(name, `${lib}\n${body}`, retrySafe);
}

/** Every operation script, the shared prelude prepended. */
export const SCRIPTS = {
  enqueue: withLib("enqueue", enqueue),
  claim: withLib("claim", claim, false),
  settle: withLib("settle", settle),
  extend: withLib("extend", extend),
  release: withLib("release", release),
  reclaim: withLib("reclaim", reclaim),
  promote: withLib("promote", promote),
  trim: withLib("trim", trim),
  stats: withLib("stats", stats),
  tick: withLib("tick", tick),
  inspect: withLib("inspect", inspect),
  requeue: withLib("requeue", requeue),
  list: withLib("list", list),
} as const satisfies Record<string, LuaScript>;

export type ScriptName = keyof typeof SCRIPTS;
