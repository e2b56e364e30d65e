import { Logger } from "@aws-lambda-powertools/logger";
import { afterAll, describe, expect, it } from "vitest";
import { REDEPLOY_ADVICE } from "../../functions/policy-mismatch.js";
import { defineTasks, policyMismatches, policyText } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import { ConfigError } from "../../shared/errors.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { configProblems } from "../helpers/config-errors.js";
import { captureStdout, functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { adapters, uniqueQueueName } from "../helpers/stores.js";

// INFO: the tests read the "worker invocation" line (captureStdout keeps it off the test output).
const silent = () => new Logger({ serviceName: "long-leases" });
const invocationLog = (lines: string[]) => JSON.parse(lines.find((line) => line.includes("worker invocation")) ?? "{}");

describe.each(adapters)("leases as long as the invocation allows, over $name", (adapter) => {
  const stores: Store[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close();
  });
  const queueNamed = async (name: string) => {
    const store = await adapter.open();
    stores.push(store);
    return new Queue(store, { name });
  };

  it("claims and runs a type whose lease is 280 s on a 300 s worker", async () => {
    const name = uniqueQueueName("long");
    const ran: number[] = [];
    const tasks = defineTasks({
      types: { report: { leaseMs: 280_000, handler: (task) => void ran.push(task.leaseDeadlineMs - Date.now()) } },
    });
    const worker = createWorker({
      tasks,
      env: functionEnv(adapter, name, { LEASEQ_WORKER_TIMEOUT_MS: "300000", LEASEQ_TASKS: policyText(tasks) }),
      logger: silent(),
    });
    const startedAt = Date.now();
    const context = lambdaContext(() => 300_000 - (Date.now() - startedAt));
    const { lines } = await captureStdout(() =>
      worker(sqsEvent(sqsRecord({ tasks: [{ id: "r1", type: "report" }] })), context),
    );
    expect(invocationLog(lines)).toMatchObject({ enqueued: 1, claimed: 1, done: 1, released: 0 });
    expect(ran).toHaveLength(1);
    expect(ran[0]).toBeGreaterThan(275_000); // it ran under its own 280 s lease
    expect((await (await queueNamed(name)).admin.inspect("r1"))?.state).toBe("done");
  });

  it("judges the time left per type: a long type waits while short ones run, and a claim is never empty while they are READY", async () => {
    const name = uniqueQueueName("window");
    const queue = await queueNamed(name);
    const ran: string[] = [];
    const handler = (task: { id: string }) => void ran.push(task.id);
    const worker = createWorker({
      tasks: { types: { report: { leaseMs: 280_000, handler }, email: { leaseMs: 30_000, handler } } },
      env: functionEnv(adapter, name),
      logger: silent(),
    });
    // The long task is at the head of the queue; the invocation has 100 s left, too few for it.
    await queue.enqueue(
      [
        { id: "long", type: "report", priority: -5 },
        ...Array.from({ length: 5 }, (_, i) => ({ id: `short-${i}`, type: "email" })),
      ],
      { now: Date.now() },
    );
    const { lines } = await captureStdout(() =>
      worker(
        { leaseq: "drain" },
        lambdaContext(() => 100_000),
      ),
    );
    expect(ran).toEqual(["short-0", "short-1", "short-2", "short-3", "short-4"]);
    expect(invocationLog(lines)).toMatchObject({ claimed: 5, done: 5, released: 0 });
    expect(await queue.admin.inspect("long")).toMatchObject({ state: "ready", attempts: 0 });

    // A fresh invocation with its whole 300 s ahead takes it.
    await captureStdout(() =>
      worker(
        { leaseq: "drain" },
        lambdaContext(() => 299_000),
      ),
    );
    expect(ran.at(-1)).toBe("long");
    expect(await queue.admin.inspect("long")).toMatchObject({ state: "done", attempts: 1 });
  });

  it("counts a run the time budget cuts off as an attempt with the overrun error; tasks it never started keep theirs", async () => {
    const name = uniqueQueueName("budget");
    const queue = await queueNamed(name);
    const started: string[] = [];
    const worker = createWorker({
      tasks: {
        types: {
          work: {
            leaseMs: 1_000,
            // One at a time per invocation: w2 and w3 are never claimed by it, so nothing waits LEASED.
            concurrency: 1,
            handler: (task) =>
              new Promise<void>((resolve, reject) => {
                started.push(task.id);
                const timer = setTimeout(resolve, 10_000);
                task.signal.addEventListener("abort", () => {
                  clearTimeout(timer);
                  reject(task.signal.reason);
                });
              }),
          },
        },
      },
      env: functionEnv(adapter, name),
      logger: silent(),
    });
    await queue.enqueue(
      ["w1", "w2", "w3"].map((id) => ({ id, type: "work" })),
      { now: Date.now() },
    );
    // 2.5 s left: w1 fits its 1 s lease plus the 1 s margin, but not its 10 s of work.
    const startedAt = Date.now();
    const { lines } = await captureStdout(() =>
      worker(
        { leaseq: "drain" },
        lambdaContext(() => 2_500 - (Date.now() - startedAt)),
      ),
    );
    expect(started).toEqual(["w1"]);
    expect(invocationLog(lines)).toMatchObject({ claimed: 1, started: 1, released: 0, retried: 1, failed: 0, done: 0 });
    const w1 = await queue.admin.inspect("w1");
    expect(w1).toMatchObject({ state: "scheduled", attempts: 1 });
    expect(w1?.lastError).toMatch(/^did not finish within the invocation \(1[0-9]{3} ms\)$/);
    for (const id of ["w2", "w3"]) {
      expect(await queue.admin.inspect(id), id).toMatchObject({ state: "ready", attempts: 0, lastError: "" });
    }
  });

  it("ends FAILED after its attempts a handler that always overruns, even one that ignores its signal", async () => {
    const name = uniqueQueueName("overrun");
    const queue = await queueNamed(name);
    let runs = 0;
    const worker = createWorker({
      tasks: {
        types: {
          // Never settles, never looks at its signal: only the invocation's end stops it.
          stuck: {
            leaseMs: 1_000,
            maxAttempts: 2,
            backoff: { baseMs: 0, maxMs: 0 },
            handler: () => {
              runs++;
              return new Promise<void>(() => {});
            },
          },
        },
      },
      env: functionEnv(adapter, name),
      logger: silent(),
    });
    await queue.enqueue([{ id: "s1", type: "stuck" }], { now: Date.now() });
    for (let invocation = 0; invocation < 2; invocation++) {
      const startedAt = Date.now();
      await captureStdout(() =>
        worker(
          { leaseq: "drain" },
          lambdaContext(() => 2_500 - (Date.now() - startedAt)),
        ),
      );
    }
    expect(runs).toBe(2);
    const s1 = await queue.admin.inspect("s1");
    expect(s1).toMatchObject({ state: "failed", attempts: 2 });
    expect(s1?.lastError).toMatch(/^did not finish within the invocation \(\d+ ms\)$/);
  });

  it("stops draining only when no declared lease fits: no hidden 60 s floor on a short worker", async () => {
    const name = uniqueQueueName("short-worker");
    const queue = await queueNamed(name);
    const ran: string[] = [];
    const worker = createWorker({
      tasks: { types: { ping: { leaseMs: 10_000, handler: (task) => void ran.push(task.id) } } },
      env: functionEnv(adapter, name, { LEASEQ_WORKER_TIMEOUT_MS: "40000" }),
      logger: silent(),
    });
    await queue.enqueue([{ id: "p1", type: "ping" }], { now: Date.now() });
    await captureStdout(() =>
      worker(
        { leaseq: "drain" },
        lambdaContext(() => 39_000),
      ),
    );
    expect(ran).toEqual(["p1"]);
    await queue.enqueue([{ id: "p2", type: "ping" }], { now: Date.now() });
    // 10.5 s left: the 10 s lease plus the 1 s margin does not fit, so nothing is claimed.
    await captureStdout(() =>
      worker(
        { leaseq: "drain" },
        lambdaContext(() => 10_500),
      ),
    );
    expect(await queue.admin.inspect("p2")).toMatchObject({ state: "ready", attempts: 0 });
  });

  it("refuses to start, listing every problem, when a lease cannot fit the timeout or the declaration differs from the deployed one", async () => {
    const name = uniqueQueueName("cold");
    const handler = () => {};
    const deployed = defineTasks({ types: { a: { leaseMs: 30_000, handler }, gone: { handler } } });
    const worker = createWorker({
      tasks: { types: { a: { leaseMs: 60_000, handler }, b: { leaseMs: 120_000, handler } } },
      env: functionEnv(adapter, name, { LEASEQ_WORKER_TIMEOUT_MS: "60000", LEASEQ_TASKS: policyText(deployed) }),
      logger: silent(),
    });
    const error = await worker({ leaseq: "drain" }, lambdaContext()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'task type "a": timeoutMs: the worker declares 60000 (runs until the invocation ends), the construct was given 30000 (runs until the invocation ends); heartbeatMs: the worker declares 60000, the construct was given 30000',
      'task type "b" is declared in the worker but not in the construct\'s tasks',
      'task type "gone" is in the construct\'s tasks but not declared in the worker',
      REDEPLOY_ADVICE,
      'task type "a": leaseMs 60000 cannot fit the worker timeout of 60 s minus the 5000 ms margin (at most 55000 ms); shorten it or raise workerTimeout (at most 900 s)',
      'task type "b": leaseMs 120000 cannot fit the worker timeout of 60 s minus the 5000 ms margin (at most 55000 ms); shorten it or raise workerTimeout (at most 900 s)',
    ]);
  });
});

