// Model-based testing: fast-check generates sequences of queue operations
// (enqueue, claim, settle, extend, release, reclaim, requeue, trim, advance-time, crash-a-worker,
// repeat-a-stale-ack, with client clocks skewed either way) and runs each against the real queue
// and the pure model in helpers/model.ts. After every step the replies must agree, and the whole
// Redis state (every record, every sorted set, the arrival counter) must equal the model's, which
// checks the §7 invariants step by step; a failure shrinks to a minimal sequence. Each sequence
// ends with the queue's consistency check, which must find nothing.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { expectClean } from "../helpers/check.js";
import { adapters, openQueue, queueFixture, rawClient } from "../helpers/stores.js";
import { checkSequences, reportModelRun, scale } from "./helpers/chaos.js";
import { type ModelOptions, QueueModel } from "./helpers/model.js";
import { commandsFor, OPTIONS, START, takeTally, type World } from "./helpers/model-commands.js";

const variants = adapters.flatMap((adapter) => [
  { adapter, ordered: false, label: adapter.name },
  { adapter, ordered: true, label: `${adapter.name}, ordered queue` },
]);

describe.each(variants)("model-based over $label", ({ adapter, ordered }) => {
  const { redis, fresh } = queueFixture(adapter);

  const runs = (adapter.name === "tcp" ? scale(40, 1_000) : scale(10, 150)) / (ordered ? 2 : 1);
  const maxCommands = scale(40, 100);
  const options: ModelOptions = { ...OPTIONS, ordered };
  const commands = commandsFor(ordered);
  it(
    `agrees with the model over ${runs} random sequences of up to ${maxCommands} operations`,
    async () => {
      const run = await checkSequences(commands, { runs, maxCommands }, async (sequence) => {
        const queue = await fresh({
          policies: OPTIONS.policies,
          defaultPolicy: OPTIONS.defaultPolicy,
          doneRetentionMs: OPTIONS.doneRetentionMs,
          failedRetentionMs: OPTIONS.failedRetentionMs,
          clockSkewMs: 0,
          ordered,
        });
        const world: World = { model: new QueueModel(options), now: START, held: [], retired: [] };
        await fc.asyncModelRun(() => ({ model: world, real: { queue, redis } }), sequence);
        await expectClean(queue, world.now);
      });
      // A zombie ack the queue accepted is counted beside the stale ack that made it, not as a step.
      reportModelRun(`model-${adapter.name}${ordered ? "-ordered" : ""}`, run, takeTally(), ["zombie-ack-accepted"]);
    },
    scale(60_000, 1_800_000),
  );
});

// An ordered queue's retry hold is compared with the `now` callers pass, never with Redis's clock (a
// key with a TTL would expire by Redis's clock, opening the gate early under time travel or a
// lagging client clock).
describe("ordered queue hold and the caller's clock", () => {
  const redis = rawClient();
  afterAll(() => redis.disconnect());
  it("keeps the gate closed until retryAt by the caller's now, whatever Redis's clock says", async () => {
    const { queue, close } = await openQueue(adapters[0], { ordered: true, clockSkewMs: 0 });
    try {
      await queue.enqueue([{ id: "a", type: "t" }], { now: START });
      const [task] = await queue.claim({ count: 1, now: START });
      await queue.settle([{ ...task, outcome: "retry", retryAtMs: START + 200, error: "e" }], { now: START });
      const held = await queue.claim({ count: 1, now: START + 1 });
      await new Promise((resolve) => setTimeout(resolve, 300)); // 300 ms of real time; the caller's clock stands still
      const later = await queue.claim({ count: 1, now: START + 199 });
      expect({ held, later }).toEqual({ held: [], later: [] }); // actual: later holds task "a"
    } finally {
      await close();
    }
  });
});
