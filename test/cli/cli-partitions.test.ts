// The CLI on a partitioned queue (docs/partitions.md), run in process against a real redis-server:
// stats and check cover every partition with --partitions (or LEASEQ_PARTITIONS), --partition K
// addresses one, and a command on one queue refuses to guess which partition.
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { PartitionedQueue } from "../../shared/partitioned-queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { redisUrl, uniqueQueueName } from "../helpers/stores.js";
import { runCli } from "./cli-run.js";

const store = TcpStore.fromUrl(redisUrl());
const redis = new Redis(redisUrl());
afterAll(async () => {
  await store.close();
  redis.disconnect();
});

describe("leaseq on a partitioned queue", { timeout: 60_000 }, () => {
  it("sums stats and checks every partition, addresses one with --partition, and asks which one otherwise", async () => {
    const name = uniqueQueueName("cli-p");
    const queue = new PartitionedQueue(store, { name, partitions: 3 });
    await queue.configure();
    const tasks = Array.from({ length: 30 }, (_, i) => ({ id: `t${i}`, type: "email" }));
    await queue.enqueue(tasks, { now: Date.now() });
    const cli = (args: string[], env: Record<string, string> = {}) =>
      runCli(args, { REDIS_URL: redisUrl(), LEASEQ_QUEUE: name, ...env });
    const inPartition = (k: number) => tasks.filter((task) => queue.partitionFor(task) === k).map((task) => task.id);

    const stats = await cli(["--partitions", "3", "stats", "--json"]);
    expect(stats.code).toBe(0);
    const figures = JSON.parse(stats.stdout);
    expect(figures).toMatchObject({ queue: name, ready: 30, leased: 0 });
    expect(figures.partitions.map((p: { partition: number; ready: number }) => [p.partition, p.ready])).toEqual(
      [0, 1, 2].map((k) => [k, inPartition(k).length]),
    );
    const text = await cli(["stats"], { LEASEQ_PARTITIONS: "3" });
    expect(text.stdout).toContain(`queue "${name}" on`);
    expect(text.stdout).toContain("3 partitions");
    expect(text.stdout).toContain(`partition 2: ready ${inPartition(2).length},`);

    // `leaseq queues` lists the queue once, its partitions' counts summed.
    const queues = JSON.parse((await cli(["queues", "--json"])).stdout) as Array<{ queue: string }>;
    expect(queues.filter((row) => row.queue.startsWith(name))).toEqual([
      expect.objectContaining({ queue: name, partitions: 3, ready: 30 }),
    ]);

    // One partition's tasks, by --partition.
    const listed = await cli(["--partitions", "3", "--partition", "1", "list", "ready", "--json"]);
    expect(listed.code).toBe(0);
    expect(
      JSON.parse(listed.stdout)
        .map((task: { id: string }) => task.id)
        .sort(),
    ).toEqual(inPartition(1).sort());

    expect(await cli(["--partitions", "3", "check"])).toMatchObject({
      code: 0,
      stdout: `queue "${name}" (3 partitions): no problem found\n`,
    });
    // A problem planted in partition 2 is found there, and named with its partition.
    await redis.zadd(queue.partitions[2].keys.leased, Date.now(), "ghost");
    const found = await cli(["--partitions", "3", "check", "--json"]);
    expect(found.code).toBe(1);
    expect(JSON.parse(found.stdout).problems).toEqual([
      expect.objectContaining({ code: "orphan_member", subject: "ghost", partition: 2 }),
    ]);
    expect(await cli(["--partitions", "3", "--partition", "2", "check", "--repair"])).toMatchObject({ code: 0 });
    expect((await cli(["--partitions", "3", "check"])).code).toBe(0);

    // A command on one queue does not guess the partition; bad counts are usage errors.
    const inspect = await cli(["--partitions", "3", "inspect", "t1"]);
    expect(inspect.code).toBe(2);
    expect(inspect.stderr).toContain(`queue "${name}" has 3 partitions: pass --partition K (0 to 2)`);
    expect((await cli(["--partitions", "0", "stats"])).stderr).toContain(
      "--partitions (or LEASEQ_PARTITIONS) must be an integer from 1 to 64",
    );
    expect((await cli(["--partitions", "3", "--partition", "3", "stats"])).stderr).toContain(
      "--partition must be an integer from 0 to 2",
    );
    const home = queue.partitionFor({ id: "t1" });
    const one = await cli(["--partitions", "3", "--partition", String(home), "inspect", "t1", "--json"]);
    expect(JSON.parse(one.stdout)).toMatchObject({ id: "t1", state: "ready" });
  });

  it("reaches partitions on several servers when REDIS_URL lists them: partition k on the (k mod count)-th", async () => {
    const second = await startRedisServer();
    const stores = [store, TcpStore.fromUrl(second.url)];
    try {
      const name = uniqueQueueName("cli-p2");
      const queue = new PartitionedQueue(stores, { name, partitions: 3 });
      await queue.configure();
      const tasks = Array.from({ length: 30 }, (_, i) => ({ id: `t${i}`, type: "email" }));
      await queue.enqueue(tasks, { now: Date.now() });
      const cli = (args: string[]) =>
        runCli(["--partitions", "3", ...args], { REDIS_URL: `${redisUrl()},${second.url}`, LEASEQ_QUEUE: name });
      const figures = JSON.parse((await cli(["stats", "--json"])).stdout);
      const each = (await queue.stats({ now: Date.now() })).partitions.map((stats) => stats.ready);
      expect(each[1]).toBeGreaterThan(0);
      expect(figures.ready).toBe(30);
      expect(figures.partitions.map((p: { ready: number }) => p.ready)).toEqual(each);
      // Partition 1 lives on the second server: listed from there.
      const listed = JSON.parse((await cli(["--partition", "1", "list", "ready", "--json"])).stdout);
      expect(listed.map((task: { id: string }) => task.id).sort()).toEqual(
        tasks
          .filter((task) => queue.partitionFor(task) === 1)
          .map((task) => task.id)
          .sort(),
      );
      expect((await cli(["check"])).code).toBe(0);
      for (const partition of queue.partitions) await partition.admin.drop({ confirm: partition.name });
    } finally {
      await stores[1].close();
      await second.stop();
    }
  });

  it("drop-drained ends a shrink: drops each partition past --to once nothing waits or runs there, and names those still draining", async () => {
    const name = uniqueQueueName("cli-shrink");
    const before = new PartitionedQueue(store, { name, partitions: 4 });
    await before.configure();
    const tasks = Array.from({ length: 40 }, (_, i) => ({ id: `t${i}`, type: "email" }));
    await before.enqueue(tasks, { now: Date.now() });
    const inPartition = (k: number) => tasks.filter((task) => before.partitionFor(task) === k);
    const cli = (args: string[]) =>
      runCli(["--partitions", "4", ...args], { REDIS_URL: redisUrl(), LEASEQ_QUEUE: name });
    const drain = async (k: number) => {
      const partition = before.partitions[k];
      const claimed = await partition.claim({ count: inPartition(k).length, now: Date.now() });
      expect(claimed).toHaveLength(inPartition(k).length);
      await partition.ack(claimed, { now: Date.now() });
    };
    try {
      const unconfirmed = await cli(["drop-drained", "--to", "2"]);
      expect(unconfirmed.code).toBe(2);
      expect(unconfirmed.stderr).toContain("run it again with --yes");
      expect((await cli(["drop-drained", "--to", "4", "--yes"])).stderr).toContain(
        "--to (the count after the shrink) must be an integer from 1 to 3",
      );
      // Partitions 2 and 3 hold READY tasks: neither is dropped.
      const waiting = await cli(["drop-drained", "--to", "2", "--yes"]);
      expect(waiting.code).toBe(1);
      expect(waiting.stderr).toContain(`partitions 2, 3 of queue "${name}" still hold tasks waiting or running`);
      expect(await redis.exists(before.partitions[3].keys.task)).toBe(1);
      // Partition 3 drained (its tasks DONE): dropped, its finished tasks with it; 2 still drains.
      await drain(3);
      const once = await cli(["drop-drained", "--to", "2", "--yes"]);
      expect(once.code).toBe(1);
      expect(once.stdout).toBe(`dropped partition 3 of queue "${name}"\n`);
      expect(once.stderr).toContain(`partition 2 of queue "${name}" still holds tasks waiting or running`);
      expect(await redis.exists(before.partitions[3].keys.task, before.partitions[3].keys.done)).toBe(0);
      // A leased task keeps partition 2 too, until it is acked.
      const partition2 = before.partitions[2];
      const [kept, ...rest] = await partition2.claim({ count: inPartition(2).length, now: Date.now() });
      await partition2.ack(rest, { now: Date.now() });
      expect((await cli(["drop-drained", "--to", "2", "--yes"])).code).toBe(1);
      await partition2.ack([kept], { now: Date.now() });
      const last = await cli(["drop-drained", "--to", "2", "--yes"]);
      expect(last).toMatchObject({ code: 0, stdout: `dropped partition 2 of queue "${name}"\n` });
      expect(await redis.exists(partition2.keys.config)).toBe(0);
      // The partitions kept hold their tasks.
      expect((await before.partitions[0].stats({ now: Date.now() })).ready).toBe(inPartition(0).length);
    } finally {
      for (const partition of before.partitions) await partition.admin.drop({ confirm: partition.name });
    }
  });
});
