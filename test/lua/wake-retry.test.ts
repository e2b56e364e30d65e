// Every script that arranges or answers a wake-up is retry-safe (docs/wake-ups.md): run through a
// store that loses the reply and sends the call again (as a store's retry does), the retried call
// answers the wake-up the first arranged, and it is arranged once. The operations come from the
// protocol's declaration (every reply with a wakeAt), so a new one joins this list by itself: the
// test fails until it has a scenario here. Both stores.
import { describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { PROTOCOL } from "../../shared/scripts.generated.js";
import type { Store } from "../../shared/store.js";
import { adapters, lossyStore, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const MINUTE = 60_000;

/** The operations whose reply carries a wake-up to send. */
const WAKE_OPERATIONS = Object.entries(PROTOCOL)
  .filter(([, reply]) => [...reply.head, ...reply.tail].includes("wakeAt"))
  .map(([name]) => name)
  .sort();

describe.each(adapters)("wake-ups through a store that loses replies, over $name", (adapter) => {
  const { fresh, redis } = queueFixture(adapter, { policies: { job: { leaseMs: 10_000, maxAttempts: 3 } } });

  /** The same queue through a store that runs each call, loses the reply and sends it again. */
  const lossy = (queue: Queue) =>
    new Queue(lossyStore((queue as unknown as { context: { store: Store } }).context.store), { name: queue.name });
  /** The wake-up times arranged in the queue's `wake` mark. */
  const arranged = async (queue: Queue) =>
    [...((await redis.hget(queue.keys.config, "wake")) ?? "").matchAll(/(\d+)\|/g)].map((match) => Number(match[1]));

  /** Per operation: runs it through the lossy queue; resolves to the wake-up it answered. */
  const scenarios: Record<string, (queue: Queue) => Promise<{ answered: number | undefined; expected: number }>> = {
    enqueue: async (queue) => {
      const { wakeAtMs } = await lossy(queue).enqueueAndWake([{ id: "a", type: "job" }], { now: NOW });
      return { answered: wakeAtMs, expected: NOW };
    },
    claim: async (queue) => {
      // Three ready, a worker takes one and fills its batch: a wake-up now for another worker.
      await queue.enqueueAndWake(
        ["a", "b", "c"].map((id) => ({ id, type: "job" })),
        { now: NOW },
      );
      await redis.hdel(queue.keys.config, "wake");
      const outcome = await lossy(queue).claimOrNextDue({ count: 1, now: NOW + 1 });
      expect(outcome.tasks).toHaveLength(1);
      return { answered: outcome.wakeAtMs, expected: NOW + 1 };
    },
    tick: async (queue) => {
      await queue.enqueue([{ id: "later", type: "job", delayMs: 20_000 }], { now: NOW });
      await redis.hdel(queue.keys.config, "wake");
      const result = await lossy(queue).tick({ now: NOW + 1, wakeHorizonMs: MINUTE });
      return { answered: result.wakeAtMs, expected: NOW + 20_000 };
    },
    handoff: async (queue) => {
      // A worker drains (its claim marks it active); work comes under it; it stops: its hand-off
      // arranges the wake-up for that work.
      await queue.enqueueAndWake([{ id: "a", type: "job" }], { now: NOW });
      await queue.claimOrNextDue({ count: 5, now: NOW, woken: true });
      await queue.enqueueAndWake([{ id: "b", type: "job" }], { now: NOW + 1 });
      expect(await arranged(queue)).toEqual([]);
      const wakeAtMs = await lossy(queue).handOff({ now: NOW + 2, cutOff: false, woken: false });
      return { answered: wakeAtMs, expected: NOW + 2 };
    },
    pause: async (queue) => {
      await queue.admin.pause({ now: NOW });
      await queue.enqueue([{ id: "a", type: "job" }], { now: NOW });
      const { wakeAtMs } = await lossy(queue).admin.resume({ now: NOW + 1 });
      return { answered: wakeAtMs, expected: NOW + 1 };
    },
    plan: async (queue) => {
      await queue.schedules.set("every", { every: 20_000, type: "job" }, { now: NOW });
      const { wakeAtMs } = await lossy(queue).schedules.plan({ now: NOW, horizonMs: MINUTE });
      return { answered: wakeAtMs, expected: NOW + 20_000 };
    },
  };

  it("has a scenario for every operation that arranges a wake-up", () => {
    expect(WAKE_OPERATIONS).toEqual(Object.keys(scenarios).sort());
  });

  it.each(WAKE_OPERATIONS)(
    "%s: the retried call answers the wake-up the first arranged, arranged once",
    async (name) => {
      const queue = await fresh({ trustCallerClock: true });
      const { answered, expected } = await scenarios[name](queue);
      expect(answered).toBe(expected);
      expect(await arranged(queue)).toEqual([expected]);
    },
  );
});
