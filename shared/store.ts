import { createHash } from "node:crypto";

/** A Lua script as sent to Redis: its body (the shared prelude included) and that body's SHA-1. */
export interface LuaScript {
  readonly name: string;
  readonly body: string;
  readonly sha: string;
  /** It only reads (stats, inspect, list): a store may run it with EVAL_RO / no-writes. */
  readonly readOnly: boolean;
  /**
   * Every script is safe to run twice: idempotent, fenced by a token, or (claim) told it may be a
   * repeat. For such a script this is the index in ARGV of its repeat flag, which a store sets to
   * "1" when it sends the call again after a failure whose outcome it cannot know.
   */
  readonly repeatArg: number | undefined;
}

/** What the queue needs from Redis: run a script by SHA, falling back to its body on NOSCRIPT. */
export interface Store {
  /** Runs `script`; resolves to its raw reply (arrays of strings and integers). */
  evalScript(script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** Closes connections the store opened. */
  close(): Promise<void>;
  /**
   * One SCAN step over the keys matching `match` (for operators: `listQueues`), `cursor` "0" to
   * start; resolves to the next cursor ("0" at the end) and the keys found. Both stores have it.
   */
  scanKeys?(cursor: string, match: string, count: number): Promise<[string, string[]]>;
}

export function luaScript(
  name: string,
  body: string,
  options: { readOnly?: boolean; repeatArg?: number } = {},
): LuaScript {
  return {
    name,
    body,
    sha: createHash("sha1").update(body).digest("hex"),
    readOnly: options.readOnly ?? false,
    repeatArg: options.repeatArg,
  };
}

/**
 * The script as it is sent with a shebang of `flags` (`#!lua flags=a,b`): its body starts with the
 * shebang line, and its SHA is that body's, so EVALSHA and the NOSCRIPT fallback agree.
 */
export function withShebang(script: LuaScript, flags: readonly string[]): LuaScript {
  return luaScript(script.name, `#!lua flags=${flags.join(",")}\n${script.body}`, {
    readOnly: script.readOnly,
    repeatArg: script.repeatArg,
  });
}

/** The arguments of a call's `retry`th sending (0: the first): a repeat flag set from the first retry on. */
export function argsForRetry(script: LuaScript, args: readonly string[], retry: number): readonly string[] {
  if (retry === 0 || script.repeatArg === undefined) return args;
  const repeated = [...args];
  repeated[script.repeatArg] = "1";
  return repeated;
}

export function isNoScript(error: unknown): boolean {
  return error instanceof Error && /NOSCRIPT/.test(error.message);
}
