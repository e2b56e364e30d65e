import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../dev/standins/upstash/index.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { UpstashStore } from "../../shared/stores/upstash.js";
import { type StartedRedis, startRedisServer } from "../helpers/redis-server.js";

const NOW = 1_800_000_000_000;
const TASKS = 2_000;
const BATCH = 20;
const ORDERED_TASKS = 1_000;
const ORDERED_GROUPS = 100;

/** Stores to measure, each opened against the private server of this file. */
const budgetStores: Array<{ name: string; open: (redisUrl: string) => Promise<Store> }> = [
  { name: "tcp", open: async (url) => TcpStore.fromUrl(url) },
  {
    name: "upstash",
    open: async () => new UpstashStore({ url: endpoint.url, token: endpoint.token }),
  },
];

/** Sum of `calls` over every command in INFO commandstats (commands inside scripts included). */
async function totalCommands(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (match[1] !== "info") total += Number(match[2]);
  }
  return total;
}

// A private server: INFO commandstats counts every client, so a shared one would be noisy.
let server: StartedRedis;
let endpoint: UpstashEndpoint;
let redis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  endpoint = await startUpstashEndpoint({ redisUrl: server.url });
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await endpoint.close();
  await server.stop();
});

describe.each(budgetStores)("Redis command budget over $name", ({ name, open }) => {
  it(`runs enqueue, claim and ack of ${TASKS} tasks in batches of ${BATCH} in at most 1.0 command per task`, async () => {
    const store = await open(server.url);
    const queue = new Queue(store, { name: `budget-${Date.now()}` });
    // Load the scripts first, as a warm Lambda has them: the budget is the steady state.
    await queue.stats({ now: NOW });
    await queue.enqueue([{ id: "warm", type: "t" }], { now: NOW });
    await queue.ack(await queue.claim({ count: 1, now: NOW }), { now: NOW });

    const before = await totalCommands(redis);
    for (let start = 0; start < TASKS; start += BATCH) {
      const tasks = Array.from({ length: BATCH }, (_, i) => ({
        id: `task-${start + i}`,
        type: "t",
        payload: { n: start + i },
      }));
      await queue.enqueue(tasks, { now: NOW });
    }
    let acked = 0;
    for (;;) {
      const claimed = await queue.claim({ count: BATCH, now: NOW });
      if (claimed.length === 0) break;
      const results = await queue.ack(claimed, { now: NOW });
      acked += results.filter((r) => r.status === "ok").length;
    }
    const used = (await totalCommands(redis)) - before;
    await store.close();

    const perTask = used / TASKS;
    console.log(
      `command budget over ${name}: ${used} Redis commands for ${TASKS} tasks = ${perTask.toFixed(3)} per task`,
    );
    expect(acked).toBe(TASKS);
    expect(perTask).toBeLessThanOrEqual(1.0);
  });

  it(`runs ${ORDERED_TASKS} tasks over ${ORDERED_GROUPS} ordered groups in order, in at most 1.5 commands per task (the parked tasks let out named by their group's record)`, async () => {
    const store = await open(server.url);
    const queue = new Queue(store, { name: `budget-ordered-${Date.now()}`, settings: { groups: { ordered: true } } });
    await queue.configure();
    await queue.stats({ now: NOW });
    const before = await totalCommands(redis);
    // Task i in group g<i mod groups>: each group's tasks arrive interleaved with the others'.
    for (let start = 0; start < ORDERED_TASKS; start += 100) {
      const tasks = Array.from({ length: 100 }, (_, i) => ({
        id: `o-${start + i}`,
        type: "t",
        group: `g${(start + i) % ORDERED_GROUPS}`,
      }));
      await queue.enqueue(tasks, { now: NOW });
    }
    const ran = new Map<string, number[]>();
    for (;;) {
      const claimed = await queue.claim({ count: BATCH, now: NOW });
      if (claimed.length === 0) break;
      for (const task of claimed) {
        const n = Number(task.id.slice(2));
        const group = `g${n % ORDERED_GROUPS}`;
        ran.set(group, [...(ran.get(group) ?? []), n]);
      }
      await queue.ack(claimed, { now: NOW });
    }
    const used = (await totalCommands(redis)) - before;
    await store.close();
    const perTask = used / ORDERED_TASKS;
    console.log(
      `ordered budget over ${name}: ${used} Redis commands for ${ORDERED_TASKS} tasks = ${perTask.toFixed(3)} per task`,
    );
    expect([...ran.values()].flat()).toHaveLength(ORDERED_TASKS);
    for (const [group, order] of ran) expect(order, group).toEqual([...order].sort((a, b) => a - b));
    expect(perTask).toBeLessThanOrEqual(1.5);
  });
});
