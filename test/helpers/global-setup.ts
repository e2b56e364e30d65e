import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { Redis } from "ioredis";
import type { TestProject } from "vitest/node";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../dev/standins/upstash/index.js";
import { LIBRARY } from "../../shared/scripts.js";
import { UPSTASH_LIBRARY } from "../../shared/stores/upstash.js";
import { BUNDLE_OPTIONS } from "./bundle.js";
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
    /** The `leaseq` command bundled from its source for this run (test/cli/cli-run.ts). */
    cliBundle: string;
  }
}

const runPrefix = `t${randomBytes(3).toString("hex")}`;
/** In the repository (so its packages resolve from node_modules), removed at teardown. */
const cliBundle = fileURLToPath(new URL(`../../node_modules/.cache/leaseq-test/cli-${runPrefix}.mjs`, import.meta.url));
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
  // The CLI tests run `leaseq` some 200 times: from one bundle of its source (esbuild, its packages
  // left to node_modules), not through tsx's loader each time, which costs most of a CPU second.
  await build({
    ...BUNDLE_OPTIONS,
    entryPoints: [fileURLToPath(new URL("../../cli/bin.ts", import.meta.url))],
    outfile: cliBundle,
  });
  project.provide("cliBundle", cliBundle);
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
      // The function libraries this build's stores loaded (shared/scripts.ts), so a run leaves
      // nothing on a shared Redis; a run of the same build still going loads them again on its
      // next call, as any store does after FUNCTION DELETE.
      for (const name of [LIBRARY.name, UPSTASH_LIBRARY.name]) {
        await redis.call("FUNCTION", "DELETE", name).catch((error: unknown) => {
          if (!/Library not found/i.test(String(error))) throw error;
        });
      }
    } finally {
      redis.disconnect();
    }
  }
  await endpoint?.close();
  await started?.stop();
  // The CLI's bundle, and the children's bundles of every test process of this run (bundle.ts).
  const cache = dirname(cliBundle);
  for (const name of existsSync(cache) ? readdirSync(cache) : []) {
    if (name.includes(runPrefix)) rmSync(join(cache, name), { force: true });
  }
}
