import { createHash } from "node:crypto";

/**
 * Every operation script as one Redis Functions library (shared/scripts.ts): its name (leaseq_ and
 * the digest of its text), the text FUNCTION LOAD takes, and each script's function name.
 */
export interface LuaLibrary {
  readonly name: string;
  readonly code: string;
  readonly functions: ReadonlyMap<string, string>;
}

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
  /** The library holding this script as a function, where there is one (the operation scripts). */
  readonly library: LuaLibrary | undefined;
}

/** What a store knows of the server's Redis Functions: not yet tried, there, or missing (EVALSHA). */
export type FunctionsState = "unknown" | "yes" | "no";

/** FunctionCalls.run's answer when the server has no Redis Functions: send the script by EVALSHA. */
export const NO_FUNCTIONS = Symbol("no functions");

/**
 * A store's calls of leaseq's function library, whatever carries them (ioredis, REST): the store
 * gives how to call one function and how to load the library; this decides, for both stores alike,
 * when to load it, when to give up on Functions, and loads it once for the calls that find it
 * missing together.
 */
export class FunctionCalls {
  /**
   * Whether the server runs the library: tried on the first call, and "no" for good once the server
   * answers that it has no FCALL or FUNCTION (then every call is an EVALSHA).
   */
  state: FunctionsState = "unknown";
  private loading: Promise<boolean> | undefined;

  /**
   * `call()` (one FCALL); the library missing (never loaded here, a restart without persistence,
   * FUNCTION FLUSH), `load()` and `call()` again: an FCALL of a missing function ran nothing.
   * NO_FUNCTIONS when the server has no Functions (known before, or answered now). `load` rejects
   * with Redis's error; "Library … already exists" (another process loaded it first) counts as loaded.
   */
  async run(call: () => Promise<unknown>, load: () => Promise<unknown>): Promise<unknown> {
    // The library can go again between a load and the call (another process's FUNCTION DELETE or
    // FLUSH at that moment): loaded and called again, a few times, before the error is the caller's.
    for (let loads = 0; ; loads++) {
      if (this.state === "no") return NO_FUNCTIONS;
      try {
        const reply = await call();
        this.state = "yes";
        return reply;
      } catch (error) {
        if (isFunctionsMissing(error)) {
          this.state = "no";
          return NO_FUNCTIONS;
        }
        if (!isNoFunction(error) || loads >= FUNCTION_LOADS_MAX) throw error;
      }
      if (!(await this.load(load))) return NO_FUNCTIONS;
    }
  }

  /** Loads the library once for every caller waiting on it; false when the server has no Functions. */
  private load(load: () => Promise<unknown>): Promise<boolean> {
    this.loading ??= load()
      .then(
        () => true,
        (error: unknown) => {
          if (isLibraryLoaded(error)) return true;
          if (!isFunctionsMissing(error)) throw error;
          this.state = "no";
          return false;
        },
      )
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }
}

/** How many times one call loads the library that keeps going missing before it gives up. */
const FUNCTION_LOADS_MAX = 3;

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
  options: { readOnly?: boolean; repeatArg?: number; library?: LuaLibrary } = {},
): LuaScript {
  return {
    name,
    body,
    sha: createHash("sha1").update(body).digest("hex"),
    readOnly: options.readOnly ?? false,
    repeatArg: options.repeatArg,
    library: options.library,
  };
}

/**
 * The script as it is sent with a shebang of `flags` (`#!lua flags=a,b`): its body starts with the
 * shebang line, and its SHA is that body's, so EVALSHA and the NOSCRIPT fallback agree.
 */
export function withShebang(script: LuaScript, flags: readonly string[], library?: LuaLibrary): LuaScript {
  return luaScript(script.name, `#!lua flags=${flags.join(",")}\n${script.body}`, {
    readOnly: script.readOnly,
    repeatArg: script.repeatArg,
    library: script.library && library,
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

/** Redis has no such function: the library is not loaded there (yet, or any more: a restart, FUNCTION FLUSH). */
export function isNoFunction(error: unknown): boolean {
  return error instanceof Error && /^ERR Function not found/.test(error.message);
}

/** Another caller loaded the library first: as good as loading it. */
export function isLibraryLoaded(error: unknown): boolean {
  return error instanceof Error && /^ERR Library '[^']*' already exists/.test(error.message);
}

/**
 * The server has no Redis Functions, or they are not ours to use: a Redis before 7, a store that
 * lacks FCALL or FUNCTION, or an ACL that denies them. The store then runs scripts by EVALSHA.
 * (Redis 7 quotes the command with ', 6 with `.) Only a refusal of those commands counts: an error a function raised while it ran (say a command
 * it called was refused) is that call's answer, not a reason to give up on Functions.
 */
export function isFunctionsMissing(error: unknown): boolean {
  return (
    error instanceof Error &&
    /^(ERR unknown command ['`]?(fcall|fcall_ro|function)\b|ERR unknown subcommand ['`]?load|NOPERM .*'(fcall|fcall_ro|function(\|load)?)')/i.test(
      error.message,
    )
  );
}
