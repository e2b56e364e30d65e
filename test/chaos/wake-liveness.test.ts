// Model-based testing of the wake-up protocol's liveness (docs/wake-ups.md): workers start from
// wake-ups, claim until a claim comes back empty or their time runs out, and hand off; producers
// enqueue at any moment between, ready now or delayed; time passes. Tasks are quick ("job", done at
// once) or long ("long", held until a `finish` step), and a worker runs at most one long task at a
// time (its room): a claim short of room leaves long tasks READY and asks for another worker with a
// wake-up for that type. A worker that handed off while its long task runs listens: it takes a
// wake-up from the queue (one for any work, or for a type it has room for) and claims for it, as a
// free slot does; when its long task ends it claims again, and stops when it found nothing.
// After every step: when no worker is draining (each is idle, or running a long task with the queue
// handed back), every task that is READY or falls due is covered by a wake-up not consumed yet (for
// no later than it falls due) that a worker may act on: one for any work, or for its type. A wake-up
// is consumed by starting a worker, or by a running worker that takes it; its claim answers it in
// Redis. The reclaimer's tick is left out on purpose: it is the safety net, and this suite proves
// the queue does not need it for work a caller made due.
// A second deployment shares the queue (docs/wake-ups.md): it runs "report" (quick), has a worker
// of its own and its own wake queue; a task's wake-up must be on the wake queue of the deployment
// running its type, and one deployment's draining covers only its own work.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import { adapters, configuredQueue, storeFixture, uniqueQueueName } from "../helpers/stores.js";
import { chaosSeed, report, scale } from "./helpers/chaos.js";

const START = 1_800_000_000_000;
/** Workers 0 and 1 are deployment A's (job, long); worker 2 is deployment B's (report). */
const WORKERS = 3;
const DEPLOYMENTS = ["a", "b"] as const;
type Deployment = (typeof DEPLOYMENTS)[number];
const deploymentOf = (w: number): Deployment => (w < 2 ? "a" : "b");
const WAKE_QUEUE = { a: "http://127.0.0.1:4566/000000000000/a-wake", b: "http://127.0.0.1:4566/000000000000/b-wake" };
const TYPES: Record<Deployment, string[]> = { a: ["job", "long"], b: ["report"] };
const POLICY = { leaseMs: 60_000, maxAttempts: 5 };

type Op =
  | { kind: "enqueue"; count: number; delayMs: number; type: "job" | "long" | "report"; by: Deployment }
  | { kind: "start"; worker: number }
  | { kind: "claim"; worker: number }
  | { kind: "handoff"; worker: number }
  | { kind: "cutOff"; worker: number }
  | { kind: "take"; worker: number }
  | { kind: "finish"; worker: number }
  | { kind: "pass"; ms: number };

const worker = fc.nat(WORKERS - 1);
// Weighted towards what builds up the interesting states: several workers each running a long
// task with the queue handed back, a wake-up for long tasks waiting, and work enqueued meanwhile.
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("enqueue" as const),
      count: fc.integer({ min: 1, max: 3 }),
      delayMs: fc.constantFrom(0, 0, 0, 2_000, 20_000),
      type: fc.constantFrom("job" as const, "long" as const, "report" as const),
      by: fc.constantFrom(...DEPLOYMENTS),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("start" as const), worker }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("claim" as const), worker }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("handoff" as const), worker }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cutOff" as const), worker }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("take" as const), worker }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("finish" as const), worker }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("pass" as const), ms: fc.constantFrom(10, 1_000, 3_000, 6_000) }),
  },
);

/**
 * Always run: both workers end up running a long task with the queue handed back, a wake-up for long
 * tasks waiting (no room for one in either), and a quick task is enqueued: it needs a wake-up of its
 * own, which a free slot takes.
 */
const BOTH_RUNNING_LONG: Op[] = [
  { kind: "enqueue", count: 3, delayMs: 0, type: "long", by: "a" },
  { kind: "start", worker: 0 },
  { kind: "claim", worker: 0 },
  { kind: "claim", worker: 0 },
  { kind: "handoff", worker: 0 },
  { kind: "start", worker: 1 },
  { kind: "claim", worker: 1 },
  { kind: "claim", worker: 1 },
  { kind: "handoff", worker: 1 },
  { kind: "enqueue", count: 1, delayMs: 0, type: "job", by: "b" },
  { kind: "take", worker: 0 },
  { kind: "finish", worker: 1 },
  { kind: "finish", worker: 0 },
];

