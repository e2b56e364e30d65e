import type { Command } from "commander";
import { StoreError } from "../../shared/errors.js";
import { queueKeys } from "../../shared/keys.js";
import { Queue, type QueueOptions } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { OperationError, UsageError } from "./errors.js";

/** A store opened from the environment, and what it points at (no secrets in `where`). */
export interface Connection {
  store: Store;
  /** E.g. "Redis at redis://127.0.0.1:6379" or "Upstash at https://x.upstash.io". */
  where: string;
}

/**
 * Opens a store from the environment: REDIS_URL (TCP), else UPSTASH_REDIS_REST_URL plus
 * UPSTASH_REDIS_REST_TOKEN (REST). Throws UsageError naming the missing variables.
 */
export async function openStore(env: NodeJS.ProcessEnv = process.env): Promise<Connection> {
  if (env.REDIS_URL) {
    let url: URL;
    try {
      url = new URL(env.REDIS_URL);
    } catch {
      throw new UsageError("REDIS_URL is not a URL; expected e.g. redis://127.0.0.1:6379");
    }
    if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
      throw new UsageError(`REDIS_URL must start with redis:// or rediss://, got ${url.protocol}//`);
    }
    return { store: TcpStore.fromUrl(env.REDIS_URL), where: `Redis at ${url.protocol}//${url.host}` };
  }
  const restUrl = env.UPSTASH_REDIS_REST_URL;
  const token = env.UPSTASH_REDIS_REST_TOKEN;
  if (restUrl || token) {
    if (!restUrl || !token) {
      const missing = restUrl ? "UPSTASH_REDIS_REST_TOKEN" : "UPSTASH_REDIS_REST_URL";
      throw new UsageError(
        `${missing} is not set; Upstash needs both UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN`,
      );
    }
    // Loaded only when used, so TCP users never load the REST client.
    const { UpstashStore } = await import("../../shared/stores/upstash.js");
    return { store: new UpstashStore({ url: restUrl, token }), where: `Upstash at ${originOf(restUrl)}` };
  }
  throw new UsageError(
    "no Redis to connect to: set REDIS_URL (e.g. redis://127.0.0.1:6379), or UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN",
  );
}

/** The URL's origin for messages; never the path or query, where a token could hide. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(a malformed UPSTASH_REDIS_REST_URL)";
  }
}

/** The queue name from --queue or LEASEQ_QUEUE; throws UsageError when neither is given. */
export function queueName(command: Command, env: NodeJS.ProcessEnv = process.env): string {
  const name = (command.optsWithGlobals().queue as string | undefined) ?? env.LEASEQ_QUEUE;
  if (!name) throw new UsageError("no queue given: pass --queue NAME or set LEASEQ_QUEUE");
  return name;
}

/**
 * Runs `work` on the queue the command names, then closes the store whatever happened. The queue
 * name is checked (Queue throws InvalidInputError) before any connection is opened.
 */
export async function withQueue<T>(
  command: Command,
  work: (queue: Queue) => Promise<T>,
  options: Omit<QueueOptions, "name"> = {},
): Promise<T> {
  const name = queueName(command);
  queueKeys(name);
  const { store, where } = await openStore();
  try {
    return await work(new Queue(store, { ...options, name }));
  } catch (error) {
    // No Redis error code: the server was never reached. Say where the CLI looked.
    if (error instanceof StoreError && error.redisCode === undefined) {
      throw new OperationError(`${error.message}; is ${where} running and reachable?`, { cause: error });
    }
    throw error;
  } finally {
    await store.close();
  }
}
