// A queue of N partitions on real Redis, over both stores (docs/partitions.md): tasks go where their
// routing key says and nowhere else, ordered groups keep their order, flow keys stay exact, every
// task runs once, tokens carry their partition back, and a queue of one partition is the queue as
// it always was.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../dev/standins/upstash/index.js";
import { InvalidInputError } from "../../shared/errors.js";
import { PartitionedQueue, STICKY_CLAIMS } from "../../shared/partitioned-queue.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { UpstashStore } from "../../shared/stores/upstash.js";
import type { ClaimedTask, TaskInput } from "../../shared/types.js";
import { expectClean } from "../helpers/check.js";
import { claimAny, turnUnderLoad } from "../helpers/partitions.js";
import { type StartedRedis, startRedisServer } from "../helpers/redis-server.js";
import { adapters, rawClient, redisUrl, uniqueQueueName } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

/** Claims (at most `count` each) and acks until no partition has anything; the ids run, in order. */
async function drain(queue: PartitionedQueue, count: number): Promise<ClaimedTask[]> {
  const ran: ClaimedTask[] = [];
  for (;;) {
    const claimed = await claimAny(queue, count, NOW);
    if (claimed.length === 0) return ran;
    ran.push(...claimed);
    const results = await queue.ack(claimed, { now: NOW });
    expect(results.map((result) => result.status)).toEqual(claimed.map(() => "ok"));
  }
}

/** `store` as a queue sees it, counting the heads a partitioned claim reads (the read-only script "list"). */
function countingHeadReads(store: Store): { store: Store; count: number } {
  const reads = {
    count: 0,
    store: {
      ...store,
      evalScript: (script, keys, args) => {
        if (script.name === "list") reads.count++;
        return store.evalScript(script, keys, args);
      },
      close: () => store.close(),
    } as Store,
  };
  return reads;
}

