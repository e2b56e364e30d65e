// `leaseq check`, run in process (main, with its own env and streams) against a real redis-server: a clean queue exits 0; a
// planted broken invariant is listed with its code and exits 1; --repair repairs it and the next
// check is clean; what cannot be repaired safely stays listed and the exit stays 1.
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { redisUrl, uniqueQueueName } from "../helpers/stores.js";
import { runCli } from "./cli-run.js";

const store = TcpStore.fromUrl(redisUrl());
const redis = new Redis(redisUrl());
afterAll(async () => {
  await store.close();
  redis.disconnect();
});

describe("leaseq check", { timeout: 60_000 }, () => {
  it("finds planted problems, repairs what is safe with --repair, and exits 1 while any is left", async () => {
    const name = uniqueQueueName("check");
    const queue = new Queue(store, { name, settings: { defaultPolicy: { leaseMs: 60_000, maxAttempts: 5 } } });
    const cli = (args: string[]) => runCli(args, { REDIS_URL: redisUrl(), LEASEQ_QUEUE: name });
    try {
      const now = Date.now();
      await queue.enqueue(
        ["a", "b", "c"].map((id) => ({ id, type: "email" })),
        { now },
      );
      expect(await cli(["check"])).toMatchObject({ code: 0, stdout: `queue "${name}": no problem found\n` });

      await redis.zadd(queue.keys.leased, now, "ghost"); // a member with no task: repairable
      await redis.zrem(queue.keys.ready, "b"); // b in no set: set aside where it is counted
      const found = await cli(["check"]);
      expect(found.code).toBe(1);
      expect(found.stdout).toMatch(/^orphan_member\s+ghost\s/m);
      expect(found.stdout).toMatch(/^no_set\s+b\s/m);
      expect(found.stdout).toContain("2 problem(s) found, 0 repaired, 2 left");
      expect(found.stderr).toContain("leaseq check --repair");
      expect(await redis.zscore(queue.keys.leased, "ghost"), "a check without --repair writes nothing").not.toBeNull();

      const repaired = await cli(["check", "--repair", "--json"]);
      expect(repaired.code).toBe(0);
      const report = JSON.parse(repaired.stdout);
      expect(report).toMatchObject({ queue: name, left: 0 });
      expect(report.problems.map((p: { code: string; repaired: boolean }) => [p.code, p.repaired]).sort()).toEqual([
        ["no_set", true],
        ["orphan_member", true],
      ]);
      // b's rank lived only as its score: it is set aside, counted, and READY again by repair.
      expect(report.problems.find((p: { code: string }) => p.code === "no_set").detail).toContain("leaseq repair");
      expect(await queue.admin.inspect("b")).toMatchObject({ state: "corrupt" });
      expect(await cli(["check"])).toMatchObject({ code: 0 });
      expect(await cli(["repair", "b"])).toMatchObject({ code: 0 });
      expect((await queue.claim({ count: 5, now })).map((task) => task.id).sort()).toEqual(["a", "b", "c"]);

      // Attempts above the recorded maximum cannot be repaired safely: listed, and the exit stays 1.
      const state = (await redis.hget(queue.keys.task, "c:s")) as string;
      const fields = state.split("|");
      fields[1] = "9"; // attempts 9 of at most 5 (the queue's default)
      await redis.hset(queue.keys.task, "c:s", fields.join("|"));
      const unrepairable = await cli(["check", "--repair"]);
      expect(unrepairable.code).toBe(1);
      expect(unrepairable.stdout).toMatch(/^attempts\s+c\s+attempt 9 of at most \d+$/m);
      expect(unrepairable.stderr).toContain("cannot be repaired safely");
    } finally {
      await queue.admin.drop({ confirm: name });
    }
  });
});
