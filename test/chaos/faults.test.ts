// Faults through the local Upstash endpoint. A private endpoint instance (the
// shared one stays clean for the other suites) in front of the test Redis drops replies after
// Redis applied a claim, an ack or an enqueue, answers 5xx (before or after applying), answers
// late, and goes away altogether. Expect: nothing lost, never two live leases, a repeated ack
// answers "already done", and a claim whose reply was lost comes back through the reclaimer.
import { Logger } from "@aws-lambda-powertools/logger";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FaultAction, startUpstashEndpoint, type UpstashEndpoint } from "../../dev/standins/upstash/index.js";
import { createReclaimer } from "../../functions/reclaimer.js";
import type { TaskDefinitions } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import { StoreError } from "../../shared/errors.js";
import { SCRIPTS } from "../../shared/scripts.js";
import { UPSTASH_LIBRARY, UpstashStore, upstashScript } from "../../shared/stores/upstash.js";
import { expectClean } from "../helpers/check.js";
import { captureStdout, lambdaContext, scheduledEvent } from "../helpers/events.js";
import { assertConsistent, taskFields } from "../helpers/invariants.js";
import { configuredQueue, rawClient, redisUrl, uniqueQueueName } from "../helpers/stores.js";
import { chaosSeed, random, report, scale, sleep } from "./helpers/chaos.js";

const NOW = 1_800_000_000_000;
const LEASE_MS = 1_000;
const TIMEOUT_MS = 250;
const NO_BACKOFF = { retries: 2, backoffMs: () => 0 };

let endpoint: UpstashEndpoint;
const redis = rawClient();
const injected: Record<string, number> = {};
beforeAll(async () => {
  endpoint = await startUpstashEndpoint({ redisUrl: redisUrl(), poolSize: 16 });
});
afterEach(() => endpoint.faults.clear());
afterAll(async () => {
  await endpoint.close();
  redis.disconnect();
  report("faults", { faultsInjected: Object.values(injected).reduce((a, b) => a + b, 0), byKind: injected });
});

/** Arms a fault on the next `times` calls of `script`, counting what fires for the figures. */
function fault(script: keyof typeof SCRIPTS, action: FaultAction, times = 1) {
  const armed = endpoint.faults.add({
    // By its function (FCALL), or by its SHA where the store runs scripts by EVALSHA.
    match: (command) =>
      command[1] === UPSTASH_LIBRARY.functions.get(script) || command[1] === upstashScript(SCRIPTS[script]).sha,
    times,
    action,
  });
  return {
    armed,
    count() {
      const kind = action.kind === "status" ? `status-${action.status}${action.apply ? "-applied" : ""}` : action.kind;
      injected[kind] = (injected[kind] ?? 0) + armed.fired;
    },
  };
}

async function openQueue(options: { retries?: number; name?: string; maxAttempts?: number } = {}) {
  const store = new UpstashStore({
    url: endpoint.url,
    token: endpoint.token,
    timeoutMs: TIMEOUT_MS,
    retry: { ...NO_BACKOFF, retries: options.retries ?? NO_BACKOFF.retries },
  });
  return configuredQueue(store, {
    name: options.name ?? uniqueQueueName("faults"),
    defaultPolicy: { leaseMs: LEASE_MS, maxAttempts: options.maxAttempts ?? 5 },
    clockSkewMs: 0,
  });
}

