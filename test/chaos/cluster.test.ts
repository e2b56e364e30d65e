// Redis Cluster: a local 3-master cluster started here runs the queue over the
// TCP adapter (an ioredis Cluster client), with queues whose hash tags hash to slots on each of
// the three masters. Every script runs on each queue, so a key outside the queue's slot would
// fail with CROSSSLOT; then a mixed workload with crashes drains on all queues at once.
import { type ChildProcess, fork } from "node:child_process";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PartitionedQueue } from "../../shared/partitioned-queue.js";
import type { Queue } from "../../shared/queue.js";
import { LIBRARY } from "../../shared/scripts.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { bundled } from "../helpers/bundle.js";
import { expectClean, isDrained } from "../helpers/check.js";
import { assertConsistent } from "../helpers/invariants.js";
import { claimAny, turnUnderLoad } from "../helpers/partitions.js";
import { configuredQueue, uniqueQueueName } from "../helpers/stores.js";
import { chaosSeed, random, report, scale, sleep } from "./helpers/chaos.js";
import { clusterUnavailable, type LocalCluster, startCluster } from "./helpers/cluster.js";

const NOW = 1_800_000_000_000;
const QUEUES_PER_NODE = 2;
const unavailable = clusterUnavailable();

describe.skipIf(unavailable !== undefined)(`Redis Cluster${unavailable ? ` (skipped: ${unavailable})` : ""}`, () => {
  let cluster: LocalCluster;
  let client: Cluster;
  let store: TcpStore;
  const nodes = new Map<number, Redis>();
  /** Queues with the port of the master that owns their slot. */
  const queues: Array<{ queue: Queue; owner: number }> = [];

  beforeAll(async () => {
    cluster = await startCluster();
    client = new Cluster(
      cluster.ports.map((port) => ({ host: "127.0.0.1", port })),
      { redisOptions: { maxRetriesPerRequest: 1 } },
    );
    store = TcpStore.fromClient(client);
    for (const port of cluster.ports) nodes.set(port, new Redis(port, "127.0.0.1"));
    // Draw queue names until each master owns QUEUES_PER_NODE of them.
    const perNode = new Map<number, number>();
    for (let i = 0; i < 1000 && queues.length < 3 * QUEUES_PER_NODE; i++) {
      const queue = await configuredQueue(store, {
        name: uniqueQueueName("cluster"),
        defaultPolicy: { leaseMs: 1_000, maxAttempts: 3 },
        clockSkewMs: 0,
        doneRetentionMs: 10_000,
        failedRetentionMs: 10_000,
      });
      const slot = Number(await client.cluster("KEYSLOT", queue.keys.task));
      const owner = cluster.ownerOf(slot);
      if ((perNode.get(owner) ?? 0) >= QUEUES_PER_NODE) continue;
      perNode.set(owner, (perNode.get(owner) ?? 0) + 1);
      queues.push({ queue, owner });
    }
  }, 60_000);

  afterAll(async () => {
    for (const node of nodes.values()) node.disconnect();
    client?.disconnect();
    await cluster?.stop();
  });

  it("spreads the queues over the three masters, each queue's keys on its own master only", async () => {
    expect(queues).toHaveLength(3 * QUEUES_PER_NODE);
    expect(new Set(queues.map((q) => q.owner)).size).toBe(3);
    for (const { queue } of queues) {
      const slots = new Set(
        await Promise.all(Object.values(queue.keys).map((key) => client.cluster("KEYSLOT", key) as Promise<number>)),
      );
      expect(slots.size, `keys of ${queue.name} in one slot`).toBe(1);
    }
  });

  it("calls the scripts as functions of one library, loaded on every master", async () => {
    expect(store.functions).toBe("yes");
    for (const [port, node] of nodes) {
      const libraries = (await node.call("FUNCTION", "LIST", "LIBRARYNAME", LIBRARY.name)) as unknown[];
      expect(libraries, `library on the master at ${port}`).toHaveLength(1);
    }
  });

  it("runs every script on every queue (no CROSSSLOT), and the keys land on the owning master", async () => {
    for (const { queue, owner } of queues) {
      const at = (ms: number) => NOW + ms;
      expect(
        await queue.enqueue(
          [
            { id: "a", type: "t", priority: 1 },
            { id: "b", type: "t" },
            { id: "c", type: "t", delayMs: 500 },
          ],
          { now: at(0) },
        ),
      ).toHaveLength(3);
      const [b, a] = await queue.claim({ count: 2, now: at(0) });
      expect([b.id, a.id]).toEqual(["b", "a"]);
      expect((await queue.extend([{ id: b.id, token: b.token, leaseMs: 5_000 }], { now: at(1) }))[0].status).toBe("ok");
      expect((await queue.release([a], { now: at(2) }))[0].status).toBe("ok");
      expect(await queue.settle([{ ...b, outcome: "fail", error: "poison" }], { now: at(3) })).toEqual([
        { id: "b", status: "ok", state: "failed" },
      ]);
      expect((await queue.admin.requeue(["b"], { now: at(4) }))[0].status).toBe("ok");
      expect(await queue.promote({ now: at(600) })).toBe(1);
      const all = await queue.claim({ count: 10, now: at(600) });
      expect(all.map((t) => t.id)).toEqual(["b", "c", "a"]);
      await queue.ack(all.slice(0, 2), { now: at(601) });
      expect((await queue.reclaim({ now: at(2_000) })).reclaimed).toEqual(["a"]);
      expect((await queue.tick({ now: at(2_001) })).ready).toBe(1);
      expect((await queue.stats({ now: at(2_001) })).done).toBe(2);
      // Its lease ran out unconfirmed (no heartbeat): its attempt given back, a stall counted.
      expect(await queue.admin.inspect("a")).toMatchObject({ state: "ready", attempts: 0, stalls: 1 });
      expect((await queue.admin.list("done")).map((t) => t.id).sort()).toEqual(["b", "c"]);
      expect(await queue.trim({ now: at(20_000) })).toEqual({ done: 2, failed: 0 });
      for (const [port, node] of nodes) {
        // KEYS lists only the node's own keys (a key command on another node would answer MOVED).
        const local = await node.keys(`leaseq:{${queue.name}}:*`);
        expect(local.length > 0, `${queue.name} has keys on ${port}`).toBe(port === owner);
      }
      await assertConsistent(nodes.get(owner) as Redis, queue);
    }
  });

  const TASKS = scale(150, 2_000);
  it(
    `drains ${TASKS} tasks per queue on all queues at once, with crashes and retries, losing nothing`,
    async () => {
      const results = await Promise.all(
        queues.map(async ({ queue: named, owner }, index) => {
          // The same queue with a retention longer than the run: no DONE task is trimmed before it is counted.
          const queue = await configuredQueue(store, {
            name: named.name,
            defaultPolicy: { leaseMs: 1_000, maxAttempts: 3 },
            clockSkewMs: 0,
          });
          let seed = 1_000 + index;
          const next = () => {
            seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
            return seed / 0x7fffffff;
          };
          const ids = Array.from({ length: TASKS }, (_, i) => `w${i}`);
          for (let i = 0; i < ids.length; i += 500) {
            await queue.enqueue(
              ids.slice(i, i + 500).map((id) => ({ id, type: "t", priority: Math.floor(next() * 5) })),
              { now: NOW + 100_000 },
            );
          }
          let now = NOW + 100_000;
          for (let round = 0; round < 20 * TASKS; round++) {
            now += 300;
            const claimed = await queue.claim({ count: 10, now });
            if (claimed.length > 0 && next() < 0.1) continue; // a crashed worker: reclaim returns its batch
            if (claimed.length > 0) {
              await queue.settle(
                claimed.map((task) =>
                  next() < 0.85
                    ? { ...task, outcome: "ack" as const }
                    : { ...task, outcome: "retry" as const, retryAtMs: now + 500, error: "flaky" },
                ),
                { now },
              );
            }
            await queue.tick({ now });
            if (await isDrained(queue, now)) break;
          }
          const records = await assertConsistent(nodes.get(owner) as Redis, queue);
          await expectClean(queue, now);
          const unfinished = ids.filter((id) => !["D", "F"].includes(records.get(id)?.state ?? ""));
          return {
            owner,
            unfinished: unfinished.length,
            done: [...records.values()].filter((r) => r.state === "D").length,
          };
        }),
      );
      for (const result of results) expect(result.unfinished).toBe(0);
      report("cluster", {
        masters: 3,
        queues: queues.length,
        tasks: TASKS * queues.length,
        lost: results.reduce((sum, r) => sum + r.unfinished, 0),
      });
    },
    scale(60_000, 600_000),
  );

  it("spreads a queue of 6 partitions over every master and drains it with each ordered group in order", async () => {
    const name = uniqueQueueName("cluster-p6");
    const queue = new PartitionedQueue(store, {
      name,
      partitions: 6,
      settings: { trustCallerClock: true, clockSkewMs: 0, groups: { ordered: true } },
    });
    await queue.configure();
    const tasks = Array.from({ length: 240 }, (_, i) =>
      i % 2 === 0
        ? { id: `g${(i / 2) % 12}-${i}`, type: "t", payload: "{}", group: `tenant-${(i / 2) % 12}` }
        : { id: `u${i}`, type: "t", payload: "{}" },
    );
    for (let i = 0; i < tasks.length; i += 60) await queue.enqueue(tasks.slice(i, i + 60), { now: NOW });
    // Every partition's keys in one slot, on the master that owns it; every master holds some.
    const owners = new Set<number>();
    for (const partition of queue.partitions) {
      const slots = new Set(
        await Promise.all(
          Object.values(partition.keys).map((key) => client.cluster("KEYSLOT", key) as Promise<number>),
        ),
      );
      expect(slots.size, `keys of ${partition.keys.task} in one slot`).toBe(1);
      const owner = cluster.ownerOf([...slots][0]);
      owners.add(owner);
      expect(await (nodes.get(owner) as Redis).exists(partition.keys.task), `${partition.keys.task} on ${owner}`).toBe(
        1,
      );
    }
    expect(owners.size).toBe(3);

    const ran: string[] = [];
    for (let round = 0; round < 1_000; round++) {
      const claimed = await claimAny(queue, 8, NOW);
      if (claimed.length === 0) break;
      ran.push(...claimed.map((task) => task.id));
      expect((await queue.ack(claimed, { now: NOW })).every((result) => result.status === "ok")).toBe(true);
    }
    expect([...ran].sort()).toEqual(tasks.map((task) => task.id).sort());
    for (let g = 0; g < 12; g++) {
      const own = tasks.filter((task) => task.id.startsWith(`g${g}-`)).map((task) => task.id);
      expect(own).toHaveLength(10);
      expect(ran.filter((id) => own.includes(id))).toEqual(own);
    }
    for (const partition of queue.partitions) {
      const owner = cluster.ownerOf(Number(await client.cluster("KEYSLOT", partition.keys.task)));
      await assertConsistent(nodes.get(owner) as Redis, partition);
      await expectClean(partition, NOW);
    }
    expect((await queue.stats({ now: NOW })).total).toMatchObject({ done: 240, ready: 0, leased: 0 });
  });

  it("grows a partitioned queue from 1 partition to 4 under load, losing nothing and running nothing twice", async () => {
    const name = uniqueQueueName("cluster-grow");
    const settings = { trustCallerClock: true };
    const before = new PartitionedQueue(store, { name, partitions: 1, settings });
    const after = new PartitionedQueue(store, { name, partitions: 4, settings });
    await before.configure();
    const { sent, ran } = await turnUnderLoad(before, after, { rounds: 30, now: NOW });
    expect([...ran.keys()].sort()).toEqual([...sent].sort());
    expect([...ran.values()].every((times) => times === 1)).toBe(true);
    const stats = await after.stats({ now: NOW });
    expect(stats.total).toMatchObject({ done: 300, ready: 0, leased: 0 });
    expect(stats.partitions.every((partition) => partition.done > 0)).toBe(true);
    for (const partition of after.partitions) {
      const owner = cluster.ownerOf(Number(await client.cluster("KEYSLOT", partition.keys.task)));
      await assertConsistent(nodes.get(owner) as Redis, partition);
      await expectClean(partition, NOW);
    }
  });

  const KILLED_TASKS = scale(300, 3_000);
  it(
    `loses nothing and keeps each ordered group's order while consumers of 6 partitions are SIGKILLed (${KILLED_TASKS} tasks)`,
    async () => {
      const seed = chaosSeed();
      const rng = random(seed);
      const name = uniqueQueueName("cluster-kill");
      const log = `{${name}}:log`;
      const queue = new PartitionedQueue(store, {
        name,
        partitions: 6,
        // Stalls are not counted against a task here (maxStalls at its most): a task whose consumers
        // are killed three times would otherwise end FAILED as the poison it looks like (docs/design.md).
        settings: {
          clockSkewMs: 0,
          defaultPolicy: { leaseMs: 1_000, maxAttempts: 1_000 },
          maxStalls: 1_000,
          groups: { ordered: true },
        },
      });
      await queue.configure();
      const groups = 20;
      const tasks = Array.from({ length: KILLED_TASKS }, (_, i) =>
        i % 3 === 0
          ? { id: `u${i}`, type: "t", payload: "{}" }
          : {
              id: `g${i % groups}-${String(i).padStart(6, "0")}`,
              type: "t",
              payload: "{}",
              group: `tenant-${i % groups}`,
            },
      );
      for (let i = 0; i < tasks.length; i += 100) await queue.enqueue(tasks.slice(i, i + 100), { now: Date.now() });

      const fixture = bundled(new URL("./fixtures/partitioned-consumer.ts", import.meta.url));
      const args = JSON.stringify({ ports: cluster.ports, name, partitions: 6, log, batch: 3 });
      const children = new Set<ChildProcess>();
      const spawn = () => {
        const child = fork(fixture, [args], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
        children.add(child);
        child.once("exit", () => children.delete(child));
      };
      for (let i = 0; i < 4; i++) spawn();
      let kills = 0;
      let ticks = 0;
      const deadline = Date.now() + scale(90_000, 600_000);
      try {
        for (;;) {
          await sleep(100);
          // A kill every 200 ms until the budget is spent, mid-claim, mid-run or mid-ack (the seeded
          // draw picks the victim): a new consumer replaces each.
          if (++ticks % 2 === 0 && kills < scale(12, 100)) {
            const victim = [...children][Math.floor(rng() * children.size)];
            if (victim) {
              victim.kill("SIGKILL");
              kills++;
              spawn();
            }
          }
          // The reclaimer's part: every partition's expired leases back.
          await queue.reclaim({ now: Date.now() });
          const { total } = await queue.stats({ now: Date.now() });
          // Every task finished (one FAILED fails the assertions below at once, not at the deadline).
          if (total.done + total.failed === KILLED_TASKS) break;
          if (Date.now() > deadline) throw new Error(`not drained in time: ${JSON.stringify(total)} (seed ${seed})`);
        }
      } finally {
        for (const child of children) child.kill("SIGKILL");
      }

      const { total } = await queue.stats({ now: Date.now() });
      expect(total).toMatchObject({ done: KILLED_TASKS, ready: 0, leased: 0, failed: 0 });
      expect(kills).toBeGreaterThanOrEqual(3);
      // Each group's starts, in the order they were logged: never a task before one that started before it.
      const entries = (await client.lrange(log, 0, -1)).map((line) => line.split(" "));
      const starts = entries.filter(([what]) => what === "start").map(([, id]) => id);
      const lastOf = new Map<string, string>();
      const outOfOrder: string[] = [];
      for (const id of starts) {
        if (!id.startsWith("g")) continue;
        const group = id.split("-")[0];
        const last = lastOf.get(group);
        if (last !== undefined && id < last) outOfOrder.push(`${id} after ${last}`);
        lastOf.set(group, last === undefined || id > last ? id : last);
      }
      expect(outOfOrder, `seed ${seed}`).toEqual([]);
      expect(new Set(starts)).toEqual(new Set(tasks.map((task) => task.id)));
      for (const partition of queue.partitions) {
        const owner = cluster.ownerOf(Number(await client.cluster("KEYSLOT", partition.keys.task)));
        await assertConsistent(nodes.get(owner) as Redis, partition);
        await expectClean(partition, Date.now());
      }
      await client.del(log);
      report("cluster-partitions", {
        seed,
        partitions: 6,
        masters: 3,
        tasks: KILLED_TASKS,
        kills,
        reruns: starts.length - KILLED_TASKS,
        lost: KILLED_TASKS - total.done,
      });
    },
    scale(120_000, 900_000),
  );
});
