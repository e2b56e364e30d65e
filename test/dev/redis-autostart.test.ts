import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NoRedisError, resolveRedis } from "../../dev/redis.js";
import { runNode } from "../cli/cli-run.js";
import { freePort, pingRedis } from "../helpers/redis-server.js";
import { redisUrl } from "../helpers/stores.js";

describe("npm start finds or starts Redis", () => {
  it("uses REDIS_URL when it is set", async () => {
    const redis = await resolveRedis({ REDIS_URL: "redis://example.invalid:6379" });
    expect(redis).toMatchObject({ url: "redis://example.invalid:6379", source: "env" });
  });

  const testRedis = new URL(redisUrl());
  it.skipIf(testRedis.hostname !== "127.0.0.1" || testRedis.password !== "")(
    "uses the server answering on the default port",
    async () => {
      const port = testRedis.port || "6379";
      const redis = await resolveRedis({ LEASEQ_DEFAULT_REDIS_PORT: port });
      expect(redis).toMatchObject({ url: `redis://127.0.0.1:${port}`, source: "default" });
    },
  );

  it("starts redis-server from PATH on a free port when nothing answers, and stop() ends it", async () => {
    const deadPort = await freePort();
    const redis = await resolveRedis({ LEASEQ_DEFAULT_REDIS_PORT: String(deadPort), PATH: process.env.PATH });
    expect(redis.source).toBe("started");
    const port = Number(new URL(redis.url).port);
    expect(port).not.toBe(deadPort);
    expect(await pingRedis("127.0.0.1", port)).toBe(true);
    await redis.stop();
    expect(await pingRedis("127.0.0.1", port)).toBe(false);
  });

  it("applies the one connection rule: several credential sets, or Upstash ones alone, are refused naming them", async () => {
    await expect(
      resolveRedis({
        REDIS_URL: "redis://127.0.0.1:6379",
        UPSTASH_REDIS_REST_URL: "https://x.upstash.io",
        UPSTASH_REDIS_REST_TOKEN: "t",
      }),
    ).rejects.toThrow(
      "more than one Redis connection is configured (UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN, REDIS_URL are set)",
    );
    await expect(
      resolveRedis({ UPSTASH_SECRET_ARN: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:x-AbC123" }),
    ).rejects.toThrow(
      "UPSTASH_SECRET_ARN is set, but the local stack runs its own Upstash-compatible endpoint in front of a Redis it reaches over TCP",
    );
  });

  it("rejects a LEASEQ_DEFAULT_REDIS_PORT that is not a port", async () => {
    await expect(resolveRedis({ LEASEQ_DEFAULT_REDIS_PORT: "http" })).rejects.toThrow(
      'LEASEQ_DEFAULT_REDIS_PORT must be a port from 1 to 65535, got "http"',
    );
  });

  it("fails with install instructions when PATH has no redis-server and nothing answers", {
    timeout: 60_000,
  }, async () => {
    // A PATH holding nothing at all: node is spawned by its absolute path.
    const emptyPath = mkdtempSync(join(tmpdir(), "leaseq-no-redis-"));
    const deadPort = await freePort();
    const result = await runNode(
      ["--import", "tsx", "cli/bin.ts", "dev", "--exit-when-drained", "--sqs-port=0", "--dashboard-port=0"],
      {
        PATH: emptyPath,
        HOME: process.env.HOME,
        LEASEQ_DEFAULT_REDIS_PORT: String(deadPort),
      },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(
      `No Redis found: REDIS_URL is not set, nothing answers on 127.0.0.1:${deadPort}, and redis-server is not on PATH.`,
    );
    expect(result.stderr).toContain("Debian/Ubuntu: sudo apt-get install redis-server");
    expect(result.stderr).toContain("macOS:         brew install redis");
    expect(result.stderr).toContain("REDIS_URL=redis://127.0.0.1:6379 npm start");
  });

  it("the same, in-process: NoRedisError, and no temp dir left behind", async () => {
    const emptyPath = mkdtempSync(join(tmpdir(), "leaseq-no-redis-"));
    // os.tmpdir() follows TMPDIR: a private one shows exactly what this call leaves behind.
    const privateTmp = mkdtempSync(join(tmpdir(), "leaseq-tmp-"));
    const savedTmp = process.env.TMPDIR;
    process.env.TMPDIR = privateTmp;
    try {
      const error = await resolveRedis({ PATH: emptyPath, LEASEQ_DEFAULT_REDIS_PORT: String(await freePort()) }).catch(
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(NoRedisError);
      expect((error as NoRedisError).message).toContain("redis-server is not on PATH");
    } finally {
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
    }
    expect(readdirSync(privateTmp)).toEqual([]);
  });
});
