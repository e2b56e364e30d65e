// The benchmark's code paths, tiny, against a redis-server of this file's own (INFO commandstats
// counts every client, so the shared test server would make the counts meaningless).
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runBacklog } from "../../bench/backlog.js";
import { floorContender, floorKeys } from "../../bench/floor.js";
import { leaseqBacklog } from "../../bench/leaseq.js";
import { naiveBacklog, naiveKeys } from "../../bench/naive.js";
import { type BenchRedis, countCommands, startBenchRedis } from "../../bench/redis.js";
import { percentile, spread } from "../../bench/stats.js";
import { throughputRound } from "../../bench/throughput.js";
import { bullmqCase, leaseqTcpCase, naiveCase } from "../../bench/throughput-cases.js";
import { TcpStore } from "../../shared/stores/tcp.js";

let redis: BenchRedis;
beforeAll(async () => {
  redis = await startBenchRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const quiet = () => undefined;

describe("command counter", () => {
  it("counts exactly the commands of the work, its own INFO left out", async () => {
    const counted = await countCommands(redis.admin, async () => {
      await redis.admin.set("a", "1");
      await redis.admin.set("b", "2");
      await redis.admin.eval("redis.call('GET', 'a'); return redis.call('GET', 'b')", 0);
    });
    expect(counted.byCommand).toEqual({ set: 2, eval: 1, get: 2 });
    expect(counted.total).toBe(5);
  });
});

describe("throughput rounds", () => {
  it("naive design: every task acked with one MULTI ZREM SADD EXEC; the claim script pops in batches", async () => {
    const round = await throughputRound(redis, naiveCase(redis.url, { batchSize: 5, consumers: 2 }), 60);
    expect(round.byCommand).toMatchObject({ multi: 60, zrem: 60, sadd: 60, exec: 60, zpopmin: 12 + 2 });
    // 12 full claims of 5, then one empty claim per consumer ends its loop (ioredis sends a
    // connection's first call of a script as EVAL).
    expect((round.byCommand.evalsha ?? 0) + (round.byCommand.eval ?? 0)).toBe(14);
    expect(round.tasksPerSec).toBeGreaterThan(0);
  });

  it("leaseq: all tasks acked, a batch of 20 costs well under one command per task", async () => {
    const item = leaseqTcpCase(redis.url, { batchSize: 20, consumers: 2 });
    await throughputRound(redis, item, 20); // loads the function library, as the warm-up round does
    const round = await throughputRound(redis, item, 100);
    // 1 enqueue of 100, 5 claims of 20 + 2 empty ones, 5 settles, each one FCALL of its function.
    expect(round.byCommand.fcall).toBe(1 + 7 + 5);
    expect(round.byCommand.evalsha ?? 0).toBe(0);
    expect(round.commandsPerTask).toBeLessThan(1);
    expect(round.redisCpuUsPerTask).toBeGreaterThanOrEqual(0);
  });

  it("BullMQ: every job completes through a real Worker", async () => {
    const round = await throughputRound(redis, bullmqCase(redis, 5), 30);
    expect(round.commandsPerTask).toBeGreaterThan(5);
  });
});

describe("the floor (bench/floor.lua): the least work of leaseq's promises, and it keeps them", () => {
  for (const lease of ["record", "score"] as const) {
    it(`lease kept as a ${lease}: a known id is not enqueued again, and an ack fences on the lease's token`, async () => {
      const name = `floor-${lease}`;
      const keys = floorKeys(name);
      const floor = (...args: Array<string | number>) =>
        redis.admin.eval(readFileSync(new URL("../../bench/floor.lua", import.meta.url), "utf8"), 5, ...keys, ...args);
      const now = Date.now();
      expect(await floor("enqueue", lease, now, "a", '{"n":1}', "b", '{"n":2}')).toEqual([0, 0]);
      // The same id again (a resend): nothing written.
      expect(await floor("enqueue", lease, now, "a", '{"n":3}')).toEqual([5]);
      const claimed = (await floor("claim", lease, now, 5)) as string[];
      expect(claimed.filter((_, i) => i % 3 !== 1)).toEqual(["a", '{"n":1}', "b", '{"n":2}']);
      // A stale or made-up token changes nothing; the lease's own token acks.
      expect(await floor("ack", lease, now, "a", `${claimed[1]}0`, "b", "x")).toEqual([3, 3]);
      expect(await redis.admin.zcard(keys[3])).toBe(2);
      expect(await floor("ack", lease, now, "a", claimed[1], "b", claimed[4])).toEqual([0, 0]);
      expect(await redis.admin.zcard(keys[3])).toBe(0);
      expect(await redis.admin.zcard(keys[4])).toBe(2);
      // An acked task stays known: sent again, it is a duplicate, and nothing is claimable.
      expect(await floor("enqueue", lease, now, "b", '{"n":2}')).toEqual([5]);
      expect(await floor("claim", lease, now, 5)).toEqual([]);
      await redis.admin.del(...keys);
    });
  }

  it("drains every task through the contender the instructions mode runs", async () => {
    const { makeTasks } = await import("../../bench/workload.js");
    for (const lease of ["record", "score"] as const) {
      const floor = await floorContender({
        url: redis.url,
        queueName: `floor-drain-${lease}`,
        lease,
        batchSize: 7,
        consumers: 2,
      });
      await floor.enqueue(makeTasks(0, 50));
      expect(await floor.drain()).toBe(50);
      await floor.close();
      await redis.admin.del(...floorKeys(`floor-drain-${lease}`), ...floorKeys(`floor-drain-${lease}-warm`));
    }
  });
});

describe("the instructions mode's other queues", () => {
  // One small round each, as bench/instructions.ts runs them (there under valgrind).
  it("bee-queue and groupmq: every job completes, and each closes its connections", async () => {
    const { beeQueueContender } = await import("../../bench/bee-queue.js");
    const { groupmqContender } = await import("../../bench/groupmq.js");
    const { makeTasks } = await import("../../bench/workload.js");
    const clients = async () => Number(/^connected_clients:(\d+)/m.exec(await redis.admin.info("clients"))?.[1]);
    const before = await clients();
    const contenders = [
      await beeQueueContender({ host: redis.host, port: redis.port, queueName: "bee", concurrency: 5 }),
      await groupmqContender({ url: redis.url, queueName: "gmq", groups: 7, concurrency: 5 }),
    ];
    for (const contender of contenders) {
      try {
        await contender.enqueue(makeTasks(0, 30));
        expect(await contender.drain()).toBe(30);
      } finally {
        await contender.close();
      }
    }
    await expect.poll(clients, { timeout: 5_000 }).toBe(before);
  });
});

describe("backlog", () => {
  it("a naive claim sample puts its tasks back, so the backlog stays put", async () => {
    const backlog = await naiveBacklog({ url: redis.url, queueName: "keep" });
    try {
      const { makeTasks } = await import("../../bench/workload.js");
      await backlog.load(makeTasks(0, 50));
      const ms = await backlog.claimSample(20);
      expect(ms).toBeGreaterThan(0);
      expect(await redis.admin.zcard(naiveKeys("keep").queue)).toBe(50);
      expect(await redis.admin.zcard(naiveKeys("keep").processing)).toBe(0);
    } finally {
      await backlog.close();
    }
  });

  it("leaseq: memory per task and claim latency at each level", async () => {
    const result = await runBacklog(
      redis,
      {
        system: "leaseq",
        levels: [100, 500],
        open: (queueName) => leaseqBacklog({ openStore: () => TcpStore.fromUrl(redis.url), queueName }),
      },
      { memoryTasks: 500, samplesPerRound: 5, rounds: 2, warmupSamples: 1, log: quiet },
    );
    expect(result.bytesPerTask).toBeGreaterThan(50);
    expect(Object.keys(result.bytesPerTaskByKey)).toEqual(["task hash", "ready zset"]);
    expect(result.latency.map((point) => point.waiting)).toEqual([100, 500]);
    expect(result.latency[0].p99Ms.rounds).toHaveLength(2);
  });
});

describe("statistics", () => {
  it("nearest-rank percentiles and spread", () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(spread([2, 4, 3])).toMatchObject({ median: 3, min: 2, max: 4, spreadPct: (2 / 3) * 100 });
  });
});
