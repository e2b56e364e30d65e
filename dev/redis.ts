import { CONNECTION_VARIABLES, connectionFromEnv } from "../shared/connection.js";
import { ConfigError } from "../shared/errors.js";
import { pingRedis, startRedisServer } from "./redis-server.js";

/** Where the local stack's Redis came from, and how to let go of it. */
export interface LocalRedis {
  url: string;
  /** "env": REDIS_URL; "default": a server already on the default port; "started": ours. */
  source: "env" | "default" | "started";
  /** Stops the redis-server this process started; does nothing for the other sources. */
  stop(): Promise<void>;
}

/** Thrown when no Redis can be found or started; the message says what to do about it. */
export class NoRedisError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NoRedisError";
  }
}

/** The port probed before starting a server: 6379, or LEASEQ_DEFAULT_REDIS_PORT (tests point it at a dead port). */
export function defaultRedisPort(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.LEASEQ_DEFAULT_REDIS_PORT;
  if (text === undefined || text === "") return 6379;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new NoRedisError(`LEASEQ_DEFAULT_REDIS_PORT must be a port from 1 to 65535, got ${JSON.stringify(text)}`);
  }
  return port;
}

/**
 * Finds a Redis for the local stack: REDIS_URL if set; else 127.0.0.1 on the default port if a
 * server answers PING; else a redis-server from PATH on a free loopback port, with a temporary
 * directory and no persistence. Throws NoRedisError, saying how to install one, when PATH has none.
 */
export async function resolveRedis(env: NodeJS.ProcessEnv = process.env): Promise<LocalRedis> {
  const none = async () => {};
  // The one connection rule: several credential sets are an error here as in the functions and the
  // CLI. An Upstash one alone is refused too: the stack serves its own Upstash-compatible endpoint in
  // front of a Redis it reaches over TCP.
  const upstash = [...CONNECTION_VARIABLES.upstash, ...CONNECTION_VARIABLES["upstash-secret"]].filter(
    (name) => env[name],
  );
  if (upstash.length > 0) {
    try {
      connectionFromEnv(env);
    } catch (error) {
      if (error instanceof ConfigError && env.REDIS_URL) throw new NoRedisError(error.problems.join("; "));
    }
    throw new NoRedisError(
      `${upstash.join(", ")} ${upstash.length === 1 ? "is" : "are"} set, but the local stack runs its own Upstash-compatible endpoint in front of a Redis it reaches over TCP: unset ${upstash.length === 1 ? "it" : "them"}, and set REDIS_URL if you want a Redis of your own`,
    );
  }
  if (env.REDIS_URL) return { url: env.REDIS_URL, source: "env", stop: none };
  const port = defaultRedisPort(env);
  if (await pingRedis("127.0.0.1", port)) return { url: `redis://127.0.0.1:${port}`, source: "default", stop: none };
  try {
    const started = await startRedisServer([], undefined, { detached: true, env });
    return { url: started.url, source: "started", stop: started.stop };
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    const reason = missing
      ? "redis-server is not on PATH"
      : `redis-server could not be started (${(error as Error).message})`;
    throw new NoRedisError(
      [
        `No Redis found: REDIS_URL is not set, nothing answers on 127.0.0.1:${port}, and ${reason}.`,
        "Install Redis and run again:",
        "  Debian/Ubuntu: sudo apt-get install redis-server",
        "  macOS:         brew install redis",
        "or point REDIS_URL at a running server, e.g. REDIS_URL=redis://127.0.0.1:6379 npm start",
      ].join("\n"),
      { cause: error },
    );
  }
}
