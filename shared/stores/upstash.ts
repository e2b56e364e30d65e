import { errors, Redis } from "@upstash/redis";
import { ConfigError, CredentialsError, StoreError } from "../errors.js";
import { luaLibrary } from "../scripts.js";
import {
  argsForRetry,
  FunctionCalls,
  type FunctionsState,
  type LuaScript,
  NO_FUNCTIONS,
  type Store,
  withShebang,
} from "../store.js";
import { DEFAULT_RETRY, type RetryPolicy, withRetry } from "./retry.js";
import { connectionProblem, type Endpoint, endpointOf, noAnswer, unreachable } from "./unreachable.js";

export interface UpstashStoreOptions {
  /** The REST URL (UPSTASH_REDIS_REST_URL), https://… or, for the local endpoint, http://127.0.0.1:…. */
  url: string;
  /** The REST token (UPSTASH_REDIS_REST_TOKEN). Never appears in an error this store throws. */
  token: string;
  /** How long one HTTP request may take before it is abandoned, in ms. Default 5000. */
  timeoutMs?: number;
  /** Retries after a transport failure (a claim as a repeat of the same claim id). */
  retry?: RetryPolicy;
  /** Where `url` came from, for messages (e.g. "UPSTASH_REDIS_REST_URL"). Default: "the url given to UpstashStore". */
  source?: string;
}

/** Redis answered the script with an error; the message is Redis's error text ("ERR …", "NOSCRIPT …"). */
export class RedisReplyError extends Error {
  override readonly name = "RedisReplyError";
}

const DEFAULT_TIMEOUT_MS = 5_000;

/**
 * Upstash runs a script under its global lock, stopping every other command of the database,
 * unless the script's shebang says `allow-key-locking`: then it locks only the keys in KEYS (every
 * leaseq script declares all its keys there, test/shared/lua-keys.test.ts), and scripts on other
 * queues, or the user's own commands on other keys, run alongside. A read-only script also says
 * `no-writes` and runs with EVALSHA_RO. Redis itself refuses the flag, so the TCP store sends the
 * bodies as they are.
 */
const flagged = new WeakMap<LuaScript, LuaScript>();
/** The function library the Upstash store loads: every function flagged `allow-key-locking` (see above). */
export const UPSTASH_LIBRARY = luaLibrary(["allow-key-locking"]);
export function upstashScript(script: LuaScript): LuaScript {
  let sent = flagged.get(script);
  if (sent === undefined) {
    const flags = script.readOnly ? ["allow-key-locking", "no-writes"] : ["allow-key-locking"];
    sent = withShebang(script, flags, UPSTASH_LIBRARY);
    flagged.set(script, sent);
  }
  return sent;
}
/** Longer than any id, type or number leaseq sends: only payloads and error texts are longer. */
const REDACT_ARGS_LONGER_THAN = 128;

/**
 * The Upstash store: @upstash/redis over REST, the default on Lambda. The client's own retries are
 * off (by default it resends a request up to 5 times after a network error, blind to what it
 * sends); scripts are retried here instead, like the TCP store does, a claim with its repeat flag. Each request
 * gets a fresh timeout signal (the function form): a shared signal would stay aborted after the
 * first timeout, and the client turns an abort of a non-function signal into a *successful* reply
 * (null for a timeout), where the function form makes the call throw.
 */
export class UpstashStore implements Store {
  private readonly redis: Redis;
  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly retry: RetryPolicy;
  private readonly endpoint: Endpoint;
  /** Its calls of leaseq's function library (shared/store.ts). */
  private readonly calls = new FunctionCalls();

  /** Whether the database runs leaseq's function library ("no": every script by EVALSHA). */
  get functions(): FunctionsState {
    return this.calls.state;
  }

