// Model-based testing of the wake-up protocol's liveness (docs/wake-ups.md): workers start from
// wake-ups, claim until a claim comes back empty or their time runs out, and hand off; producers
// enqueue at any moment between, ready now or delayed; time passes. After every step: when no
// worker is running, every task that is READY or falls due is covered by a wake-up some call
// answered and nobody has consumed yet (for no later than it falls due). A wake-up is consumed by
// starting a worker, whose first claim answers it in Redis; a claim that fills the worker's batch
// with work left may ask for one more worker. The reclaimer's tick is left out on purpose: it is the
// safety net, and this suite proves the queue does not need it for work a caller made due.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import { adapters, configuredQueue, storeFixture, uniqueQueueName } from "../helpers/stores.js";
import { chaosSeed, report, scale } from "./helpers/chaos.js";

const START = 1_800_000_000_000;
const WORKERS = 2;

type Op =
  | { kind: "enqueue"; count: number; delayMs: number }
  | { kind: "start"; worker: number }
  | { kind: "claim"; worker: number }
  | { kind: "handoff"; worker: number }
  | { kind: "cutOff"; worker: number }
  | { kind: "pass"; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("enqueue" as const),
    count: fc.integer({ min: 1, max: 3 }),
    delayMs: fc.constantFrom(0, 0, 0, 2_000, 20_000),
  }),
  fc.record({ kind: fc.constant("start" as const), worker: fc.nat(WORKERS - 1) }),
  fc.record({ kind: fc.constant("claim" as const), worker: fc.nat(WORKERS - 1) }),
  fc.record({ kind: fc.constant("handoff" as const), worker: fc.nat(WORKERS - 1) }),
  fc.record({ kind: fc.constant("cutOff" as const), worker: fc.nat(WORKERS - 1) }),
  fc.record({ kind: fc.constant("pass" as const), ms: fc.constantFrom(10, 1_000, 3_000, 6_000) }),
);

/** A worker: idle; draining (its claims so far brought work); or stopping (its last claim came back empty). */
type Worker = "idle" | "draining" | "stopping";

describe.each(adapters)("wake-ups over $name", (adapter) => {
  const { open } = storeFixture(adapter);

  async function run(ops: Op[]): Promise<void> {
    const queue: Queue = await configuredQueue(await open(), { name: uniqueQueueName("live") });
    let now = START;
    let seq = 0;
    const workers: Worker[] = Array.from({ length: WORKERS }, () => "idle");
    /** Whether a worker's first claim (answering the wake-up that started it) is still to come. */
    const woken: boolean[] = Array.from({ length: WORKERS }, () => false);
    /** Wake-ups answered and not yet consumed: their due times. */
    const wakes: number[] = [];
    /** Tasks not yet done: their due times. */
    const due = new Map<string, number>();
    const trace: string[] = [];
    for (const step of ops) {
      trace.push(JSON.stringify(step));
      if (step.kind === "enqueue") {
        const tasks = Array.from({ length: step.count }, () => ({
          id: `t${seq++}`,
          type: "job",
          delayMs: step.delayMs,
        }));
        const { wakeAtMs } = await queue.enqueueAndWake(tasks, { now });
        for (const task of tasks) due.set(task.id, now + step.delayMs);
        if (wakeAtMs !== undefined) wakes.push(wakeAtMs);
      } else if (step.kind === "start") {
        // SQS delivers a wake-up at its time (or later): it starts an idle worker.
        const index = wakes.findIndex((at) => at <= now);
        if (workers[step.worker] !== "idle" || index < 0) continue;
        wakes.splice(index, 1);
        workers[step.worker] = "draining";
        woken[step.worker] = true;
      } else if (step.kind === "claim") {
        if (workers[step.worker] !== "draining") continue;
        const outcome = await queue.claimOrNextDue({ count: 2, now, woken: woken[step.worker] });
        woken[step.worker] = false;
        if (outcome.wakeAtMs !== undefined) wakes.push(outcome.wakeAtMs);
        const claimed = outcome.tasks;
        if (claimed.length === 0) {
          workers[step.worker] = "stopping";
          continue;
        }
        await queue.settle(
          claimed.map((task) => ({ id: task.id, token: task.token, outcome: "ack" as const })),
          { now },
        );
        for (const task of claimed) due.delete(task.id);
      } else if (step.kind === "handoff" || step.kind === "cutOff") {
        // A worker stops: after an empty claim (handoff), or when its time runs out (cutOff).
        const state = workers[step.worker];
        if (state === "idle" || (step.kind === "handoff" && state !== "stopping")) continue;
        const wakeAtMs = await queue.handOff({ now, cutOff: step.kind === "cutOff", woken: woken[step.worker] });
        if (wakeAtMs !== undefined) wakes.push(wakeAtMs);
        workers[step.worker] = "idle";
        woken[step.worker] = false;
      } else {
        now += step.ms;
      }
      if (workers.some((worker) => worker !== "idle")) continue;
      // Nobody runs: what is due must have a wake-up for no later than it falls due.
      for (const [id, at] of due) {
        const covered = wakes.some((wake) => wake <= Math.max(at, now));
        if (!covered) {
          throw new Error(
            `${id} (due ${at - START}, now ${now - START}) has no wake-up; wake-ups ${JSON.stringify(wakes.map((wake) => wake - START))}\n${trace.join("\n")}`,
          );
        }
      }
    }
  }

  it("leaves no due task without a wake-up once every worker has stopped", async () => {
    const seed = chaosSeed();
    const runs = scale(200, 2_000);
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => run(ops)),
      { numRuns: runs, seed },
    );
    report("wake-liveness", { adapter: adapter.name, seed, runs });
    expect(runs).toBeGreaterThan(0);
  });
});