describe("faults through the local Upstash endpoint", () => {
  it("a claim whose reply was lost is retried as a repeat: the same batch, the same token, one attempt", async () => {
    const queue = await openQueue();
    await queue.enqueue(
      [
        { id: "a", type: "t" },
        { id: "b", type: "t" },
      ],
      { now: NOW },
    );
    const drop = fault("claim", { kind: "drop" });
    const batch = await queue.claim({ count: 2, now: NOW });
    drop.count();
    // Sent again after the lost reply (a third time when a loaded machine also timed the second out:
    // each is the same claim id, so however many, one lease).
    expect(drop.armed.seen).toBeGreaterThanOrEqual(2);
    expect(batch.map((task) => [task.id, task.attempt])).toEqual([
      ["a", 1],
      ["b", 1],
    ]);
    // The first run leased them; the repeat found that lease and charged nothing more.
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "leased", attempts: 1 });
    expect(await queue.claim({ count: 2, now: NOW + 10 })).toEqual([]); // nobody else gets them
    expect(await queue.ack(batch, { now: NOW + 20 })).toEqual([
      { id: "a", status: "ok", state: "done" },
      { id: "b", status: "ok", state: "done" },
    ]);
    await assertConsistent(redis, queue);
  });

  it("without retries, a claim whose reply was lost leaves its lease to the reclaimer, under a new token after", async () => {
    const queue = await openQueue({ retries: 0 });
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    const drop = fault("claim", { kind: "drop" });
    await expect(queue.claim({ count: 1, now: NOW })).rejects.toThrow(/^claim: Upstash unreachable/);
    drop.count();
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "leased", attempts: 1 });
    expect((await queue.reclaim({ now: NOW + LEASE_MS })).reclaimed).toEqual([]); // not before the deadline
    expect((await queue.reclaim({ now: NOW + LEASE_MS + 1 })).reclaimed).toEqual(["a"]);
    // Its worker never had it (the reply was lost), so never started it: no attempt is charged.
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "ready", attempts: 0, stalls: 1 });
    const [again] = await queue.claim({ count: 1, now: NOW + LEASE_MS + 2 });
    expect(again).toMatchObject({ id: "a", attempt: 1 });
    expect(await queue.ack([again], { now: NOW + LEASE_MS + 3 })).toEqual([{ id: "a", status: "ok", state: "done" }]);
    await assertConsistent(redis, queue);
  });

  it("an ack whose reply was lost is retried and answers already done, as does any later repeat", async () => {
    const queue = await openQueue();
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    const [task] = await queue.claim({ count: 1, now: NOW });
    const drop = fault("settle", { kind: "drop" });
    expect(await queue.ack([task], { now: NOW + 1 })).toEqual([{ id: "a", status: "already_done", state: "done" }]);
    drop.count();
    expect(drop.armed.seen).toBeGreaterThanOrEqual(2); // a third when the machine also timed the second out
    expect(await queue.ack([task], { now: NOW + 2 })).toEqual([{ id: "a", status: "already_done", state: "done" }]);
    // Without retries the caller sees the error, and its own repeat answers already done.
    const once = await openQueue({ retries: 0, name: queue.name });
    await queue.enqueue([{ id: "b", type: "t" }], { now: NOW });
    const [b] = await queue.claim({ count: 1, now: NOW });
    const dropB = fault("settle", { kind: "drop" });
    await expect(once.ack([b], { now: NOW + 1 })).rejects.toThrow(StoreError);
    dropB.count();
    expect(await once.ack([b], { now: NOW + 2 })).toEqual([{ id: "b", status: "already_done", state: "done" }]);
    expect(await queue.claim({ count: 10, now: NOW + 10 * LEASE_MS })).toEqual([]); // no redelivery after an ack
    await assertConsistent(redis, queue);
  });

  it("an enqueue whose reply was lost is retried and reports a duplicate; the task exists once", async () => {
    const queue = await openQueue();
    const drop = fault("enqueue", { kind: "drop" });
    expect(await queue.enqueue([{ id: "a", type: "t", payload: { n: 1 } }], { now: NOW })).toEqual([
      { id: "a", status: "duplicate", state: "ready" },
    ]);
    drop.count();
    expect(await taskFields(redis, queue)).toHaveLength(1);
    expect(await redis.get(queue.keys.seq)).toBe("1");
    await assertConsistent(redis, queue);
  });

  // Retry-safe means "running twice changes nothing twice", and the caller sees the second run's
  // answer: a settle (retry/fail) or requeue replayed after a lost reply answers "ok" with the state
  // the first run made, not "stale_token" / "not_failed".
  it("a settle (fail or retry) or a requeue whose reply was lost answers what its first run did", async () => {
    const queue = await openQueue();
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    const [task] = await queue.claim({ count: 1, now: NOW });
    const dropSettle = fault("settle", { kind: "drop" });
    const settled = await queue.settle([{ ...task, outcome: "fail", error: "poison" }], { now: NOW + 1 });
    dropSettle.count();
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "failed", lastError: "poison" }); // it did run once
    const dropRequeue = fault("requeue", { kind: "drop" });
    const requeued = await queue.admin.requeue(["a"], { now: NOW + 2 });
    dropRequeue.count();
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "ready", attempts: 0 }); // it did run once
    expect({ settled, requeued }).toEqual({
      settled: [{ id: "a", status: "ok", state: "failed" }],
      requeued: [{ id: "a", status: "ok" }],
    });
  });

  it("5xx answers: retried, a claim as a repeat: one lease whether or not the first try ran", async () => {
    const queue = await openQueue();
    const enqueue503 = fault("enqueue", { kind: "status", status: 503 });
    expect((await queue.enqueue([{ id: "a", type: "t" }], { now: NOW }))[0].status).toBe("ok");
    enqueue503.count();
    // A 502 before Redis ran it: the repeat finds no lease of that claim id and claims afresh.
    const claim502 = fault("claim", { kind: "status", status: 502 });
    const [first] = await queue.claim({ count: 1, now: NOW });
    claim502.count();
    expect(first).toMatchObject({ id: "a", attempt: 1 });
    expect(await queue.release([first], { now: NOW })).toEqual([{ id: "a", status: "ok" }]);
    // A 500 after Redis ran the claim: the repeat returns that lease.
    const claim500 = fault("claim", { kind: "status", status: 500, apply: true });
    const [task] = await queue.claim({ count: 1, now: NOW + 1 });
    claim500.count();
    expect(task).toMatchObject({ id: "a", attempt: 1 });
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "leased", attempts: 1 });
    const settle500 = fault("settle", { kind: "status", status: 500, apply: true });
    expect(await queue.ack([task], { now: NOW + 3 })).toEqual([{ id: "a", status: "already_done", state: "done" }]);
    settle500.count();
    await assertConsistent(redis, queue);
  });

  it("slow replies: a claim that timed out is repeated and gets its own lease back; a late ack answers already done", async () => {
    const queue = await openQueue();
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    const slowClaim = fault("claim", { kind: "delay", ms: TIMEOUT_MS + 200 });
    const [task] = await queue.claim({ count: 1, now: NOW });
    slowClaim.count();
    expect(task).toMatchObject({ id: "a", attempt: 1 });
    await new Promise((resolve) => setTimeout(resolve, 250)); // the first, late reply arrives and is dropped
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "leased", attempts: 1 });
    const slowSettle = fault("settle", { kind: "delay", ms: TIMEOUT_MS + 200 });
    expect(await queue.ack([task], { now: NOW + 3 })).toEqual([{ id: "a", status: "already_done", state: "done" }]);
    slowSettle.count();
    // A reply slower than usual but within the timeout is simply a slow reply.
    const slowStats = fault("stats", { kind: "delay", ms: 50 });
    expect(await queue.stats({ now: NOW })).toMatchObject({ done: 1, leased: 0 });
    slowStats.count();
    await sleep(250); // let the late replies land before the next test clears the faults
  });

  it("connection resets: the endpoint goes away mid-run, calls fail with a clear error, and work resumes when it returns", async () => {
    const own = await startUpstashEndpoint({ redisUrl: redisUrl() });
    const port = Number(new URL(own.url).port);
    const store = new UpstashStore({ url: own.url, token: own.token, timeoutMs: TIMEOUT_MS, retry: NO_BACKOFF });
    const queue = await configuredQueue(store, { name: uniqueQueueName("reset"), clockSkewMs: 0 });
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    await own.close();
    const error = await queue.claim({ count: 1, now: NOW }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(
      /^claim: Upstash unreachable at 127\.0\.0\.1:\d+ \(from the url given to UpstashStore\): /,
    );
    expect((error as Error).message).not.toContain(own.token);
    await expect(queue.enqueue([{ id: "b", type: "t" }], { now: NOW })).rejects.toThrow(
      /^enqueue: Upstash unreachable/,
    );
    injected["endpoint-down"] = (injected["endpoint-down"] ?? 0) + 2;
    const back = await startUpstashEndpoint({ redisUrl: redisUrl(), port, token: own.token });
    try {
      expect(await queue.enqueue([{ id: "b", type: "t" }], { now: NOW })).toEqual([
        { id: "b", status: "ok", state: "ready" },
      ]);
      const claimed = await queue.claim({ count: 2, now: NOW });
      expect(claimed.map((t) => t.id)).toEqual(["a", "b"]);
      expect((await queue.ack(claimed, { now: NOW })).map((r) => r.status)).toEqual(["ok", "ok"]);
    } finally {
      await back.close();
    }
  });

  it("the worker and reclaimer Lambdas ride through lost replies: the task ends DONE after one attempt, the token never logged", async () => {
    const name = uniqueQueueName("faults-fn");
    const env = {
      LEASEQ_QUEUE: name,
      UPSTASH_REDIS_REST_URL: endpoint.url,
      UPSTASH_REDIS_REST_TOKEN: endpoint.token,
      LEASEQ_CLOCK_SKEW_MS: "0",
    };
    const runs: string[] = [];
    const registry: TaskDefinitions = {
      ordered: false,
      types: {
        job: {
          leaseMs: 1_000,
          maxAttempts: 3,
          backoff: { baseMs: 10, maxMs: 20 },
          handler: (t) => void runs.push(t.id),
        },
      },
    };
    const silent = new Logger({ serviceName: "faults" });
    const worker = createWorker({ env, tasks: registry, logger: silent });
    const reclaimer = createReclaimer({ env, logger: silent });
    const queue = await openQueue({ name });
    await queue.enqueue([{ id: "a", type: "job" }], { now: Date.now() });
    const dropClaim = fault("claim", { kind: "drop" });
    const dropSettle = fault("settle", { kind: "drop" });
    const first = await captureStdout(() => worker({ leaseq: "drain" }, lambdaContext()));
    dropClaim.count();
    dropSettle.count();
    expect(dropClaim.armed.fired).toBe(1);
    expect(dropSettle.armed.fired).toBe(1);
    // The claim was repeated (same lease), the settle retried (already done): one run, one attempt.
    expect(runs).toEqual(["a"]);
    expect(JSON.parse(first.lines.find((l) => l.includes("worker invocation")) ?? "{}")).toMatchObject({
      claimed: 1,
      done: 1,
      lost: 0,
    });
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "done", attempts: 1 });
    const reclaimed = await captureStdout(() => reclaimer(scheduledEvent(), lambdaContext()));
    expect(reclaimed.result).toMatchObject({ reclaimed: 0, leased: 0, done: 1 });
    const everything = [...first.lines, ...reclaimed.lines].join("\n");
    expect(everything).not.toContain(endpoint.token);
  });

  const TASKS = scale(150, 3_000);
  it(
    `a random mix of faults on every script over ${TASKS} tasks loses nothing and never grants two live leases`,
    async () => {
      const seed = chaosSeed();
      const rng = random(seed);
      // The queue's default 5 attempts: a claim whose reply is lost is repeated and charges no
      // second attempt, so no task may end FAILED here (five lost claim replies would otherwise use
      // up a task's attempts).
      const queue = await openQueue();
      const actions: Array<[string, FaultAction, number]> = [
        ["drop", { kind: "drop" }, 0.08],
        ["status-503", { kind: "status", status: 503 }, 0.06],
        ["status-500-applied", { kind: "status", status: 500, apply: true }, 0.05],
        ["delay-timeout", { kind: "delay", ms: TIMEOUT_MS + 100 }, 0.02],
        ["delay-slow", { kind: "delay", ms: 30 }, 0.05],
      ];
      const rules = actions.map(([kind, action, chance]) => ({
        kind,
        armed: endpoint.faults.add({
          match: (command) => command[0].toUpperCase().startsWith("EVAL") && rng() < chance,
          times: 1_000_000,
          action,
        }),
      }));

      const ids = Array.from({ length: TASKS }, (_, i) => `s${i}`);
      const acknowledged = new Set<string>();
      const executions = new Map<string, number>();
      /** Leases we hold: token and deadline by id; a task may be held twice only if the older lease expired. */
      const held = new Map<string, Array<{ token: string; deadline: number }>>();
      const acked = new Set<string>();
      /** Acked by us: "ok", or "already done" after an ack of ours whose reply was lost. */
      const finished = new Set<string>();
      let now = NOW;
      let lostClaims = 0;
      let alreadyDone = 0;
      let staleSettles = 0;
      let errors = 0;
      for (
        let round = 0;
        round < 20 * TASKS && (acknowledged.size < ids.length || finished.size < ids.length);
        round++
      ) {
        now += 100;
        const pending = ids.filter((id) => !acknowledged.has(id)).slice(0, 5);
        if (pending.length > 0) {
          const results = await queue
            .enqueue(
              pending.map((id) => ({ id, type: "t", payload: { id } })),
              { now },
            )
            .catch(() => {
              errors++;
              return [];
            });
          for (const result of results) acknowledged.add(result.id);
        }
        const claimed = await queue.claim({ count: 3, now }).catch(() => {
          lostClaims++; // it may have leased tasks nobody runs: the reclaimer must bring them back
          return [];
        });
        for (const task of claimed) {
          const leases = held.get(task.id) ?? [];
          for (const older of leases) expect(older.deadline, `two live leases on ${task.id}`).toBeLessThan(now);
          leases.push({ token: task.token, deadline: task.leaseDeadlineMs });
          held.set(task.id, leases);
          executions.set(task.id, (executions.get(task.id) ?? 0) + 1);
        }
        // Settle everything we hold (retrying earlier failures with the same token).
        const items = [...held].flatMap(([id, leases]) => leases.map((lease) => ({ id, token: lease.token })));
        if (items.length > 0) {
          const results = await queue.ack(items, { now }).catch(() => {
            errors++;
            return undefined;
          });
          for (const [i, result] of (results ?? []).entries()) {
            const leases = held.get(result.id) ?? [];
            held.set(
              result.id,
              leases.filter((lease) => lease.token !== items[i].token),
            );
            if (result.status === "ok") {
              expect(acked.has(result.id), `${result.id} acked twice`).toBe(false);
              acked.add(result.id);
              finished.add(result.id);
            } else if (result.status === "already_done") {
              alreadyDone++;
              finished.add(result.id);
            } else staleSettles++; // the lease was reclaimed while the ack was lost: the task runs again
          }
        }
        if (rng() < 0.3) await queue.reclaim({ now }).catch(() => errors++);
        if (round % 50 === 0) await assertConsistent(redis, queue);
      }
      const fired = Object.fromEntries(rules.map((rule) => [rule.kind, rule.armed.fired]));
      endpoint.faults.clear();
      for (const [kind, n] of Object.entries(fired)) injected[kind] = (injected[kind] ?? 0) + n;
      await sleep(TIMEOUT_MS + 200); // late replies land

      const records = await assertConsistent(redis, queue);
      await expectClean(queue, now);
      const lost = ids.filter((id) => records.get(id)?.state !== "D");
      const duplicates = [...executions.values()].reduce((sum, n) => sum + n - 1, 0);
      report("faults-soak", {
        seed,
        tasks: ids.length,
        faultsInjected: Object.values(fired).reduce((a, b) => a + b, 0),
        byKind: fired,
        failedCalls: errors + lostClaims,
        lostClaimReplies: lostClaims,
        alreadyDoneAnswers: alreadyDone,
        staleSettles,
        duplicates,
        lost: lost.length,
      });
      expect(lost, `lost or failed (seed ${seed})`).toEqual([]);
      expect(records.size).toBe(ids.length);
      expect(finished.size).toBe(ids.length);
      // A task runs again only when an ack was lost long enough for its lease to be reclaimed.
      expect(duplicates).toBeLessThanOrEqual(staleSettles);
    },
    scale(60_000, 900_000),
  );
});