/**
 * A worker: idle; draining (its claims so far brought work); stopping (its last claim came back
 * empty); or running (it handed off, its long task still runs: a free slot listens).
 */
type State = "idle" | "draining" | "stopping" | "running";

/** A wake-up message: on whose wake queue, when it is due, and the types it is for (undefined: any work). */
interface Wake {
  to: Deployment;
  at: number;
  forTypes: string[] | undefined;
}

describe.each(adapters)("wake-ups over $name", (adapter) => {
  const { open } = storeFixture(adapter);

  async function run(ops: Op[]): Promise<void> {
    const store = await open();
    const name = uniqueQueueName("live");
    // Each deployment's cold start: its types, its wake queue, the other's types accepted.
    const queues = {} as Record<Deployment, Queue>;
    for (const d of DEPLOYMENTS) {
      const other = d === "a" ? "b" : "a";
      queues[d] = await configuredQueue(store, {
        name,
        deployment: d,
        wakeQueueUrl: WAKE_QUEUE[d],
        policies: Object.fromEntries(TYPES[d].map((type) => [type, POLICY])),
        acceptTypes: TYPES[other],
      });
    }
    const deploymentOfUrl = (url: string): Deployment => (url === WAKE_QUEUE.a ? "a" : "b");
    const typeDeployment = (type: string): Deployment => (TYPES.a.includes(type) ? "a" : "b");
    let now = START;
    let seq = 0;
    const workers = Array.from({ length: WORKERS }, () => ({
      state: "idle" as State,
      /** Its first claim (answering the wake-up that started it) is still to come. */
      woken: false,
      /** The long task it runs: its id and lease token. */
      long: undefined as { id: string; token: string } | undefined,
    }));
    /** Wake-ups arranged and not yet consumed. */
    const wakes: Wake[] = [];
    /** Tasks not yet done: their due times and types. */
    const due = new Map<string, { at: number; type: string }>();
    const trace: string[] = [];

    /** One claim of worker `w`: quick tasks done at once, a long one held; false when it leased nothing. */
    const claim = async (w: number, options: { woken: boolean; lingers: boolean }) => {
      const me = workers[w];
      const d = deploymentOf(w);
      const outcome = await queues[d].claimOrNextDue({
        count: 2,
        now,
        types: TYPES[d],
        room: d === "a" ? { long: me.long ? 0 : 1 } : undefined,
        busy: me.long !== undefined,
        ...options,
      });
      if (outcome.wakeAtMs !== undefined) {
        // As the drain sends it: for the type it has no room left for, when that is why tasks were left.
        const filled = outcome.tasks.length === 2;
        const roomLeft = (me.long ? 0 : 1) - outcome.tasks.filter((task) => task.type === "long").length;
        wakes.push({
          to: d,
          at: outcome.wakeAtMs,
          forTypes: !filled && roomLeft <= 0 && d === "a" ? ["long"] : undefined,
        });
      }
      const quick = outcome.tasks.filter((task) => task.type !== "long");
      for (const task of outcome.tasks) if (task.type === "long") me.long = { id: task.id, token: task.token };
      if (quick.length > 0) {
        await queues[d].settle(
          quick.map((task) => ({ id: task.id, token: task.token, outcome: "ack" as const })),
          { now },
        );
      }
      for (const task of quick) due.delete(task.id);
      return outcome.tasks.length > 0;
    };

    for (const step of ops) {
      trace.push(JSON.stringify(step));
      const me = step.kind === "enqueue" || step.kind === "pass" ? undefined : workers[step.worker];
      if (step.kind === "enqueue") {
        // A producer of either deployment: the wake-ups go where the reply says.
        const type = step.type;
        const tasks = Array.from({ length: step.count }, () => ({ id: `t${seq++}`, type, delayMs: step.delayMs }));
        const { wakeAtMs, wakeTo } = await queues[step.by].enqueueAndWake(tasks, { now });
        for (const task of tasks) due.set(task.id, { at: now + step.delayMs, type });
        if (wakeAtMs !== undefined) wakes.push({ to: step.by, at: wakeAtMs, forTypes: undefined });
        for (const wake of wakeTo)
          wakes.push({ to: deploymentOfUrl(wake.queueUrl), at: wake.atMs, forTypes: undefined });
      } else if (step.kind === "start" && me) {
        // SQS delivers a wake-up at its time (or later): it starts an idle worker of its deployment.
        const index = wakes.findIndex((wake) => wake.at <= now && wake.to === deploymentOf(step.worker));
        if (me.state !== "idle" || index < 0) continue;
        wakes.splice(index, 1);
        me.state = "draining";
        me.woken = true;
      } else if (step.kind === "claim" && me) {
        if (me.state !== "draining") continue;
        const got = await claim(step.worker, { woken: me.woken, lingers: true });
        me.woken = false;
        if (!got) me.state = "stopping";
      } else if ((step.kind === "handoff" || step.kind === "cutOff") && me) {
        // A worker stops looking: after an empty claim (handoff), or when its time runs out (cutOff).
        if (me.state === "idle" || me.state === "running" || (step.kind === "handoff" && me.state !== "stopping")) {
          continue;
        }
        if (step.kind === "cutOff" && me.long) {
          // Its time ran out: the long task is stopped and retried at once (a retry due now), settled
          // before the invocation's last hand-off, as the worker does (functions/worker.ts).
          await queues.a.settle([{ ...me.long, outcome: "retry", retryAtMs: now, error: "cut off" }], { now });
          me.long = undefined;
        }
        const d = deploymentOf(step.worker);
        const wakeAtMs = await queues[d].handOff({ now, cutOff: step.kind === "cutOff", woken: me.woken });
        if (wakeAtMs !== undefined) wakes.push({ to: d, at: wakeAtMs, forTypes: undefined });
        me.woken = false;
        // Its long task still runs: its free slot listens. Cut off, it holds no long task here.
        me.state = me.long && step.kind === "handoff" ? "running" : "idle";
      } else if (step.kind === "take" && me) {
        // A running worker's free slot takes a wake-up it may claim for; the others stay queued.
        if (me.state !== "running") continue;
        const index = wakes.findIndex(
          (wake) =>
            wake.to === deploymentOf(step.worker) &&
            wake.at <= now &&
            (!wake.forTypes || wake.forTypes.some((type) => type !== "long" || !me.long)),
        );
        if (index < 0) continue;
        wakes.splice(index, 1);
        if (await claim(step.worker, { woken: true, lingers: false })) me.state = "draining";
      } else if (step.kind === "finish" && me) {
        // Its long task ends (acked): the slot frees and it claims again; with nothing running and
        // nothing found, it stops (and hands off).
        if (!me.long || me.state === "idle") continue;
        await queues.a.settle([{ ...me.long, outcome: "ack" }], { now });
        due.delete(me.long.id);
        me.long = undefined;
        if (me.state !== "running") continue;
        if (await claim(step.worker, { woken: false, lingers: false })) {
          me.state = "draining";
          continue;
        }
        const d = deploymentOf(step.worker);
        const wakeAtMs = await queues[d].handOff({ now, cutOff: false, woken: false });
        if (wakeAtMs !== undefined) wakes.push({ to: d, at: wakeAtMs, forTypes: undefined });
        me.state = "idle";
      } else if (step.kind === "pass") {
        now += step.ms;
      }
      // Where no worker of a deployment drains, what is due of its types and not running must have a
      // wake-up on its wake queue, for no later than it falls due, for its type or for any work.
      const draining = new Set(
        workers.flatMap((w, i) => (w.state === "draining" || w.state === "stopping" ? [deploymentOf(i)] : [])),
      );
      const running = new Set(workers.map((w) => w.long?.id));
      for (const [id, task] of due) {
        const d = typeDeployment(task.type);
        if (running.has(id) || draining.has(d)) continue;
        const covered = wakes.some(
          (wake) =>
            wake.to === d && wake.at <= Math.max(task.at, now) && (!wake.forTypes || wake.forTypes.includes(task.type)),
        );
        if (!covered) {
          throw new Error(
            `${id} (${task.type} of ${d}, due ${task.at - START}, now ${now - START}) has no wake-up; wake-ups ${JSON.stringify(wakes.map((wake) => ({ ...wake, at: wake.at - START })))}\n${trace.join("\n")}`,
          );
        }
      }
    }
  }

  it("leaves no due task without a wake-up once every worker has stopped or handed off", async () => {
    const seed = chaosSeed();
    const runs = scale(200, 2_000);
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => run(ops)),
      { numRuns: runs, seed, examples: [[BOTH_RUNNING_LONG]] },
    );
    report("wake-liveness", { adapter: adapter.name, seed, runs });
    expect(runs).toBeGreaterThan(0);
  });
});
