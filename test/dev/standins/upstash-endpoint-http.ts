// Helpers the endpoint tests share: a plain-fetch client, and unique keys removed after each test.
import type { Redis } from "ioredis";
import type { UpstashEndpoint } from "../../../dev/standins/upstash/index.js";
import { uniqueQueueName } from "../../helpers/stores.js";

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
