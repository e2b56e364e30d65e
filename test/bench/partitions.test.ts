// The partitions mode (bench/partitions.ts): its arguments, its figures from rounds, and one small
// real run over redis-servers of its own (the full run takes a minute: npm run bench -- --partitions).
import { describe, expect, it } from "vitest";
import {
  PARTITION_COUNTS,
  type PartitionsRow,
  parsePartitionsArgs,
  partitionsJson,
  renderPartitions,
  runPartitions,
  summarize,
} from "../../bench/partitions.js";

const row = (partitions: number, tasksPerSec: number, commandsPerTask: number, cpu: number[]): PartitionsRow => ({
  partitions,
  tasks: 100,
  rounds: [{ tasksPerSec, commandsPerTask, serverCpuUsPerTask: cpu, clientCpuUsPerTask: 40 }],
});

describe("partitions mode", () => {
  it("reads --tasks and --rounds, and refuses what is not a positive integer", () => {
    expect(parsePartitionsArgs(["--partitions"])).toEqual({ tasks: 10_000, warmupTasks: 2_000, rounds: 3 });
    expect(parsePartitionsArgs(["--tasks", "500", "--rounds", "1"])).toEqual({
      tasks: 500,
      warmupTasks: 200,
      rounds: 1,
    });
    expect(() => parsePartitionsArgs(["--rounds", "0"])).toThrow(/--rounds must be a positive integer/);
  });

  it("gives each server's share of the Redis CPU and the ceiling of the busiest server", () => {
    const two = summarize(row(2, 30_000, 0.75, [12, 8]));
    expect(two.redisCpuUsPerTask).toBe(20);
    expect(two.cpuShares).toEqual([0.6, 0.4]);
    // The busiest server fills its second at 1e6 / 12 queue tasks a second.
    expect(Math.round(two.ceilingTasksPerSec)).toBe(83_333);
    const rows = [row(1, 20_000, 0.7, [25]), row(2, 30_000, 0.735, [12, 8])];
    const text = renderPartitions(rows);
    expect(text).toContain("| 2          | 30,000           | 1.5x");
    expect(text).toContain("60% 40%");
    const json = partitionsJson(rows, { tasks: 100, warmupTasks: 20, rounds: 1 });
    expect(json.rows[1]).toMatchObject({
      partitions: 2,
      tasksPerSec: 30_000,
      commandsPerTask: 0.735,
      cpuShares: [0.6, 0.4],
    });
  });

  it("runs every task of every count once over its own servers, each server taking a share", async () => {
    const rows = await runPartitions({ tasks: 200, warmupTasks: 40, rounds: 1 }, () => {});
    expect(rows.map((r) => r.partitions)).toEqual([...PARTITION_COUNTS]);
    for (const r of rows) {
      const [round] = r.rounds;
      expect(round.tasksPerSec).toBeGreaterThan(0);
      expect(round.serverCpuUsPerTask).toHaveLength(r.partitions);
      // Every partition's server did work: the tasks spread over all of them.
      for (const us of round.serverCpuUsPerTask) expect(us).toBeGreaterThan(0);
      expect(round.commandsPerTask).toBeGreaterThan(0);
    }
  }, 60_000);
});
