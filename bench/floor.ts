// The floor (bench/floor.lua): the least Redis work of an idempotent enqueue and a fenced lease, for
// `npm run bench -- --instructions`. Not a queue anyone should run: it checks nothing and has one
// priority, no retries, delays, groups, types or wake-ups. It shows what leaseq's promises cost at
// the least, apart from what its features cost, next to the naive design that makes neither.
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { type Contender, enqueueBatches } from "./contender.js";
import { payloadText } from "./workload.js";

const script = readFileSync(new URL("./floor.lua", import.meta.url), "utf8");

/** Where the lease is kept: a state record per task in the task hash (leaseq's way), or only the leased set's score. */
export type FloorLease = "record" | "score";

type FloorClient = Redis & { floor(...args: Array<string | number>): Promise<Array<string | number>> };

export function floorKeys(name: string): string[] {
  return ["task", "ready", "seq", "leased", "done"].map((key) => `floor:{${name}}:${key}`);
}

async function floorClient(url: string): Promise<FloorClient> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.defineCommand("floor", { numberOfKeys: 5, lua: script });
  await client.ping();
  return client as FloorClient;
}

export async function floorContender(setup: {
  url: string;
  queueName: string;
  lease: FloorLease;
  batchSize: number;
  consumers: number;
}): Promise<Contender> {
  const keys = floorKeys(setup.queueName);
  const call = (client: FloorClient, op: string, ...args: Array<string | number>) =>
    client.floor(...keys, op, setup.lease, Date.now(), ...args);
  const producer = await floorClient(setup.url);
  const consumers = await Promise.all(Array.from({ length: setup.consumers }, () => floorClient(setup.url)));
  // Loads the script before the measurement, as leaseq's setup does.
  await producer.floor(...floorKeys(`${setup.queueName}-warm`), "claim", setup.lease, Date.now(), 1);
  return {
    async enqueue(tasks) {
      await enqueueBatches(tasks, async (batch) => {
        const replies = await call(producer, "enqueue", ...batch.flatMap((task) => [task.id, payloadText(task)]));
        if (replies.some((status) => status !== 0)) throw new Error("floor: an enqueue was refused");
      });
    },
    async drain() {
      const counts = await Promise.all(
        consumers.map(async (client) => {
          let acked = 0;
          for (;;) {
            const claimed = (await call(client, "claim", setup.batchSize)) as string[];
            if (claimed.length === 0) return acked;
            const acks: string[] = [];
            for (let i = 0; i < claimed.length; i += 3) {
              JSON.parse(claimed[i + 2]);
              acks.push(claimed[i], claimed[i + 1]);
            }
            const replies = await call(client, "ack", ...acks);
            if (replies.some((status) => status !== 0)) throw new Error("floor: an ack was refused");
            acked += acks.length / 2;
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
