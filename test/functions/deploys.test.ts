// Deployments that share a queue, and a worker of the previous version still draining while the
// new one starts: a worker leaves alone the tasks of a type it has no handler
// for but the queue declares (another deployment's, or the new version's), and no deployment's cold
// start overwrites the policies of the types another one runs.
import { Logger } from "@aws-lambda-powertools/logger";
import { afterAll, describe, expect, it } from "vitest";
import type { TaskDefinitions } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { expectClean } from "../helpers/check.js";
import { functionEnv, lambdaContext } from "../helpers/events.js";
import { adapters, uniqueQueueName } from "../helpers/stores.js";

const drain = { leaseq: "drain" as const };
const silent = new Logger({
  serviceName: "test-worker",
  logLevel: (process.env.DEBUG_WORKER ? "DEBUG" : "SILENT") as "SILENT",
});

type Handler = ReturnType<typeof createWorker>;

/**
 * A task of type b, which only the new version declares: the previous version's drain leaves it
 * READY, no attempt used and no error; the new version's runs it.
 */
async function runsOnlyOnTheNewVersion(queue: Queue, previous: Handler, current: Handler, ran: string[]) {
  await queue.enqueue([{ id: "b-1", type: "b" }], { now: Date.now() });
  await previous(drain, lambdaContext());
  expect(await queue.admin.inspect("b-1")).toMatchObject({ state: "ready", attempts: 0, lastError: "" });
  await current(drain, lambdaContext());
  expect(ran).toEqual(["b-1"]);
  expect(await queue.admin.inspect("b-1")).toMatchObject({ state: "done", attempts: 1 });
}

describe.each(adapters)("deployments sharing a queue, over $name", (adapter) => {
  const stores: Store[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close();
  });

  async function open(name: string) {
    const store = await adapter.open();
    stores.push(store);
    return new Queue(store, { name });
  }
  const worker = (name: string, tasks: TaskDefinitions) =>
    createWorker({ env: functionEnv(adapter, name), tasks, logger: silent });

  it("a worker of the previous version, still draining, leaves a new type's task for the new version", async () => {
    const name = uniqueQueueName("deploy");
    const queue = await open(name);
    const ran: string[] = [];
    const handler = (task: { id: string }) => void ran.push(task.id);
    const previous = worker(name, { types: { a: { handler } } });
    const current = worker(name, { types: { a: { handler }, b: { handler } } });
    await previous(drain, lambdaContext()); // warm, and draining when the new version starts
    await current(drain, lambdaContext()); // the new version's cold start declares type b
    await runsOnlyOnTheNewVersion(queue, previous, current, ran);
    await expectClean(queue, Date.now());
  });

  it("a worker of the previous version starting after the new one takes no type away from it", async () => {
    const name = uniqueQueueName("deploy");
    const queue = await open(name);
    const ran: string[] = [];
    const handler = (task: { id: string }) => void ran.push(task.id);
    const current = worker(name, { types: { a: { handler }, b: { handler, leaseMs: 120_000 } } });
    await current(drain, lambdaContext()); // the new version's cold start declares type b
    const previous = worker(name, { types: { a: { handler } } });
    await previous(drain, lambdaContext()); // a late cold start of the previous version
    await runsOnlyOnTheNewVersion(queue, previous, current, ran);
    // Still b's own policy (its lease), not the default, while it is retired.
    await queue.enqueue([{ id: "b-2", type: "b" }], { now: Date.now() });
    const [leased] = await queue.claim({ count: 1, now: Date.now(), types: ["b"] });
    expect(leased.leaseDeadlineMs - Date.now()).toBeGreaterThan(100_000);
    await expectClean(queue, Date.now());
  });

  it("a type no declaration has any more keeps its policy a day, then its fields go", async () => {
    const name = uniqueQueueName("deploy");
    const queue = await open(name);
    const start = Date.now();
    const both = {
      defaultPolicy: { leaseMs: 1_000, maxAttempts: 1 },
      strictTypes: true,
      policies: { a: { leaseMs: 1_000, maxAttempts: 1 }, b: { leaseMs: 5_000, maxAttempts: 2 } },
    };
    const onlyA = { ...both, policies: { a: both.policies.a } };
    await queue.configure(both, { now: start });
    await queue.configure(onlyA, { now: start + 1_000 });
    expect(await queue.enqueue([{ id: "b-1", type: "b" }], { now: start + 2_000 })).toMatchObject([{ status: "ok" }]);
    await queue.configure(both, { now: start + 3_000 }); // declared again: no longer retired
    await queue.configure(onlyA, { now: start + 4_000 }); // retired again, from now
    const day = 86_400_000;
    await queue.configure({ ...onlyA, maxPayloadBytes: 999 }, { now: start + 2_000 + day });
    expect(await queue.enqueue([{ id: "b-2", type: "b" }], { now: start + 2_000 + day })).toMatchObject([
      { status: "ok" },
    ]);
    await queue.configure({ ...onlyA, maxPayloadBytes: 1000 }, { now: start + 4_000 + 86_400_000 });
    await expect(queue.enqueue([{ id: "b-3", type: "b" }], { now: start + 4_000 + 86_400_000 })).rejects.toThrow(
      /type "b" is not declared/,
    );
  });

  it("two deployments accepting each other's types keep each other's policies at every cold start", async () => {
    const name = uniqueQueueName("share");
    const queue = await open(name);
    const ran: string[] = [];
    const handler = (task: { id: string }) => void ran.push(task.id);
    const first = () =>
      worker(name, { types: { x: { leaseMs: 10_000, maxAttempts: 2, handler } }, acceptTypes: ["y"] });
    const second = () =>
      worker(name, { types: { y: { leaseMs: 20_000, maxAttempts: 3, handler } }, acceptTypes: ["x"] });
    // Both warm, each cold start having written its declaration: the second's last.
    const a = first();
    const b = second();
    await a(drain, lambdaContext());
    await b(drain, lambdaContext());
    await queue.enqueue(
      [
        { id: "x-1", type: "x" },
        { id: "y-1", type: "y" },
      ],
      { now: Date.now() },
    );
    await a(drain, lambdaContext());
    await b(drain, lambdaContext());
    // A third cold start of the first deployment: the second's type keeps its policy.
    await first()(drain, lambdaContext());
    await queue.enqueue([{ id: "y-2", type: "y" }], { now: Date.now() });
    await b(drain, lambdaContext());
    expect(ran.sort()).toEqual(["x-1", "y-1", "y-2"]);
    expect(await queue.admin.inspect("x-1")).toMatchObject({ state: "done", maxAttempts: 2 });
    expect(await queue.admin.inspect("y-1")).toMatchObject({ state: "done", maxAttempts: 3 });
    expect(await queue.admin.inspect("y-2")).toMatchObject({ state: "done", maxAttempts: 3 });
    await expectClean(queue, Date.now());
  });
});
