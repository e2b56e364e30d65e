// A declared schedule through the local stack, as on AWS: the reclaimer plans its slots ahead as
// SCHEDULED tasks with their wake-up, so each slot's task starts within a second of its time, not at
// the reclaimer's next run (here a minute away).
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Stack, startStack } from "../../dev/stack.js";
import { defineTasks, type Task } from "../../functions/tasks.js";
import { uniqueQueueName } from "../helpers/stores.js";

vi.setConfig({ testTimeout: 60_000 });

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.stopWork();
  await stack?.close();
  stack = undefined;
});

describe("a declared schedule in the local stack", () => {
  it("starts each slot's task within a second of its slot, with the id <schedule>@<slot>", async () => {
    const starts: Array<{ id: string; late: number }> = [];
    const tasks = defineTasks({
      types: {
        sweep: {
          leaseMs: 10_000,
          handler: (task: Task) => {
            const slot = Date.parse(task.id.slice("sweep-every-2s@".length));
            starts.push({ id: task.id, late: Date.now() - slot });
          },
        },
      },
      schedules: { "sweep-every-2s": { every: 2_000, type: "sweep", payload: { full: false } } },
    });
    stack = await startStack({
      queue: uniqueQueueName("sched"),
      tasks,
      reclaimIntervalMs: 60_000,
      workerTimeoutMs: 60_000,
      visibilityTimeoutMs: 30_000,
      maxReceiveCount: 5,
      concurrency: 2,
      logLevel: "SILENT",
    });
    stack.run();
    const deadline = Date.now() + 20_000;
    while (starts.length < 5 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    console.log(`slot to start (ms): ${starts.map((start) => start.late).join(", ")}`);
    expect(starts.length, JSON.stringify(starts)).toBeGreaterThanOrEqual(5);
    for (const start of starts) {
      expect(start.id).toMatch(/^sweep-every-2s@\d{4}-\d\d-\d\dT\d\d:\d\d:\d[02468]\.000Z$/);
      expect(start.late, start.id).toBeGreaterThanOrEqual(0);
      // Started by the slot's own wake-up, not the reclaimer's next run a minute on (with room for a
      // loaded machine).
      expect(start.late, start.id).toBeLessThan(5_000);
    }
    expect(new Set(starts.map((start) => start.id)).size).toBe(starts.length);
    expect(stack.counts.invocationErrors).toBe(0);
  });
});