for (const adapter of adapters) {
  describe(`a partitioned queue over ${adapter.name}`, () => {
    const raw = rawClient();
    const stores: Store[] = [];
    afterAll(async () => {
      for (const store of stores) await store.close();
      raw.disconnect();
    });
    const open = async () => {
      const store = await adapter.open();
      stores.push(store);
      return store;
    };

    it("of one partition is the queue as it always was: the same keys, tokens and tasks", async () => {
      const name = uniqueQueueName("p1");
      const store = await open();
      const partitioned = new PartitionedQueue(store, { name, partitions: 1, settings: { trustCallerClock: true } });
      const plain = new Queue(store, { name, settings: { trustCallerClock: true } });
      expect(partitioned.partitions[0].keys).toEqual(plain.keys);
      await partitioned.configure();
      await partitioned.enqueue(
        [
          { id: "a", type: "t", payload: "{}" },
          { id: "b", type: "t", payload: "{}", group: "g" },
        ],
        { now: NOW },
      );
      // What the partitioned queue enqueued, the plain one claims and acks with its own tokens.
      const claimed = await plain.claim({ count: 5, now: NOW });
      expect(claimed.map((task) => task.id).sort()).toEqual(["a", "b"]);
      expect((await partitioned.ack(claimed, { now: NOW })).map((result) => result.status)).toEqual(["ok", "ok"]);
      await expectClean(plain, NOW);
    });

    it("of 4 partitions keeps each task in its routing key's partition, each group's order, each dedupe key's window", async () => {
      const name = uniqueQueueName("p4");
      const queue = new PartitionedQueue(await open(), {
        name,
        partitions: 4,
        settings: { trustCallerClock: true, groups: { ordered: true } },
      });
      await queue.configure();
      const tasks: TaskInput[] = [];
      for (let i = 0; i < 60; i++)
        tasks.push({
          id: `g${i % 6}-${Math.floor(i / 6)}`,
          type: "t",
          payload: `{"i":${i}}`,
          group: `tenant-${i % 6}`,
        });
      for (let i = 0; i < 60; i++) tasks.push({ id: `u${i}`, type: "t", payload: "{}" });
      tasks.push({ id: "d1", type: "t", payload: "{}", dedupe: { key: "once", ttlMs: 60_000 } });
      tasks.push({ id: "d2", type: "t", payload: "{}", dedupe: { key: "once", ttlMs: 60_000 } });
      // Two calls, as two producers would make them: the second's groups go on after the first's.
      const first = await queue.enqueue(tasks.slice(0, 61), { now: NOW });
      const second = await queue.enqueue(tasks.slice(61), { now: NOW });
      const results = [...first, ...second];
      expect(results.map((result) => result.id)).toEqual(tasks.map((task) => task.id));
      expect(results.at(-1)).toMatchObject({ id: "d2", status: "duplicate", existingId: "d1" });
      expect(results.slice(0, -1).every((result) => result.status === "ok")).toBe(true);

      // Every task's body is in its partition's task hash and in no other's.
      const used = new Set<number>();
      for (const task of tasks.slice(0, -1)) {
        const home = queue.partitionFor(task);
        used.add(home);
        for (const [k, partition] of queue.partitions.entries()) {
          expect(await raw.hexists(partition.keys.task, task.id), `${task.id} in partition ${k}`).toBe(
            k === home ? 1 : 0,
          );
        }
      }
      expect(used.size).toBe(4);
      // A group's tasks all in one partition.
      for (let g = 0; g < 6; g++) {
        expect(
          new Set(tasks.filter((task) => task.group === `tenant-${g}`).map((task) => queue.partitionFor(task))).size,
        ).toBe(1);
      }

      const ran = await drain(queue, 7);
      expect(ran.map((task) => task.id).sort()).toEqual(
        tasks
          .slice(0, -1)
          .map((task) => task.id)
          .sort(),
      );
      for (let g = 0; g < 6; g++) {
        const order = ran.filter((task) => task.group === `tenant-${g}`).map((task) => task.id);
        expect(order).toEqual(Array.from({ length: 10 }, (_, j) => `g${g}-${j}`));
      }
      // Tokens carry their partition: the queue's own (unprefixed) for partition 0, "<k>/..." after.
      for (const task of ran) {
        const home = queue.partitionFor(
          task.group
            ? { id: task.id, group: task.group }
            : { id: task.id, ...(task.id === "d1" ? { dedupe: { key: "once", ttlMs: 1 } } : {}) },
        );
        if (home === 0) expect(task.token).not.toContain("/");
        else expect(task.token.startsWith(`${home}/`)).toBe(true);
      }
      const stats = await queue.stats({ now: NOW });
      expect(stats.total).toMatchObject({ ready: 0, leased: 0, done: 121 });
      expect(stats.partitions.map((partition) => partition.done).reduce((a, b) => a + b, 0)).toBe(121);
      expect(stats.partitions.every((partition) => partition.done > 0)).toBe(true);
      for (const partition of queue.partitions) await expectClean(partition, NOW);
    });

    it("claims from the partition whose head has the higher priority, of the two it reads", async () => {
      const name = uniqueQueueName("pc");
      const queue = new PartitionedQueue(await open(), { name, partitions: 4, settings: { trustCallerClock: true } });
      await queue.configure();
      // One urgent task and some plain ones, in whichever partitions their ids route to.
      const urgent = { id: "urgent", type: "t", payload: "{}", priority: -5 };
      const home = queue.partitionFor(urgent);
      const plain: TaskInput[] = [];
      for (let i = 0; plain.length < 3; i++) {
        const task = { id: `plain-${i}`, type: "t", payload: "{}" };
        if (queue.partitionFor(task) !== home) plain.push(task);
      }
      await queue.enqueue([urgent, ...plain], { now: NOW });
      const other = queue.partitionFor(plain[0]);
      // Draw `home` and `other` (in both orders): the urgent task's partition wins.
      const draws = (a: number, b: number) => {
        const values = [a / 4, ((b - a - 1 + 4) % 4) / 3];
        return () => values.shift() as number;
      };
      expect(await queue.choosePartition(draws(other, home))).toBe(home);
      expect(await queue.choosePartition(draws(home, other))).toBe(home);
      expect((await queue.claim({ count: 1, now: NOW, partition: home }))[0]?.id).toBe("urgent");
    });

    it("goes back to the partition its last claim filled from, reading no head, and chooses again after a short one", async () => {
      const name = uniqueQueueName("ps");
      const reads = countingHeadReads(await open());
      const queue = new PartitionedQueue(reads.store, { name, partitions: 4, settings: { trustCallerClock: true } });
      await queue.configure();
      await queue.enqueue(
        Array.from({ length: 40 }, (_, i) => ({ id: `t${i}`, type: "t", payload: "{}" })),
        { now: NOW },
      );
      const first = await queue.claim({ count: 2, now: NOW });
      expect(first).toHaveLength(2);
      expect(reads.count).toBe(2); // the first claim chose between two heads
      const from = first[0].token.includes("/") ? Number(first[0].token.split("/")[0]) : 0;
      const second = await queue.claim({ count: 2, now: NOW });
      expect(reads.count).toBe(2); // the second went back to the same partition
      expect(second.map((task) => queue.partitionFor(task))).toEqual([from, from]);
      // A claim larger than what is left there comes back short: the next one goes to the runner-up
      // of the first choice (it had READY tasks) without a read; the one after that reads two again
      // (and two more when both it drew are empty by now, as it goes on to a second partition).
      const rest = await queue.claim({ count: 40, now: NOW, partition: from });
      expect(rest.length).toBeLessThan(40);
      const spare = await queue.claim({ count: 40, now: NOW });
      expect(reads.count).toBe(2);
      expect(spare.length).toBeGreaterThan(0);
      expect(spare.every((task) => queue.partitionFor(task) !== from)).toBe(true);
      await queue.claim({ count: 2, now: NOW });
      expect([4, 6]).toContain(reads.count);
    });

    it("goes on, in the same claim, to a partition with work when the one named has no task: two heads read", async () => {
      const name = uniqueQueueName("pn");
      const reads = countingHeadReads(await open());
      const queue = new PartitionedQueue(reads.store, { name, partitions: 3, settings: { trustCallerClock: true } });
      await queue.configure();
      const only2 = Array.from({ length: 60 }, (_, i) => ({ id: `t${i}`, type: "t", payload: "{}" }))
        .filter((task) => queue.partitionFor(task) === 2)
        .slice(0, 5);
      await queue.enqueue(only2, { now: NOW });
      const tasks = await queue.claim({ count: 3, now: NOW, partition: 0 });
      expect(tasks.map((task) => task.token.split("/")[0])).toEqual(["2", "2", "2"]);
      // Partition 0 empty: the heads of the other two read, partition 2's chosen.
      expect(reads.count).toBe(2);
      // A claim that leases some but fewer than it asked is not topped up from another partition.
      const rest = await queue.claim({ count: 3, now: NOW, partition: 2 });
      expect(rest).toHaveLength(2);
      expect(reads.count).toBe(2);
    });

    it("reads two heads again after STICKY_CLAIMS full claims in a row from one partition", async () => {
      const name = uniqueQueueName("ps2");
      const reads = countingHeadReads(await open());
      const queue = new PartitionedQueue(reads.store, { name, partitions: 2, settings: { trustCallerClock: true } });
      await queue.configure();
      await queue.enqueue(
        Array.from({ length: 300 }, (_, i) => ({ id: `t${i}`, type: "t", payload: "{}" })),
        { now: NOW },
      );
      for (let i = 0; i < STICKY_CLAIMS; i++) expect(await queue.claim({ count: 1, now: NOW })).toHaveLength(1);
      expect(reads.count).toBe(2); // the first claim's choice, then STICKY_CLAIMS - 1 claims without one
      await queue.claim({ count: 1, now: NOW });
      expect(reads.count).toBe(4);
    });

    it("refuses a token of no partition of the queue, and a stale one changes nothing", async () => {
      const name = uniqueQueueName("pt");
      const queue = new PartitionedQueue(await open(), { name, partitions: 3, settings: { trustCallerClock: true } });
      await queue.configure();
      await expect(queue.ack([{ id: "x", token: "7/1.1" }], { now: NOW })).rejects.toThrow(
        /ack: item 1 \(id "x"\) has a token of no partition of this queue \(3 partitions\)/,
      );
      await expect(queue.claim({ count: 1, now: NOW, partition: 3 })).rejects.toThrow(InvalidInputError);
      // A malformed item anywhere in the batch: refused by its place before any partition is sent its part.
      await queue.enqueue([{ id: "m", type: "t", payload: "{}" }], { now: NOW });
      const [held] = await queue.claim({ count: 1, now: NOW, partition: queue.partitionFor({ id: "m" }) });
      await expect(
        queue.settle(
          [
            { id: held.id, token: held.token, outcome: "ack" },
            { id: "n", token: "2/1.1", outcome: "later" as "ack" },
          ],
          { now: NOW },
        ),
      ).rejects.toThrow(/^settle: item 2 \(id n\): outcome must be "ack", "retry" or "fail"/);
      await expect(queue.release([{ id: "n", token: 7 as unknown as string }], { now: NOW })).rejects.toThrow(
        /^release: item 1: token must be the string a claim returned, got 7/,
      );
      expect((await queue.stats({ now: NOW })).total.leased).toBe(1); // the ack in that batch was not sent
      expect((await queue.ack([held], { now: NOW }))[0].status).toBe("ok");
      await queue.enqueue([{ id: "a", type: "t", payload: "{}" }], { now: NOW });
      const home = queue.partitionFor({ id: "a" });
      const [task] = await queue.claim({ count: 1, now: NOW, partition: home });
      const otherPartition = (home + 1) % 3;
      const stale = `${otherPartition === 0 ? "" : `${otherPartition}/`}${task.token.split("/").at(-1)}`;
      // The right token in another partition's hands: that partition has no such lease.
      expect((await queue.ack([{ id: "a", token: stale }], { now: NOW }))[0].status).not.toBe("ok");
      expect((await queue.ack([task], { now: NOW }))[0].status).toBe("ok");
    });

    it("grows from 1 partition to 4 under load, losing nothing and running nothing twice", async () => {
      const name = uniqueQueueName("pg");
      const settings = { trustCallerClock: true };
      const before = new PartitionedQueue(await open(), { name, partitions: 1, settings });
      const after = new PartitionedQueue(await open(), { name, partitions: 4, settings });
      await before.configure();
      const { sent, ran } = await turnUnderLoad(before, after, { rounds: 20, now: NOW });
      expect(sent).toHaveLength(200);
      expect([...ran.keys()].sort()).toEqual([...sent].sort());
      expect([...ran.values()].every((times) => times === 1)).toBe(true);
      const stats = await after.stats({ now: NOW });
      expect(stats.total).toMatchObject({ done: 200, ready: 0, leased: 0 });
      // Partition 0 took the tasks sent before the growth; the new partitions took a share after it.
      expect(stats.partitions.slice(1).every((partition) => partition.done > 0)).toBe(true);
      for (const partition of after.partitions) await expectClean(partition, NOW);
    });

    it("shrinks from 4 partitions to 2: new tasks go to the 2, the other 2 drain, then are dropped", async () => {
      const name = uniqueQueueName("pk");
      const settings = { trustCallerClock: true };
      const store = await open();
      const four = new PartitionedQueue(store, { name, partitions: 4, settings });
      await four.configure();
      const old = Array.from({ length: 40 }, (_, i) => ({ id: `old-${i}`, type: "t", payload: "{}" }));
      await four.enqueue(old, { now: NOW });
      const leased = await four.claim({ count: 3, now: NOW, partition: 3 });
      expect(leased).toHaveLength(3);
      // The shrink deployed: 2 partitions take new tasks, 2 and 3 drain.
      const shrinking = new PartitionedQueue(store, { name, partitions: 2, shrinkingFrom: 4, settings });
      expect(shrinking.partitions).toHaveLength(4);
      const fresh = Array.from({ length: 40 }, (_, i) => ({ id: `new-${i}`, type: "t", payload: "{}" }));
      await shrinking.enqueue(fresh, { now: NOW });
      for (const task of fresh) expect(shrinking.partitionFor(task)).toBeLessThan(2);
      expect((await shrinking.dropDrained({ now: NOW })).draining).toEqual([2, 3]);
      // Leases taken before the shrink are settled after it, in their partition.
      expect((await shrinking.ack(leased, { now: NOW })).every((result) => result.status === "ok")).toBe(true);
      const ran = await drain(shrinking, 5);
      expect(ran.length + leased.length).toBe(80);
      expect(await shrinking.dropDrained({ now: NOW })).toEqual({ dropped: [2, 3], draining: [] });
      for (const k of [2, 3]) expect(await raw.exists(...Object.values(shrinking.partitions[k].keys))).toBe(0);
      // The shrink's end: the 2-partition queue holds every task that ran, none waiting.
      const two = new PartitionedQueue(store, { name, partitions: 2, settings });
      const stats = await two.stats({ now: NOW });
      expect(stats.total).toMatchObject({ ready: 0, leased: 0, scheduled: 0 });
      expect(stats.total.done).toBe(40 + old.filter((task) => four.partitionFor(task) < 2).length);
      expect(() => new PartitionedQueue(store, { name, partitions: 4, shrinkingFrom: 2 })).toThrow(
        /shrinkingFrom \(2\) is the count before a shrink, so it must be more than partitions \(4\)/,
      );
    });

    it("ticks every partition: due tasks promoted and expired leases returned wherever they are", async () => {
      const name = uniqueQueueName("pt2");
      const queue = new PartitionedQueue(await open(), {
        name,
        partitions: 3,
        settings: { trustCallerClock: true, defaultPolicy: { leaseMs: 1_000, maxAttempts: 3 } },
      });
      await queue.configure();
      const delayed = Array.from({ length: 9 }, (_, i) => ({ id: `d${i}`, type: "t", payload: "{}", delayMs: 500 }));
      await queue.enqueue(delayed, { now: NOW });
      const ready = { id: "r", type: "t", payload: "{}" };
      await queue.enqueue([ready], { now: NOW });
      const [held] = await queue.claim({ count: 1, now: NOW, partition: queue.partitionFor(ready) });
      const results = await queue.tick({ now: NOW + 5_000 });
      expect(results).toHaveLength(3);
      expect(results.reduce((sum, result) => sum + result.promoted, 0)).toBe(9);
      expect(results.reduce((sum, result) => sum + result.reclaimed, 0)).toBe(1);
      expect(results[queue.partitionFor(ready)].reclaimed).toBe(1);
      expect((await queue.ack([held], { now: NOW + 5_000 }))[0].status).not.toBe("ok"); // its lease was taken back
      expect((await queue.stats({ now: NOW + 5_000 })).total).toMatchObject({ ready: 10, scheduled: 0, leased: 0 });
    });

    it("refuses a batch with a malformed task before any partition is sent anything", async () => {
      const name = uniqueQueueName("pb");
      const queue = new PartitionedQueue(await open(), { name, partitions: 4, settings: { trustCallerClock: true } });
      await queue.configure();
      const tasks: TaskInput[] = Array.from({ length: 12 }, (_, i) => ({ id: `t${i}`, type: "t", payload: "{}" }));
      tasks[9] = { id: "t9", type: "t", paylod: "{}" } as unknown as TaskInput;
      await expect(queue.enqueue(tasks, { now: NOW })).rejects.toThrow(/^enqueue: task 10 .*paylod/);
      const { total } = await queue.stats({ now: NOW });
      expect(total.ready).toBe(0);
    });

    it("refuses a partition count outside 1..64 before touching anything", async () => {
      const store = await open();
      expect(() => new PartitionedQueue(store, { name: uniqueQueueName("px"), partitions: 0 })).toThrow(
        /partitions must be an integer from 1 to 64, got 0/,
      );
      expect(() => new PartitionedQueue([], { name: uniqueQueueName("px"), partitions: 2 })).toThrow(
        /at least one store/,
      );
    });
  });
}

