// The instructions mode's arguments, table and results.json section, without valgrind (the count
// itself takes minutes: `npm run bench -- --instructions --tasks 2000`).
import { describe, expect, it } from "vitest";
import {
  BASELINE_KEY,
  type InstructionsRow,
  instructionsCases,
  instructionsJson,
  parseInstructionsArgs,
  payloadRatios,
  renderInstructions,
} from "../../bench/instructions.js";

function row(key: string, system: InstructionsRow["system"], perTaskK: number, payloadBytes = 54): InstructionsRow {
  const tasks = 100;
  return {
    key,
    system,
    shape: "shape",
    tasks,
    payloadBytes,
    enqueueInstructions: perTaskK * 1000 * tasks * 0.25,
    drainInstructions: perTaskK * 1000 * tasks * 0.75,
    enqueueCommands: 10,
    drainCommands: 90,
    byCommand: { evalsha: 60, hset: 40 },
    seconds: 1,
  };
}

/** A measured run of 100 tasks over `measured`, with this idle floor (instructions per second). */
function result(measured: InstructionsRow[], idleInstructionsPerSecond: number) {
  return {
    tasks: 100,
    warmupTasks: 25,
    largeTasks: 100,
    largeWarmupTasks: 25,
    consumers: 4,
    rows: measured,
    leftOut: [],
    idleInstructionsPerSecond,
    versions: { redis: "7.0.15" },
    durationSeconds: 12.3,
  };
}

const rows = [
  row("leaseq b20", "leaseq", 200),
  row("leaseq b20 64 KiB", "leaseq", 2_000, 65_536),
  row(BASELINE_KEY, "naive", 100),
  row(`${BASELINE_KEY} 64 KiB`, "naive", 1_200, 65_536),
];

describe("instructions mode", () => {
  it("reads --tasks, --warmup, --large-tasks and --only, with defaults sized by the tasks", () => {
    expect(parseInstructionsArgs(["--instructions"])).toEqual({
      tasks: 10_000,
      warmupTasks: 2_000,
      largeTasks: 1_000,
      largeWarmupTasks: 250,
      only: [],
    });
    expect(parseInstructionsArgs(["--instructions", "--tasks", "2000", "--only", "leaseq b20, naive"])).toMatchObject({
      tasks: 2_000,
      warmupTasks: 500,
      largeTasks: 200,
      only: ["leaseq b20", "naive"],
    });
    // bench/callgrind.ts's old form: the task count alone.
    expect(parseInstructionsArgs(["1000"]).tasks).toBe(1_000);
    expect(parseInstructionsArgs(["--tasks", "500", "--warmup", "50", "--large-tasks", "20"])).toMatchObject({
      warmupTasks: 50,
      largeTasks: 20,
    });
    expect(() => parseInstructionsArgs(["--tasks", "0"])).toThrow(/positive integer/);
  });

  it("has every workload of the brief, the baseline among them, each key once", () => {
    const keys = instructionsCases({ url: "redis://127.0.0.1:1", host: "127.0.0.1", port: 1 }).map((c) => c.key);
    expect(keys).toEqual([
      "leaseq b1",
      "leaseq b20",
      "leaseq b100",
      "leaseq b20 1,000 groups",
      "leaseq b20 1,000 ordered groups",
      "leaseq b20 dedupe",
      "leaseq b20 64 KiB",
      "floor b1",
      "floor b20",
      "floor score b1",
      "floor score b20",
      "naive b1",
      BASELINE_KEY,
      `${BASELINE_KEY} 64 KiB`,
      "bullmq c50",
      "bee-queue c50",
      "groupmq c50 1,000 groups",
    ]);
  });

  it("prints k per task, commands per task and the ratio to the naive design, and the payload ratios", () => {
    const text = renderInstructions({
      rows,
      consumers: 4,
      leftOut: [{ key: "bee-queue c50", reason: "no" }],
      idleInstructionsPerSecond: 2_500_000,
    });
    const lines = text.split("\n");
    const leaseq = lines.find((line) => line.startsWith("| leaseq b20 (shape)"));
    expect(leaseq?.split("|").map((cell) => cell.trim())).toEqual([
      "",
      "leaseq b20 (shape)",
      "100",
      "200",
      "50",
      "150",
      "1",
      "2x",
      "",
    ]);
    expect(text).toContain("64 KiB payload over the 54-byte one, instructions per task: leaseq 10x, naive 12x");
    expect(text).toContain("Left out: bee-queue c50: no");
    expect(text).toContain("Idle floor: Redis executes 2,500k instructions per second");
    expect(payloadRatios(rows)).toEqual({ leaseq: 10, naive: 12 });
  });

  it("writes per-task figures into results.json", () => {
    const json = instructionsJson(result(rows, 1_000_000));
    expect(json.rows[0]).toMatchObject({
      key: "leaseq b20",
      instructionsPerTask: { total: 200_000, enqueue: 50_000, drain: 150_000 },
      commandsPerTask: { total: 1, enqueue: 0.1, drain: 0.9 },
      commandsPerTaskByName: { evalsha: 0.6, hset: 0.4 },
      ratioToBaseline: 2,
      // 1 s of the idle floor's 1M instructions, over 100 tasks.
      idleInstructionsPerTask: 10_000,
    });
    expect(json.payloadRatio).toEqual({ leaseq: 10, naive: 12 });
    expect(json.claimOneRatio).toBeNull(); // no claims of 1 in these rows
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
  });

  it("compares claims of 1 with the naive design's claims of 1 (the per-call cost), not with its claims of 20", () => {
    const withOne = [...rows, row("leaseq b1", "leaseq", 600), row("naive b1", "naive", 150)];
    expect(renderInstructions({ rows: withOne, consumers: 4, leftOut: [] })).toContain(
      "Claims of 1 (the per-call cost), instructions per task: leaseq b1 4x naive b1",
    );
    const json = instructionsJson(result(withOne, 0));
    expect(json.claimOneRatio).toBe(4);
    // The last column stays the ratio to the baseline, claims of 20.
    expect(json.floorRatios).toEqual({}); // no floor rows here
    expect(json.rows.find((r) => r.key === "leaseq b1")?.ratioToBaseline).toBe(6);
  });

  it("sets the floor beside the naive design and leaseq beside the floor of its own storage, claim size by claim size", () => {
    const withFloor = [
      ...rows,
      row("floor b20", "floor", 150),
      row("floor score b20", "floor", 120),
      row("leaseq b1", "leaseq", 600),
      row("naive b1", "naive", 150),
      row("floor b1", "floor", 300),
    ];
    const ratios = instructionsJson(result(withFloor, 0)).floorRatios;
    expect(ratios).toEqual({
      "floor b1 / naive b1": 2,
      "leaseq b1 / floor b1": 2,
      "floor b20 / naive b20": 1.5,
      "leaseq b20 / floor b20": 1.333,
      "floor score b20 / naive b20": 1.2,
    });
    expect(renderInstructions({ rows: withFloor, consumers: 4, leftOut: [] })).toContain(
      "nothing else), instructions per task: floor b1 / naive b1 2x, leaseq b1 / floor b1 2x, floor b20 / naive b20 1.5x",
    );
  });
});