  /** Throws ConfigError listing every missing or malformed option. */
  constructor(options: UpstashStoreOptions) {
    const problems: string[] = [];
    if (!/^https?:\/\/\S+$/.test(options.url ?? ""))
      problems.push("url must be an http(s) URL (UPSTASH_REDIS_REST_URL)");
    if (!options.token) problems.push("token must be a non-empty string (UPSTASH_REDIS_REST_TOKEN)");
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1) {
      problems.push(`timeoutMs must be a positive integer (ms), got ${String(options.timeoutMs)}`);
    }
    if (problems.length > 0) throw new ConfigError(problems);
    this.token = options.token;
    this.timeoutMs = timeoutMs;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.endpoint = endpointOf(
      options.url,
      options.url.startsWith("http:") ? "80" : "443",
      options.source ?? "the url given to UpstashStore",
    );
    this.redis = new Redis({
      url: options.url,
      token: options.token,
      // Without it the client parses replies as JSON: the member "123" would come back as 123.
      automaticDeserialization: false,
      // Every script call is its own request, so a lost reply can be told apart per call.
      enableAutoPipelining: false,
      // `retry: false` still resends once in 1.39 (attempts = 1 means one retry): ask for zero.
      retry: { retries: 0 },
      signal: () => AbortSignal.timeout(timeoutMs),
    });
  }

  /** One SCAN step through the REST API. */
  async scanKeys(cursor: string, match: string, count: number): Promise<[string, string[]]> {
    try {
      const [next, keys] = await this.redis.scan(cursor, { match, count });
      return [String(next), keys.map(String)];
    } catch (error) {
      throw translate("scan", error, [this.token], this.timeoutMs, this.endpoint);
    }
  }

  /** Runs the script by SHA, then by body on NOSCRIPT; throws RedisReplyError or StoreError, scrubbed. */
  async evalScript(unflagged: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const script = upstashScript(unflagged);
    const secrets = [
      this.token,
      script.body,
      ...(script.library ? [script.library.code] : []),
      ...args.filter((arg) => arg.length > REDACT_ARGS_LONGER_THAN),
    ];
    const send = async (run: () => Promise<unknown>) => {
      try {
        return await run();
      } catch (error) {
        throw translate(script.name, error, secrets, this.timeoutMs, this.endpoint);
      }
    };
    return withRetry(
      script,
      this.retry,
      // A Redis error reply or a refused token would only repeat.
      (error) => error instanceof RedisReplyError || error instanceof CredentialsError,
      async (retry) => {
        const sent = [...argsForRetry(script, args, retry)];
        const library = script.library;
        if (library) {
          const name = library.functions.get(script.name) as string;
          const reply = await this.calls.run(
            () =>
              send(() =>
                script.readOnly
                  ? this.redis.functions.callRo(name, [...keys], sent)
                  : this.redis.functions.call(name, [...keys], sent),
              ),
            () => send(() => this.redis.functions.load({ code: library.code })),
          );
          if (reply !== NO_FUNCTIONS) return reply;
        }
        const byHash = script.readOnly ? this.redis.evalshaRo : this.redis.evalsha;
        const byBody = script.readOnly ? this.redis.evalRo : this.redis.eval;
        try {
          return await send(() => byHash(script.sha, [...keys], sent));
        } catch (error) {
          if (!(error instanceof RedisReplyError && error.message.startsWith("NOSCRIPT"))) throw error;
          return await send(() => byBody(script.body, [...keys], sent));
        }
      },
    );
  }

  /** Nothing to close: requests go through fetch's shared keep-alive pool. */
  async close(): Promise<void> {}
}

/**
 * Turns what the client threw into an error safe to show. The client's text for an HTTP error is
 * "<Redis error>, command was: <the whole command as JSON>" (script body and arguments, so task
 * payloads); only the Redis part is kept, and it is scanned for the secrets anyway.
 */
function translate(operation: string, error: unknown, secrets: string[], timeoutMs: number, endpoint: Endpoint): Error {
  if (error instanceof errors.UpstashJSONParseError) {
    // Its message quotes the start of the response body, which may hold task data: leave it out.
    return new StoreError(`${operation}: Upstash answered a body that is not JSON`, undefined);
  }
  if (error instanceof errors.UpstashError) {
    const text = redact(error.message.split(", command was: ")[0], secrets);
    // An error Redis answered starts with its code (ERR, NOSCRIPT, WRONGTYPE, LEASEQ_BAD_ARGUMENT…);
    // anything else is the REST layer's (a 5xx, a refused token): the request may not have run.
    if (/^[A-Z][A-Z0-9_]*(\s|$)/.test(text)) return new RedisReplyError(text);
    // Upstash answers a wrong or missing token with HTTP 401 "Unauthorized"; the client keeps only that text.
    if (/^Unauthorized\b/.test(text)) {
      return new CredentialsError(
        `${operation}: Upstash rejected the REST token (401 Unauthorized): check UPSTASH_REDIS_REST_TOKEN (the REST token, not the Redis password)`,
      );
    }
    return new StoreError(`${operation}: the Upstash REST API failed the request (${text})`, undefined);
  }
  if (error instanceof DOMException && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return noAnswer(operation, "Upstash", endpoint, timeoutMs, undefined);
  }
  // fetch's own text is "fetch failed"; why is in its cause (ECONNREFUSED, ENOTFOUND, a TLS code).
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  return unreachable(operation, "Upstash", endpoint, redact(connectionProblem(cause), secrets), undefined);
}

function redact(text: string, secrets: string[]): string {
  let result = text;
  for (const secret of secrets) if (secret) result = result.split(secret).join("[redacted]");
  return result;
}