describe("a partitioned queue over two Upstash databases (two local endpoints, two redis-servers)", () => {
  let second: StartedRedis;
  const endpoints: UpstashEndpoint[] = [];
  const stores: UpstashStore[] = [];
  const servers: Redis[] = [];

  beforeAll(async () => {
    second = await startRedisServer();
    for (const url of [redisUrl(), second.url]) {
      const endpoint = await startUpstashEndpoint({ redisUrl: url });
      endpoints.push(endpoint);
      stores.push(new UpstashStore({ url: endpoint.url, token: endpoint.token }));
      servers.push(new Redis(url));
    }
  });

  afterAll(async () => {
    for (const store of stores) await store.close();
    for (const endpoint of endpoints) await endpoint.close();
    for (const server of servers) server.disconnect();
    await second?.stop();
  });

  it("keeps partition k in database k mod 2, and drains both with each group in order", async () => {
    const name = uniqueQueueName("pu");
    const queue = new PartitionedQueue(stores, {
      name,
      partitions: 4,
      settings: { trustCallerClock: true, groups: { ordered: true } },
    });
    await queue.configure();
    const tasks: TaskInput[] = Array.from({ length: 80 }, (_, i) => ({
      id: `t${i}`,
      type: "t",
      payload: "{}",
      ...(i % 2 === 0 ? { group: `tenant-${(i / 2) % 8}` } : {}),
    }));
    await queue.enqueue(tasks, { now: NOW });
    for (const task of tasks) {
      const home = queue.partitionFor(task);
      const key = queue.partitions[home].keys.task;
      expect(await servers[home % 2].hexists(key, task.id), `${task.id} in database ${home % 2}`).toBe(1);
      expect(await servers[(home + 1) % 2].exists(key), `no ${key} in database ${(home + 1) % 2}`).toBe(0);
    }
    const ran = await drain(queue, 5);
    expect(ran.map((task) => task.id).sort()).toEqual(tasks.map((task) => task.id).sort());
    for (let g = 0; g < 8; g++) {
      const own = tasks.filter((task) => task.group === `tenant-${g}`).map((task) => task.id);
      expect(ran.filter((task) => task.group === `tenant-${g}`).map((task) => task.id)).toEqual(own);
    }
    for (const partition of queue.partitions) await expectClean(partition, NOW);
  });
});

