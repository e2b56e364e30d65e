import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import type { TestProject } from "vitest/node";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../dev/standins/upstash/index.js";
import { deleteMatching } from "./redis-keys.js";
import { pingRedis, type StartedRedis, startRedisServer } from "./redis-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    /** The local Upstash-compatible endpoint in front of `redisUrl`. */
    upstashUrl: string;
    upstashToken: string;
    /** Every queue name of this run starts with it (test/helpers/stores.ts uniqueQueueName). */
    runPrefix: string;
  }
}

const runPrefix = `t${randomBytes(3).toString("hex")}`;
let redisUrl = "";

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
  redisUrl = url;
  project.provide("redisUrl", url);
  project.provide("runPrefix", runPrefix);
  // One endpoint for the whole run, so every queue test also runs over @upstash/redis.
  endpoint = await startUpstashEndpoint({ redisUrl: url, poolSize: 16 });
  project.provide("upstashUrl", endpoint.url);
  project.provide("upstashToken", endpoint.token);
}

export async function teardown(): Promise<void> {
  // What a crashed or interrupted test file left behind: every queue of this run shares the prefix,
  // and so do the plain keys of the protocol tests (e.g. compat:<prefix>-...).
  if (redisUrl) {
    const redis = new Redis(redisUrl);
    try {
      const queues = await deleteMatching(redis, `leaseq:{${runPrefix}-*`);
      if (queues > 0) console.warn(`[cleanup] deleted ${queues} keys a test left under leaseq:{${runPrefix}-*`);
      await deleteMatching(redis, `*${runPrefix}-*`);
    } finally {
      redis.disconnect();
    }
  }
  await endpoint?.close();
  await started?.stop();
}
