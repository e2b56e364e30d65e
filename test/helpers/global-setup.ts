import type { TestProject } from "vitest/node";
import { pingRedis, type StartedRedis, startRedisServer } from "./redis-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

let started: StartedRedis | undefined;

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
}

export async function teardown(): Promise<void> {
  await started?.stop();
}