describe("defineTasks", () => {
  it("applies the defaults and reports every problem of a declaration in one error", () => {
    const declared = defineTasks({ types: { email: { handler: () => {} } } });
    expect(declared.types.email).toMatchObject({
      timeoutMs: 60_000,
      heartbeatMs: 30_000,
      stopsAtTimeout: false,
      concurrency: undefined,
      maxAttempts: 5,
      backoff: { baseMs: 1_000, maxMs: 300_000 },
    });
    expect(declared.ordered).toBe(false);
    expect(declared).toMatchObject({ concurrency: 10, maxStalls: 3 });
    // leaseMs alone works as it did: both times at once, and a run goes on until the invocation ends.
    expect(defineTasks({ types: { old: { leaseMs: 20_000, handler: () => {} } } }).types.old).toMatchObject({
      timeoutMs: 20_000,
      heartbeatMs: 20_000,
      stopsAtTimeout: false,
    });
    expect(
      defineTasks({ types: { etl: { timeoutMs: 720_000, heartbeatMs: 30_000, concurrency: 1, handler: () => {} } } })
        .types.etl,
    ).toMatchObject({ timeoutMs: 720_000, heartbeatMs: 30_000, stopsAtTimeout: true, concurrency: 1 });
    expect(defineTasks({ types: { quick: { timeoutMs: 5_000, handler: () => {} } } }).types.quick).toMatchObject({
      heartbeatMs: 5_000,
    });
    expect(
      configProblems(() =>
        defineTasks({
          types: {
            "no spaces": { handler: () => {} },
            quick: { leaseMs: 999, maxAttempts: 0, handler: () => {} },
            lazy: { backoff: { baseMs: 5_000, maxMs: 10 }, handler: "not a function" as unknown as () => void },
            both: { leaseMs: 10_000, timeoutMs: 10_000, handler: () => {} },
            beat: { timeoutMs: 10_000, heartbeatMs: 20_000, concurrency: 0, handler: () => {} },
          },
          acceptTypes: ["quick", "other one"],
          concurrency: 101,
          maxStalls: 0,
        }),
      ),
    ).toEqual([
      'task type name "no spaces" must be 1-64 characters of A-Z a-z 0-9 _ . -',
      'task type "quick": leaseMs must be an integer from 1000 to 86400000 ms, got 999',
      'task type "quick": maxAttempts must be an integer from 1 to 1000, got 0',
      'task type "lazy": handler must be a function',
      'task type "lazy": backoff.maxMs must be an integer from 5000 to 31622400000 ms, got 10',
      'task type "both": leaseMs is the older way to say timeoutMs and heartbeatMs together: give timeoutMs and heartbeatMs, or leaseMs alone',
      'task type "beat": heartbeatMs 20000 is longer than timeoutMs 10000: a run ends at its timeout, so a heartbeat longer than it only delays noticing a crash; give at most 10000',
      'acceptTypes: "quick" is declared in types already',
      'acceptTypes: "other one" is not a valid task type name',
      "defineTasks: concurrency must be an integer from 1 to 100, got 101",
      "defineTasks: maxStalls must be an integer from 1 to 1000, got 0",
      'defineTasks: task type "beat": concurrency must be an integer from 1 to 100, got 0',
    ]);
  });
});

