import { createHash } from "node:crypto";

/** A Lua script as sent to Redis: its body (the shared prelude included) and that body's SHA-1. */
export interface LuaScript {
  readonly name: string;
  readonly body: string;
  readonly sha: string;
  /**
   * Whether running it twice is harmless. Every script but `claim` is idempotent or fenced by a
   * token, so a retry after a lost reply changes nothing twice. A retried claim would lease tasks
   * nobody runs until their lease expires, so adapters never retry it.
   */
  readonly retrySafe: boolean;
}

/** What the queue needs from Redis: run a script by SHA, falling back to its body on NOSCRIPT. */
export interface Store {
  /** Runs `script`; resolves to its raw reply (arrays of strings and integers). */
  evalScript(script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** Closes connections the store opened. */
  close(): Promise<void>;
}

export function luaScript(name: string, body: string, retrySafe: boolean): LuaScript {
  return { name, body, sha: createHash("sha1").update(body).digest("hex"), retrySafe };
}

export function isNoScript(error: unknown): boolean {
  return error instanceof Error && /NOSCRIPT/.test(error.message);
}
