// Helpers the endpoint tests share: an endpoint on the test Redis for a file, a plain-fetch client,
// and unique keys removed after each test.
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll } from "vitest";
import {
  startUpstashEndpoint,
  type UpstashEndpoint,
  type UpstashEndpointOptions,
} from "../../../dev/standins/upstash/index.js";
import { rawClient, redisUrl, uniqueQueueName } from "../../helpers/stores.js";

export interface Answer {
  status: number;
  text: string;
}

/** A POST function for `endpoint`: `body` is JSON-encoded unless already a string. */
export function poster(endpoint: () => Pick<UpstashEndpoint, "url" | "token">) {
  return async (
    path: string,
    body: unknown,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<Answer> => {
    const { url, token } = endpoint();
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
      signal,
    });
    return { status: response.status, text: await response.text() };
  };
}

/** Unique key names, and a cleanup that deletes every one handed out (tests name each key they write through it). */
export function keyMaker(prefix: string) {
  const made: string[] = [];
  return {
    key(name: string): string {
      const unique = `${prefix}:${uniqueQueueName(name)}`;
      made.push(unique);
      return unique;
    },
    async cleanup(redis: Redis): Promise<void> {
      const keys = made.splice(0);
      if (keys.length > 0) await redis.del(...keys);
    },
  };
}

/**
 * For a test file or describe block: an endpoint on the test Redis with `options`, started before
 * its tests and closed after them; `redis`, a raw client to check what it wrote; `key(name)`, key
 * names deleted after each test (as are the faults added to the endpoint); `post`, a POST to it.
 */
export function endpointFixture(prefix: string, options: Omit<UpstashEndpointOptions, "redisUrl"> = {}) {
  const keys = keyMaker(prefix);
  const redis = rawClient();
  let started: UpstashEndpoint | undefined;
  const endpoint = (): UpstashEndpoint => {
    if (!started) throw new Error("the endpoint starts in beforeAll: use it inside a test");
    return started;
  };
  beforeAll(async () => {
    started = await startUpstashEndpoint({ redisUrl: redisUrl(), ...options });
  });
  afterAll(async () => {
    await started?.close();
    redis.disconnect();
  });
  afterEach(async () => {
    started?.faults.clear();
    await keys.cleanup(redis);
  });
  return { endpoint, redis, key: keys.key, post: poster(endpoint) };
}