describe("a partitioned queue with one store unreachable", () => {
  it("says which partition failed, keeps the others' tasks and acks, and a repeat answers them duplicate", async () => {
    const reachable = TcpStore.fromUrl(redisUrl());
    const down = TcpStore.fromUrl("redis://127.0.0.1:1", { timeoutMs: 1_000 });
    try {
      const name = uniqueQueueName("pd");
      // Partitions 0 and 2 on the reachable server, 1 and 3 on one that is not there.
      const queue = new PartitionedQueue([reachable, down], {
        name,
        partitions: 4,
        settings: { trustCallerClock: true },
      });
      await queue.partitions[0].configure();
      await queue.partitions[2].configure();
      const tasks = Array.from({ length: 20 }, (_, i) => ({ id: `t${i}`, type: "t", payload: "{}" }));
      const onDown = tasks.filter((task) => queue.partitionFor(task) % 2 === 1).length;
      expect(onDown).toBeGreaterThan(0);
      await expect(queue.enqueue(tasks, { now: NOW })).rejects.toThrow(
        /^partition [13] of 4: .*\(the tasks of 2 other partition\(s\) were enqueued; repeating the call is safe\)/s,
      );
      const up = [0, 2].reduce(
        async (sum, k) => (await sum) + (await queue.partitions[k].stats({ now: NOW })).ready,
        Promise.resolve(0),
      );
      expect(await up).toBe(20 - onDown);
      // The reachable partitions' tasks are in: sent again, they are duplicates.
      const again = await queue.partitions[0].enqueue(
        tasks.filter((task) => queue.partitionFor(task) === 0),
        { now: NOW },
      );
      expect(again.length).toBeGreaterThan(0);
      expect(again.every((result) => result.status === "duplicate")).toBe(true);
      // A settle across partitions names the one that failed too; the reachable one's ack is done.
      const [held] = await queue.claim({ count: 1, now: NOW, partition: 0 });
      await expect(queue.ack([held, { id: "elsewhere", token: "1/1.1" }], { now: NOW })).rejects.toThrow(
        /^partition 1 of 4: .*\(the items of 1 other partition\(s\) were carried out\)/s,
      );
      expect(await queue.partitions[0].admin.inspect(held.id)).toMatchObject({ state: "done" });
    } finally {
      await reachable.close();
      await down.close();
    }
  });
});
