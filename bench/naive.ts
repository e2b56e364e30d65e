import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { type Backlog, type Contender, enqueueBatches, loadBatches, timed } from "./contender.js";

const claimScript = readFileSync(new URL("./naive-claim.lua", import.meta.url), "utf8");

import { type BenchTask, naiveScore, payloadText, taskIndex } from "./workload.js";

type NaiveClient = Redis & {
  naiveClaim(queue: string, processing: string, payload: string, count: number, now: number): Promise<string[]>;
};

export interface NaiveKeys {
  queue: string;
  processing: string;
  payload: string;
  done: string;
}

export function naiveKeys(name: string): NaiveKeys {
  const base = `naive:{${name}}:`;
  return { queue: `${base}queue`, processing: `${base}processing`, payload: `${base}payload`, done: `${base}done` };
}

/** An ioredis client with the claim script defined (EVALSHA, EVAL once on NOSCRIPT). */
export async function naiveClient(url: string): Promise<NaiveClient> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.defineCommand("naiveClaim", { numberOfKeys: 3, lua: claimScript });
  await client.ping();
  return client as NaiveClient;
}

/** Enqueue of the naive design: one pipeline of ZADD queue + HSET payload per batch. */
export async function naiveEnqueue(client: Redis, keys: NaiveKeys, tasks: readonly BenchTask[]): Promise<void> {
  const scores: Array<string | number> = [];
  const payloads: string[] = [];
  for (const task of tasks) {
    scores.push(naiveScore(taskIndex(task.id)), task.id);
    payloads.push(task.id, payloadText(task));
  }
  const replies = await client
    .pipeline()
    .zadd(keys.queue, ...scores)
    .hset(keys.payload, ...payloads)
    .exec();
  const failed = replies?.find(([error]) => error);
  if (failed) throw failed[0];
}

/** Claims up to `count`: id, payload pairs. */
export async function naiveClaim(client: NaiveClient, keys: NaiveKeys, count: number): Promise<string[]> {
  return client.naiveClaim(keys.queue, keys.processing, keys.payload, count, Date.now());
}

/** The ack of the naive design, per task: MULTI ZREM processing; SADD done; EXEC. */
export async function naiveAck(client: Redis, keys: NaiveKeys, id: string): Promise<void> {
  const replies = await client.multi().zrem(keys.processing, id).sadd(keys.done, id).exec();
  if (replies === null || replies.some(([error]) => error)) throw new Error(`naive: ack of ${id} failed`);
}

export async function naiveContender(setup: {
  url: string;
  queueName: string;
  batchSize: number;
  consumers: number;
}): Promise<Contender> {
  const keys = naiveKeys(setup.queueName);
  const producer = await naiveClient(setup.url);
  const consumers = await Promise.all(Array.from({ length: setup.consumers }, () => naiveClient(setup.url)));
  // Loads the script before the measurement, as leaseq's setup does.
  await naiveClaim(producer, naiveKeys(`${setup.queueName}-warm`), 1);
  return {
    async enqueue(tasks) {
      await enqueueBatches(tasks, (batch) => naiveEnqueue(producer, keys, batch));
    },
    async drain() {
      const counts = await Promise.all(
        consumers.map(async (client) => {
          let acked = 0;
          for (;;) {
            const claimed = await naiveClaim(client, keys, setup.batchSize);
            if (claimed.length === 0) return acked;
            for (let i = 0; i < claimed.length; i += 2) {
              JSON.parse(claimed[i + 1]);
              await naiveAck(client, keys, claimed[i]);
              acked++;
            }
          }
        }),
      );
      return counts.reduce((a, b) => a + b, 0);
    },
    async close() {
      await Promise.all([producer, ...consumers].map((client) => client.quit()));
    },
  };
}

/** The naive queue holding a backlog; claimed tasks go back with their score, untimed. */
export async function naiveBacklog(setup: { url: string; queueName: string }): Promise<Backlog> {
  const keys = naiveKeys(setup.queueName);
  const client = await naiveClient(setup.url);
  await naiveClaim(client, naiveKeys(`${setup.queueName}-warm`), 1);
  return {
    async load(tasks) {
      await loadBatches(tasks, (batch) => naiveEnqueue(client, keys, batch));
    },
    async claimSample(count) {
      let claimed: string[] = [];
      const ms = await timed(async () => {
        claimed = await naiveClaim(client, keys, count);
      });
      if (claimed.length !== 2 * count) throw new Error(`naive: claimed ${claimed.length / 2} of ${count}`);
      const back: Array<string | number> = [];
      const ids: string[] = [];
      for (let i = 0; i < claimed.length; i += 2) {
        back.push(naiveScore(taskIndex(claimed[i])), claimed[i]);
        ids.push(claimed[i]);
      }
      await client
        .pipeline()
        .zrem(keys.processing, ...ids)
        .zadd(keys.queue, ...back)
        .exec();
      return ms;
    },
    memoryKeys: () => ({ "payload hash": keys.payload, "queue zset": keys.queue }),
    close: async () => {
      await client.quit();
    },
  };
}
