// Concurrency: 10 reclaimers at once, 20 workers at once on one queue, and an
// ordered queue under 10 concurrent invocations, each over both adapters: with separate clients
// racing on the queue API, and with that many Lambda handler instances invoked at once.
import { Logger } from "@aws-lambda-powertools/logger";
import { describe, expect, it } from "vitest";
import { createReclaimer } from "../../functions/reclaimer.js";
import type { TaskDefinitions } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import type { Queue } from "../../shared/queue.js";
import type { ClaimedTask } from "../../shared/types.js";
import { captureStdout, functionEnv, lambdaContext, scheduledEvent } from "../helpers/events.js";
import { assertConsistent, taskFields } from "../helpers/invariants.js";
import { adapters, configuredQueue, storeFixture, uniqueQueueName } from "../helpers/stores.js";
import { chaosSeed, random, report, scale, sleep } from "./helpers/chaos.js";

const NOW = 1_800_000_000_000;
const LEASE_MS = 1_000;
const silent = () => new Logger({ serviceName: "concurrency", logLevel: "SILENT" });

describe.each(adapters)("concurrency over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);

  /** `n` queues on one queue name, each on its own client (its own connection or HTTP requests). */
  async function clients(n: number, name: string, ordered = false): Promise<Queue[]> {
    return Promise.all(
      Array.from({ length: n }, async () => {
        const store = await open();
        return configuredQueue(store, {
          name,
          ordered,
          defaultPolicy: { leaseMs: LEASE_MS, maxAttempts: 2 },
          clockSkewMs: 0,
        });
      }),
    );
  }

  async function claimAll(queue: Queue, now: number): Promise<ClaimedTask[]> {
    const all: ClaimedTask[] = [];
    for (let batch = await queue.claim({ count: 1000, now }); batch.length > 0; ) {
      all.push(...batch);
      batch = await queue.claim({ count: 1000, now });
    }
    return all;
  }

  /** Every lease's first heartbeat: their handlers run, so a reclaim charges their attempts. */
  async function confirmAll(queue: Queue, leases: ClaimedTask[], now: number): Promise<void> {
    for (let i = 0; i < leases.length; i += 1000) {
      await queue.extend(
        leases.slice(i, i + 1000).map(({ id, token }) => ({ id, token, leaseMs: LEASE_MS })),
        { now },
      );
    }
  }

  const RECLAIM_TASKS = scale(400, 5_000);
  it(
    `10 reclaimers at once move each of ${RECLAIM_TASKS} expired leases exactly once, using no extra attempt`,
    async () => {
      const name = uniqueQueueName("reclaimers");
      const [queue, ...others] = await clients(10, name);
      const lastChance = Array.from({ length: RECLAIM_TASKS / 4 }, (_, i) => `last-${i}`);
      const firstRun = Array.from({ length: RECLAIM_TASKS - lastChance.length }, (_, i) => `first-${i}`);
      const enqueueAll = async (ids: string[], now: number) => {
        for (let i = 0; i < ids.length; i += 1000)
          await queue.enqueue(
            ids.slice(i, i + 1000).map((id) => ({ id, type: "t" })),
            { now },
          );
      };
      // The "last" tasks use their first attempt (confirmed: their handlers ran) and are reclaimed
      // once: their next lease is their last.
      await enqueueAll(lastChance, NOW);
      await confirmAll(queue, await claimAll(queue, NOW), NOW);
      expect((await queue.reclaim({ now: NOW + LEASE_MS + 1, limit: 10_000 })).reclaimed).toHaveLength(
        lastChance.length,
      );
      const t1 = NOW + LEASE_MS + 2;
      await enqueueAll(firstRun, t1);
      const leases = await claimAll(queue, t1);
      expect(leases).toHaveLength(RECLAIM_TASKS);
      await confirmAll(queue, leases, t1);

      const t2 = t1 + LEASE_MS + 1;
      const calls: number[] = [];
      const results = await Promise.all(
        [queue, ...others].map(async (reclaimer) => {
          const reclaimed: string[] = [];
          const failed: string[] = [];
          let n = 0;
          for (let round = 0; round < 10_000; round++) {
            const result = await reclaimer.reclaim({ now: t2, limit: 37 });
            n++;
            reclaimed.push(...result.reclaimed);
            failed.push(...result.failed);
            if (result.reclaimed.length + result.failed.length === 0) break;
          }
          calls.push(n);
          return { reclaimed, failed };
        }),
      );
      const reclaimed = results.flatMap((r) => r.reclaimed);
      const failed = results.flatMap((r) => r.failed);
      expect(new Set(reclaimed).size).toBe(reclaimed.length); // nobody moved an id twice
      expect(new Set(failed).size).toBe(failed.length);
      expect(reclaimed.sort()).toEqual([...firstRun].sort());
      expect(failed.sort()).toEqual([...lastChance].sort());
      expect(results.filter((r) => r.reclaimed.length + r.failed.length > 0).length).toBeGreaterThan(1);
      const records = await assertConsistent(redis, queue);
      for (const id of firstRun) expect(records.get(id)).toMatchObject({ state: "R", attempts: 1 });
      for (const id of lastChance) {
        expect(records.get(id)).toMatchObject({ state: "F", attempts: 2, error: "lease expired after attempt 2 of 2" });
      }
      report(`reclaimers-${adapter.name}`, {
        reclaimers: 10,
        tasks: RECLAIM_TASKS,
        reclaimCalls: calls.reduce((a, b) => a + b, 0),
        movedTwice: 0,
      });
    },
    scale(30_000, 300_000),
  );

  it("10 reclaimer Lambdas at once reclaim each expired lease once between them", async () => {
    const name = uniqueQueueName("reclaimer-fns");
    const [queue] = await clients(1, name);
    const tasks = 300;
    await queue.enqueue(
      Array.from({ length: tasks }, (_, i) => ({ id: `r${i}`, type: "t" })),
      { now: Date.now() },
    );
    expect(await claimAll(queue, Date.now())).toHaveLength(tasks);
    await sleep(LEASE_MS + 50);
    const { result } = await captureStdout(() =>
      Promise.all(
        Array.from({ length: 10 }, () =>
          createReclaimer({ env: functionEnv(adapter, name), logger: silent() })(scheduledEvent(), lambdaContext()),
        ),
      ),
    );
    expect(result.reduce((sum, summary) => sum + summary.reclaimed, 0)).toBe(tasks);
    const records = await assertConsistent(redis, queue);
    // Never confirmed by a heartbeat: each got its attempt back, and one stall.
    for (const record of records.values()) expect(record).toMatchObject({ state: "R", attempts: 0, stalls: 1 });
  });

  it("20 clients enqueueing the same ids at once create each task once; all but one hear duplicate", async () => {
    const name = uniqueQueueName("dup-enqueue");
    const producers = await clients(20, name);
    const ids = Array.from({ length: scale(100, 1_000) }, (_, i) => `e${i}`);
    const results = await Promise.all(
      producers.map((producer, index) =>
        // Each producer sends the ids in its own order, in batches of 50.
        Promise.all(
          Array.from({ length: Math.ceil(ids.length / 50) }, (_, b) => {
            const order = index % 2 === 0 ? ids : [...ids].reverse();
            return producer.enqueue(
              order.slice(b * 50, b * 50 + 50).map((id) => ({ id, type: "t", payload: { by: index } })),
              { now: NOW },
            );
          }),
        ),
      ),
    );
    const created = results.flat(2).filter((r) => r.status === "ok");
    expect(created.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(results.flat(2).filter((r) => r.status === "duplicate")).toHaveLength(19 * ids.length);
    expect(await taskFields(redis, producers[0])).toHaveLength(ids.length);
    expect(Number(await redis.get(producers[0].keys.seq))).toBe(ids.length);
    await assertConsistent(redis, producers[0]);
  });

  const WORKER_TASKS = scale(600, 10_000);
  it(
    `20 workers at once get disjoint claims and finish each of ${WORKER_TASKS} tasks once`,
    async () => {
      const seed = chaosSeed();
      const name = uniqueQueueName("workers");
      const workers = await clients(20, name);
      for (let i = 0; i < WORKER_TASKS; i += 1000) {
        await workers[0].enqueue(
          Array.from({ length: Math.min(1000, WORKER_TASKS - i) }, (_, j) => ({ id: `w${i + j}`, type: "t" })),
          { now: NOW },
        );
      }
      const claims = await Promise.all(
        workers.map(async (worker, index) => {
          const rng = random(seed + index);
          const mine: string[] = [];
          for (let round = 0; round < WORKER_TASKS; round++) {
            const batch = await worker.claim({ count: 1 + Math.floor(rng() * 5), now: NOW });
            if (batch.length === 0) break;
            mine.push(...batch.map((task) => task.id));
            const results = await worker.ack(batch, { now: NOW });
            expect(results.every((r) => r.status === "ok")).toBe(true);
          }
          return mine;
        }),
      );
      const all = claims.flat();
      expect(new Set(all).size).toBe(all.length);
      expect(all.length).toBe(WORKER_TASKS);
      expect(claims.filter((mine) => mine.length > 0).length).toBeGreaterThan(1);
      const records = await assertConsistent(redis, workers[0]);
      expect([...records.values()].every((r) => r.state === "D" && r.attempts === 1)).toBe(true);
      report(`workers-${adapter.name}`, { seed, workers: 20, tasks: WORKER_TASKS, claimedTwice: 0 });
    },
    scale(30_000, 600_000),
  );

  it(
    "20 worker Lambdas at once run each task exactly once",
    async () => {
      const name = uniqueQueueName("worker-fns");
      const [queue] = await clients(1, name);
      const tasks = scale(300, 2_000);
      const runs = new Map<string, number>();
      const registry: TaskDefinitions = {
        ordered: false,
        types: {
          t: {
            leaseMs: 10_000,
            maxAttempts: 2,
            backoff: { baseMs: 10, maxMs: 20 },
            handler: async (task) => {
              runs.set(task.id, (runs.get(task.id) ?? 0) + 1);
              await sleep(Math.random() * 2);
            },
          },
        },
      };
      for (let i = 0; i < tasks; i += 1000) {
        await queue.enqueue(
          Array.from({ length: Math.min(1000, tasks - i) }, (_, j) => ({ id: `f${i + j}`, type: "t" })),
          { now: Date.now() },
        );
      }
      await captureStdout(() =>
        Promise.all(
          Array.from({ length: 20 }, () =>
            createWorker({ env: functionEnv(adapter, name), tasks: registry, logger: silent() })(
              { leaseq: "drain" },
              lambdaContext(),
            ),
          ),
        ),
      );
      expect(runs.size).toBe(tasks);
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
      const records = await assertConsistent(redis, queue);
      expect([...records.values()].every((r) => r.state === "D")).toBe(true);
    },
    scale(30_000, 300_000),
  );

  const ORDERED_TASKS = scale(30, 200);
  it(
    `an ordered queue under 10 concurrent invocations completes ${ORDERED_TASKS} tasks in strict rank order`,
    async () => {
      const seed = chaosSeed();
      const rng = random(seed);
      const name = uniqueQueueName("ordered");
      const [queue] = await clients(1, name, true);
      const completed: string[] = [];
      let running = 0;
      let mostAtOnce = 0;
      const flaky = new Set<string>();
      const failedOnce = new Set<string>();
      const registry: TaskDefinitions = {
        ordered: true,
        types: {
          step: {
            leaseMs: 5_000,
            maxAttempts: 3,
            backoff: { baseMs: 10, maxMs: 20 },
            handler: async (task) => {
              running++;
              mostAtOnce = Math.max(mostAtOnce, running);
              try {
                await sleep(rng() * 3);
                if (flaky.has(task.id) && !failedOnce.has(task.id)) {
                  failedOnce.add(task.id);
                  throw new Error("transient");
                }
                completed.push(task.id);
              } finally {
                running--;
              }
            },
          },
        },
      };
      // Mixed priorities, enqueued in a few batches: rank order is (priority, arrival).
      const planned = Array.from({ length: ORDERED_TASKS }, (_, i) => ({
        id: `o${i}`,
        type: "step",
        priority: Math.floor(rng() * 3) - 1,
      }));
      for (const task of planned) if (rng() < 0.1) flaky.add(task.id);
      for (let i = 0; i < planned.length; i += 10) await queue.enqueue(planned.slice(i, i + 10), { now: Date.now() });
      const rankOrder = planned
        .map((task, arrival) => ({ ...task, arrival }))
        .sort((a, b) => a.priority - b.priority || a.arrival - b.arrival)
        .map((task) => task.id);

      const handlers = Array.from({ length: 10 }, () =>
        createWorker({
          env: functionEnv(adapter, name, { LEASEQ_CLAIM_BATCH: "3" }),
          tasks: registry,
          logger: silent(),
        }),
      );
      // Each of the 10 "Lambdas" is invoked again as soon as it returns, so they contend all along.
      let invocations = 0;
      const deadline = Date.now() + scale(30_000, 300_000);
      await captureStdout(() =>
        Promise.all(
          handlers.map(async (handler) => {
            while (completed.length < ORDERED_TASKS && Date.now() < deadline) {
              invocations++;
              await handler({ leaseq: "drain" }, lambdaContext());
              await sleep(2);
            }
          }),
        ),
      );
      expect(completed).toEqual(rankOrder);
      expect(mostAtOnce).toBe(1);
      await assertConsistent(redis, queue);
      report(`ordered-${adapter.name}`, {
        seed,
        invocationsAtOnce: 10,
        tasks: ORDERED_TASKS,
        retried: failedOnce.size,
        invocations,
        outOfOrder: 0,
      });
    },
    scale(60_000, 600_000),
  );
});
