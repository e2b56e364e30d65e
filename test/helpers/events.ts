import { inject } from "vitest";
import type { Adapter } from "./stores.js";

export { lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from "./lambda-events.js";

/** The environment a function needs to reach the test Redis over `adapter`. */
export function functionEnv(
  adapter: Adapter,
  queue: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  const connection: Record<string, string> =
    adapter.name === "upstash"
      ? { UPSTASH_REDIS_REST_URL: inject("upstashUrl"), UPSTASH_REDIS_REST_TOKEN: inject("upstashToken") }
      : { REDIS_URL: inject("redisUrl") };
  return { LEASEQ_QUEUE: queue, LEASEQ_CLOCK_SKEW_MS: "0", ...connection, ...extra };
}

/**
 * This process's environment without any Redis connection variable: a child given it plus
 * functionEnv() sees exactly one connection, as the connection rule requires.
 */
export function envWithoutConnection(): Record<string, string | undefined> {
  const env = { ...process.env };
  for (const name of ["REDIS_URL", "UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "UPSTASH_SECRET_ARN"])
    delete env[name];
  return env;
}

/** Runs `fn` and returns what it wrote to stdout (Powertools logs and EMF go there). */
export async function captureStdout<T>(
  fn: () => Promise<T>,
  options: { stderr?: boolean } = {},
): Promise<{ result: T; lines: string[] }> {
  const chunks: string[] = [];
  // Powertools writes WARN and ERROR lines to stderr: `stderr: true` collects those too.
  const streams = options.stderr ? [process.stdout, process.stderr] : [process.stdout];
  const writes = streams.map((stream) => stream.write.bind(stream));
  for (const stream of streams) {
    stream.write = ((chunk: string | Uint8Array, ..._rest: unknown[]) => {
      chunks.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString());
      return true;
    }) as typeof stream.write;
  }
  try {
    const result = await fn();
    return { result, lines: chunks.join("").split("\n").filter(Boolean) };
  } finally {
    streams.forEach((stream, i) => {
      stream.write = writes[i];
    });
  }
}
