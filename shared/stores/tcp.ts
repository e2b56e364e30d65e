import { type Cluster, Redis, type RedisOptions, ReplyError } from "ioredis";
import {
  argsForRetry,
  FunctionCalls,
  type FunctionsState,
  isLibraryLoaded,
  isNoScript,
  type LuaLibrary,
  type LuaScript,
  NO_FUNCTIONS,
  type Store,
} from "../store.js";
import { DEFAULT_RETRY, type RetryPolicy, withRetry } from "./retry.js";
import { connectionProblem, type Endpoint, endpointOf, noAnswer, unreachable } from "./unreachable.js";

type Client = Redis | Cluster;

/**
 * The TCP store on ioredis: Redis, Valkey, ElastiCache, MemoryDB, and Redis Cluster (every key of
 * a queue shares one hash tag, so a script's keys are always in one slot). ioredis's own resend of
 * unanswered commands is off: scripts are retried here, a claim with its repeat flag set.
 */
export class TcpStore implements Store {
  /** The last connection error the client reported: why a command found no connection. */
  private lastConnectionError: unknown;
  /** Its calls of leaseq's function library (shared/store.ts). */
  private readonly calls = new FunctionCalls();

  /** Whether the server runs leaseq's function library ("no": every script by EVALSHA). */
  get functions(): FunctionsState {
    return this.calls.state;
  }

  private constructor(
    readonly client: Client,
    private readonly retry: RetryPolicy,
    private readonly owned: boolean,
    private readonly endpoint: Endpoint,
    private readonly timeoutMs: number | undefined,
  ) {}

  /**
   * Connects to `url` (redis:// or rediss://). Commands fail fast while the server is down, and
   * after `timeoutMs` (default 5000) when it stops answering with the connection still open: an
   * UnreachableError naming the host, the port and `source`, the setting the URL came from.
   */
  static fromUrl(
    url: string,
    options: {
      timeoutMs?: number;
      retry?: RetryPolicy;
      redis?: RedisOptions;
      /** Where `url` came from, for messages. Default: "the URL given to TcpStore.fromUrl". */
      source?: string;
    } = {},
  ): TcpStore {
    const timeoutMs = options.timeoutMs ?? 5_000;
    const client = new Redis(url, {
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      connectTimeout: 5_000,
      // A server that stops answering without closing the connection must not hang a Lambda until
      // its own timeout: fail the call (and retry it, a claim as a repeat; see LuaScript).
      commandTimeout: timeoutMs,
      enableOfflineQueue: true,
      retryStrategy: (times) => Math.min(times * 100, 2_000),
      ...options.redis,
    });
    const source = options.source ?? "the URL given to TcpStore.fromUrl";
    const store = new TcpStore(
      client,
      options.retry ?? DEFAULT_RETRY,
      true,
      endpointOf(url, "6379", source),
      timeoutMs,
    );
    client.on("error", (error) => {
      // Reported to the caller of each failed command, in words (an unhandled 'error' event would crash).
      store.lastConnectionError = error;
    });
    client.on("ready", () => {
      store.lastConnectionError = undefined;
    });
    return store;
  }

  /** Wraps a client the caller manages (e.g. an ioredis Cluster); close() leaves it open. */
  static fromClient(client: Client, options: { retry?: RetryPolicy } = {}): TcpStore {
    const source = "the client given to TcpStore.fromClient";
    if ("nodes" in client) {
      return new TcpStore(
        client,
        options.retry ?? DEFAULT_RETRY,
        false,
        { host: "a cluster", port: "?", source },
        undefined,
      );
    }
    const endpoint = { host: client.options.host ?? "?", port: String(client.options.port ?? "?"), source };
    return new TcpStore(client, options.retry ?? DEFAULT_RETRY, false, endpoint, client.options.commandTimeout);
  }

  /** SCAN on the server (on a Cluster: on each master in turn; the cursor carries which). */
  async scanKeys(cursor: string, match: string, count: number): Promise<[string, string[]]> {
    const nodes = "nodes" in this.client ? this.client.nodes("master") : [this.client];
    const [node, at] = cursor.includes(":") ? cursor.split(":").map(Number) : [0, Number(cursor)];
    const [next, keys] = await nodes[node].scan(at, "MATCH", match, "COUNT", count).catch((error: unknown) => {
      throw this.storeError("scan", error);
    });
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
        const library = script.library;
        if (library) {
          const name = library.functions.get(script.name) as string;
          const command = script.readOnly ? "FCALL_RO" : "FCALL";
          const reply = await this.calls.run(
            () => this.client.call(command, name, keys.length, ...keys, ...sent),
            () => this.loadLibrary(library),
          );
          if (reply !== NO_FUNCTIONS) return reply;
        }
        try {
          return await this.client.evalsha(script.sha, keys.length, ...keys, ...sent);
        } catch (error) {
          if (!isNoScript(error)) throw error;
          return await this.client.eval(script.body, keys.length, ...keys, ...sent);
        }
      },
    ).catch((error: unknown) => {
      throw this.storeError(script.name, error);
    });
  }

  /**
   * FUNCTION LOAD on the server; on a Cluster on every master (a master that has it already
   * answers "already exists", which counts as loaded).
   */
  private async loadLibrary(library: LuaLibrary): Promise<void> {
    const nodes = "nodes" in this.client ? this.client.nodes("master") : [this.client];
    for (const node of nodes) {
      await node.call("FUNCTION", "LOAD", library.code).catch((error: unknown) => {
        if (!isLibraryLoaded(error)) throw error;
      });
    }
  }

  async close(): Promise<void> {
    if (!this.owned) return;
    await this.client.quit().catch(() => this.client.disconnect());
  }

  /**
   * Keeps Redis's own reply text (it names the error, never the arguments); anything else is a
   * server not reached, said in leaseq's words: ioredis's own ("Reached the max retries per
   * request limit") names its options, not the server.
   */
  private storeError(operation: string, error: unknown): unknown {
    if (error instanceof ReplyError) return error;
    const message = error instanceof Error ? error.message : String(error);
    if (message === "Command timed out") {
      return noAnswer(operation, "Redis", this.endpoint, this.timeoutMs ?? 0, error);
    }
    return unreachable(operation, "Redis", this.endpoint, connectionProblem(this.lastConnectionError ?? error), error);
  }
}