describe("the cold start's policy check", () => {
  const handler = () => {};

  it("names only the fields that differ, as defineTasks takes them, and says what to do", async () => {
    const worker = defineTasks({
      types: {
        charge: { group: { concurrency: 3 }, handler },
        email: { maxAttempts: 3, backoff: { baseMs: 500 }, handler },
      },
      acceptTypes: ["report"],
    });
    const construct = defineTasks({
      ordered: true,
      groups: { concurrency: 2 },
      types: {
        charge: { group: { ordered: true, rate: { max: 5, perMs: 1_000 } }, rate: { max: 50, perMs: 60_000 }, handler },
        email: { maxAttempts: 3, backoff: { baseMs: 500, maxMs: 60_000 }, handler },
      },
    });
    expect(await policyMismatches(worker, policyText(construct))).toEqual([
      "ordered: the worker declares false, the construct was given true; concurrency: the worker declares 10, the construct was given 1; groups.concurrency: the worker declares none, the construct was given 2",
      'task type "charge": group.concurrency: the worker declares 3, the construct was given 1; group.ordered: the worker declares false, the construct was given true; group.rate: the worker declares none, the construct was given { max: 5, perMs: 1000 }; rate: the worker declares none, the construct was given { max: 50, perMs: 60000 }',
      'task type "email": backoff.maxMs: the worker declares 300000, the construct was given 60000',
      "acceptTypes: the worker declares [report], the construct was given []",
      "the worker entry and the construct were deployed from different declarations: have both import the same defineTasks(...) result (createWorker({ tasks }) and new LeaseQueue(..., { tasks })) and redeploy them together (one cdk deploy)",
    ]);
    expect(await policyMismatches(worker, policyText(worker))).toEqual([]);
  });

  it("fails a cold start whose policies differ in one field with that field alone", async () => {
    const name = uniqueQueueName("cold");
    const deployed = defineTasks({ types: { x: { group: { concurrency: 1 }, handler } } });
    const worker = createWorker({
      tasks: { types: { x: { group: { concurrency: 3 }, handler } } },
      env: functionEnv(adapters[0], name, { LEASEQ_TASKS: policyText(deployed) }),
      logger: silent(),
    });
    const error = await worker({ leaseq: "drain" }, lambdaContext()).catch((e: unknown) => e);
    expect((error as ConfigError).message).toBe(
      `invalid configuration:\n- task type "x": group.concurrency: the worker declares 3, the construct was given 1\n- ${REDEPLOY_ADVICE}`,
    );
  });
});

