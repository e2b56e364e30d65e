import { type Cluster, Redis, type RedisOptions, ReplyError } from "ioredis";
import { StoreError } from "../errors.js";
import { argsForRetry, isNoScript, type LuaScript, type Store } from "../store.js";
import { DEFAULT_RETRY, type RetryPolicy, withRetry } from "./retry.js";

type Client = Redis | Cluster;

/**
 * The TCP store on ioredis: Redis, Valkey, ElastiCache, MemoryDB, and Redis Cluster (every key of
 * a queue shares one hash tag, so a script's keys are always in one slot). ioredis's own resend of
 * unanswered commands is off: scripts are retried here, a claim with its repeat flag set.
 */
export class TcpStore implements Store {
  private constructor(
    readonly client: Client,
    private readonly retry: RetryPolicy,
    private readonly owned: boolean,
  ) {}

  /**
   * Connects to `url` (redis:// or rediss://). Commands fail fast while the server is down, and
   * after `timeoutMs` (default 5000) when it stops answering with the connection still open.
   */
  static fromUrl(
    url: string,
    options: { timeoutMs?: number; retry?: RetryPolicy; redis?: RedisOptions } = {},
  ): TcpStore {
    const client = new Redis(url, {
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      connectTimeout: 5_000,
      // A server that stops answering without closing the connection must not hang a Lambda until
      // its own timeout: fail the call (and retry it, a claim as a repeat; see LuaScript).
      commandTimeout: options.timeoutMs ?? 5_000,
      enableOfflineQueue: true,
      retryStrategy: (times) => Math.min(times * 100, 2_000),
      ...options.redis,
    });
    client.on("error", () => {
      // Reported to the caller of each failed command; an unhandled 'error' event would crash.
    });
    return new TcpStore(client, options.retry ?? DEFAULT_RETRY, true);
  }

  /** Wraps a client the caller manages (e.g. an ioredis Cluster); close() leaves it open. */
  static fromClient(client: Client, options: { retry?: RetryPolicy } = {}): TcpStore {
    return new TcpStore(client, options.retry ?? DEFAULT_RETRY, false);
  }

  /** SCAN on the server (on a Cluster: on each master in turn; the cursor carries which). */
  async scanKeys(cursor: string, match: string, count: number): Promise<[string, string[]]> {
    const nodes = "nodes" in this.client ? this.client.nodes("master") : [this.client];
    const [node, at] = cursor.includes(":") ? cursor.split(":").map(Number) : [0, Number(cursor)];
    const [next, keys] = await nodes[node].scan(at, "MATCH", match, "COUNT", count);
    if (next !== "0") return [node === 0 && nodes.length === 1 ? next : `${node}:${next}`, keys];
    return [node + 1 < nodes.length ? `${node + 1}:0` : "0", keys];
  }

  async evalScript(script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return withRetry(
      script,
      this.retry,
      (error) => error instanceof ReplyError,
      async (retry) => {
        const sent = argsForRetry(script, args, retry);
        try {
          return await this.client.evalsha(script.sha, keys.length, ...keys, ...sent);
        } catch (error) {
          if (!isNoScript(error)) throw error;
          return await this.client.eval(script.body, keys.length, ...keys, ...sent);
        }
      },
    ).catch((error: unknown) => {
      throw storeError(script.name, error);
    });
  }

  async close(): Promise<void> {
    if (!this.owned) return;
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

/** Keeps Redis's own reply text (it names the error, never the arguments); scrubs nothing else in. */
function storeError(operation: string, error: unknown): unknown {
  if (error instanceof ReplyError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (message === "Command timed out") {
    return new StoreError(
      `${operation}: no answer from Redis over TCP in time (it may be frozen or unreachable)`,
      undefined,
      {
        cause: error,
      },
    );
  }
  return new StoreError(`${operation}: Redis unreachable over TCP (${message})`, undefined, { cause: error });
}
