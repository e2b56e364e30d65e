import { describe, expect, it } from "vitest";
import { seededRandom } from "../../dev/random.js";
import { isDrained } from "../helpers/check.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("conservation over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);

  // Real leases expire in real time: on a loaded 2-core machine it has taken 25 s.
  it("drains a mixed workload with crashes and retries to DONE or FAILED, losing nothing", {
    timeout: 120_000,
  }, async () => {
    const queue = await fresh({ defaultPolicy: { leaseMs: 1_000, maxAttempts: 3 } });
    const next = seededRandom(42);
    const ids = Array.from({ length: 300 }, (_, i) => `w${i}`);
    await queue.enqueue(
      ids.map((id) => ({
        id,
        type: "t",
        priority: Math.floor(next() * 5),
        delayMs: next() < 0.2 ? 5_000 : 0,
        payload: { id },
      })),
      { now: NOW },
    );
    let now = NOW;
    const acked = new Set<string>();
    for (let round = 0; round < 400; round++) {
      now += 500;
      const claimed = await queue.claim({ count: 10, now });
      // A "crashed" worker never settles its batch: reclaim must return it.
      if (claimed.length > 0 && next() < 0.1) continue;
      const items = claimed.map((task) => {
        const roll = next();
        if (roll < 0.7) return { ...task, outcome: "ack" as const };
        if (roll < 0.95) return { ...task, outcome: "retry" as const, retryAtMs: now + 700, error: "flaky" };
        return { ...task, outcome: "fail" as const, error: "poison" };
      });
      if (items.length > 0) {
        const results = await queue.settle(items, { now });
        for (const [i, result] of results.entries()) {
          expect(result.status).toBe("ok");
          if (items[i].outcome === "ack") acked.add(result.id);
        }
      }
      await queue.tick({ now });
      if (round % 25 === 0) await assertConsistent(redis, queue);
      if (await isDrained(queue, now)) break;
    }
    const tasks = await assertConsistent(redis, queue);
    expect(tasks.size).toBe(ids.length);
    const states = ids.map((id) => tasks.get(id)?.state);
    expect(states.filter((s) => s !== "D" && s !== "F")).toEqual([]);
    for (const id of acked) expect(tasks.get(id)?.state).toBe("D");
    expect(states.filter((s) => s === "D").length).toBe(acked.size);
  });
});