describe("defineTasks group policies", () => {
  it("keeps a type's group policy and rate, puts them in the policy text, and names every bad field", () => {
    const declared = defineTasks({
      groups: { concurrency: 3 },
      types: {
        charge: { group: { ordered: true }, rate: { max: 50, perMs: 1_000 }, handler: () => {} },
        email: { handler: () => {} },
      },
    });
    expect(declared.types.charge.group).toEqual({ ordered: true, concurrency: 1, typeRate: { max: 50, perMs: 1_000 } });
    expect(declared.groups).toEqual({ concurrency: 3 });
    expect(policyText(declared)).toContain("charge:~60000:30000::5:1000:300000:1.1.0.0.50.1000");
    expect(policyText(declared)).toMatch(/^parallel\+3\.0\.0\.0\.0\.0;/);
    expect(
      configProblems(() =>
        defineTasks({
          groups: { concurrency: 0 },
          types: {
            a: { group: { ordered: true, concurrency: 2 }, handler: () => {} },
            b: { group: { rate: { max: 0, perMs: 1_000 } }, handler: () => {} },
            c: { group: { concurency: 2 } as never, handler: () => {} },
          },
        }),
      ),
    ).toEqual([
      'task type "a": an ordered group runs one task at a time: concurrency must be 1 (or left out), got 2',
      'task type "b": rate.max must be an integer from 1 to 1000000, got 0',
      'task type "c": unknown group policy field "concurency"; allowed: concurrency, ordered, onFailure, rate, typeRate',
      "groups: concurrency must be an integer from 1 to 100, got 0",
    ]);
  });
});
