import type { TestProject } from "vitest/node";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../local/upstash-endpoint/index.js";
import { pingRedis, type StartedRedis, startRedisServer } from "./redis-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    /** The local Upstash-compatible endpoint in front of `redisUrl`. */
    upstashUrl: string;
    upstashToken: string;
  }
}

let started: StartedRedis | undefined;
let endpoint: UpstashEndpoint | undefined;

/** Uses REDIS_URL, else 127.0.0.1:6379 if it answers, else starts redis-server from PATH. */
export async function setup(project: TestProject): Promise<void> {
  let url = process.env.REDIS_URL;
  if (!url) {
    if (await pingRedis("127.0.0.1", 6379)) url = "redis://127.0.0.1:6379";
    else {
      started = await startRedisServer();
      url = started.url;
    }
  }
  process.env.REDIS_URL = url;
  project.provide("redisUrl", url);
  // One endpoint for the whole run, so every queue test also runs over @upstash/redis.
  endpoint = await startUpstashEndpoint({ redisUrl: url, poolSize: 16 });
  project.provide("upstashUrl", endpoint.url);
  project.provide("upstashToken", endpoint.token);
}

export async function teardown(): Promise<void> {
  await endpoint?.close();
  await started?.stop();
}
