// The worker's run metrics as EMF lines: at most 100 values of a metric a line (the format's limit).
import { expect, it } from "vitest";
import { RunMetrics } from "../../functions/run-metrics.js";

it("writes 250 runs of one type as lines of 100, 100 and 50 values, in the order they ran", () => {
  const runs = new RunMetrics();
  for (let i = 0; i < 250; i++) runs.add({ type: "etl", waitedMs: i, runMs: 2 * i });
  const lines = runs.lines("leaseq-worker", "orders", 1_800_000_000_000).map((line) => JSON.parse(line));
  expect(lines.map((line) => line.queueWaitMs.length)).toEqual([100, 100, 50]);
  expect(lines[2].queueWaitMs[49]).toBe(249);
  expect(lines[2].runTimeMs[49]).toBe(498);
  expect(lines[0]._aws.Timestamp).toBe(1_800_000_000_000);
  expect(new RunMetrics().lines("leaseq-worker", "orders", 0)).toEqual([]);
});
