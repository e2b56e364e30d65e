// Schedules on a real redis-server, over both stores (docs/schedules.md): each slot becomes one
// task `<schedule>@<slot>`, made ahead within the planner's horizon with its wake-up; a plan
// computed from a cursor or a definition that moved on makes nothing; changes, removals, pauses,
// catch-up after an outage, overlap and jitter keep that rule; DST changes in Europe/Berlin.
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../shared/errors.js";
import type { Queue } from "../../shared/queue.js";
import { loadCron, slotId, slotsBetween } from "../../shared/schedules.js";
import { expectClean } from "../helpers/check.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const T0 = Date.parse("2026-12-02T10:00:00.500Z");
/** The planner's two steps, called apart to interleave them with another planner or a change. */
interface Internals {
  readSchedules(options: {
    all: boolean;
    offset: number;
    count: number;
    until: number;
  }): Promise<Array<{ revision: string; cursor: string }>>;
  context: { run(name: "plan", fixed: Record<string, string>, items: string[]): Promise<unknown[]> };
}
const HORIZON = 70_000;

/** The ids of the queue's SCHEDULED and READY tasks of schedule `name`, in slot order. */
async function slotTasks(queue: Queue, name: string): Promise<string[]> {
  const ids: string[] = [];
  for (const state of ["scheduled", "ready", "leased", "done", "failed"] as const) {
    for (const task of await queue.admin.list(state, { limit: 1000 }))
      if (task.id.startsWith(`${name}@`)) ids.push(task.id);
  }
  return ids.sort();
}

describe.each(adapters)("schedules over $name", (adapter) => {
  const { fresh } = queueFixture(adapter, { policies: { job: { leaseMs: 10_000, maxAttempts: 2 } } });

  it("makes each slot within the horizon one task, ahead, with the wake-up of the first, and nothing on a second plan", async () => {
    const queue = await fresh();
    expect(await queue.schedules.set("every5", { every: 5_000, type: "job", payload: { n: 1 } }, { now: T0 })).toEqual({
      status: "set",
      cursorMs: T0,
    });
    const plan = await queue.schedules.plan({ now: T0, horizonMs: HORIZON });
    // Slots 10:00:05 .. 10:01:10: 14 of them; the first falls due 4.5 s from now.
    expect(plan).toMatchObject({ planned: 1, made: 14, stale: 0, wakeAtMs: Date.parse("2026-12-02T10:00:05.000Z") });
    const ids = await slotTasks(queue, "every5");
    expect(ids).toHaveLength(14);
    expect(ids[0]).toBe("every5@2026-12-02T10:00:05.000Z");
    expect(ids[13]).toBe("every5@2026-12-02T10:01:10.000Z");
    expect((await queue.admin.inspect(ids[0]))?.payload).toBe('{"n":1}');
    expect(await queue.schedules.plan({ now: T0 + 1_000, horizonMs: HORIZON })).toMatchObject({ made: 0 });
    // The next run plans what falls into its own horizon, from where the last left off.
    expect(await queue.schedules.plan({ now: T0 + 60_000, horizonMs: HORIZON })).toMatchObject({ made: 12 });
    expect(await slotTasks(queue, "every5")).toHaveLength(26);
    const [info] = await queue.schedules.list();
    expect(info).toMatchObject({
      name: "every5",
      made: 26,
      passedOver: 0,
      lastTaskState: "scheduled",
      declared: false,
    });
    expect(info.nextSlotMs).toBe(Date.parse("2026-12-02T10:02:15.000Z"));
    await expectClean(queue, T0 + 60_000);
  });

  it("makes every slot once when 10 planners run at the same moment", async () => {
    const queue = await fresh();
    await queue.schedules.set("tight", { cron: "* * * * * *", type: "job" }, { now: T0 });
    const others = await Promise.all(Array.from({ length: 9 }, () => fresh({ name: queue.name })));
    const plans = await Promise.all([queue, ...others].map((q) => q.schedules.plan({ now: T0, horizonMs: HORIZON })));
    expect(plans.reduce((sum, plan) => sum + plan.made, 0)).toBe(70);
    expect(await slotTasks(queue, "tight")).toHaveLength(70);
    expect((await queue.schedules.list())[0].made).toBe(70);
  });

  it("makes nothing from a plan computed before another planner's or a change (the cursor compare-and-set)", async () => {
    const queue = await fresh();
    await queue.schedules.set("cas", { every: 10_000, type: "job" }, { now: T0 });
    // What a planner read and computed, sent late: the raw plan call of queue.schedules.plan.
    const [read] = await (queue.schedules as unknown as Internals).readSchedules({
      all: false,
      offset: 0,
      count: 10,
      until: T0 + HORIZON,
    });
    const planFrom = (horizon: number, body = "1|0|job||") => {
      const slots = slotsBetween({ every: 10_000, type: "job" }, Number(read.cursor), T0 + horizon, 100);
      return (queue.schedules as unknown as Internals).context.run(
        "plan",
        { now: String(T0), horizonMs: "0", callId: "" },
        [
          "cas",
          read.revision,
          read.cursor,
          String(T0 + horizon),
          String(slots.at(-1) as number),
          "0",
          "",
          body,
          slots.map((slot) => `${slot} ${slotId("cas", slot)}`).join(" "),
          "0",
        ],
      );
    };
    await loadCron();
    // Two planners read the same cursor: the first makes its slots, the second (a longer horizon,
    // so slots the first did not make) is stale: its cursor moved.
    expect(await planFrom(30_000)).toEqual([3, ""]);
    expect(await planFrom(60_000)).toEqual([-1, ""]);
    expect(await slotTasks(queue, "cas")).toHaveLength(3);
    // A plan read before a change of the definition is stale too, even at the cursor it read.
    const [again] = await (queue.schedules as unknown as Internals).readSchedules({
      all: false,
      offset: 0,
      count: 10,
      until: T0 + HORIZON * 10,
    });
    await queue.schedules.set("cas", { every: 20_000, type: "job" }, { now: T0 });
    Object.assign(read, again);
    expect(await planFrom(60_000)).toEqual([-1, ""]);
    expect(await slotTasks(queue, "cas")).toHaveLength(3);
  });

  it("keeps the cursor through a change: the slots made stay, the new definition gives every slot after them", async () => {
    const queue = await fresh();
    await queue.schedules.set("s", { every: 10_000, type: "job" }, { now: T0 });
    await queue.schedules.plan({ now: T0, horizonMs: HORIZON });
    const changed = await queue.schedules.set("s", { every: 20_000, type: "job" }, { now: T0 + 1_000 });
    expect(changed).toEqual({ status: "set", cursorMs: T0 + HORIZON });
    await queue.schedules.plan({ now: T0 + 60_000, horizonMs: HORIZON });
    await loadCron();
    const expected = [
      ...slotsBetween({ every: 10_000, type: "job" }, T0, T0 + HORIZON, 100),
      ...slotsBetween({ every: 20_000, type: "job" }, T0 + HORIZON, T0 + 60_000 + HORIZON, 100),
    ].map((slot) => slotId("s", slot));
    expect(await slotTasks(queue, "s")).toEqual(expected.sort());
    expect(await queue.schedules.set("s", { every: 20_000, type: "job" }, { now: T0 + 61_000 })).toMatchObject({
      status: "unchanged",
    });
  });

  it("keeps a cursor that lags behind now through a change: no slot after it skipped unseen", async () => {
    // Its planners were away for a minute (killed, slow); a deploy changes the definition then.
    const queue = await fresh();
    await queue.schedules.set("lag", { every: 1_000, type: "job", catchUp: { max: 100 } }, { now: T0 });
    await queue.schedules.plan({ now: T0, horizonMs: 5_000 });
    const [before] = await queue.schedules.list();
    const changed = await queue.schedules.set(
      "lag",
      { every: 2_000, type: "job", catchUp: { max: 100 } },
      { now: T0 + 60_000, owner: "deploy" },
    );
    expect(changed).toEqual({ status: "set", cursorMs: before.cursorMs });
    await queue.schedules.plan({ now: T0 + 60_000, horizonMs: 5_000 });
    await loadCron();
    // Every slot after the cursor is the new definition's, caught up: made, none passed over.
    const expected = [
      ...slotsBetween({ every: 1_000, type: "job" }, T0, before.cursorMs, 100),
      ...slotsBetween({ every: 2_000, type: "job" }, before.cursorMs, T0 + 65_000, 100),
    ].map((slot) => slotId("lag", slot));
    expect(await slotTasks(queue, "lag")).toEqual(expected.sort());
    const [after] = await queue.schedules.list();
    expect(after).toMatchObject({ made: expected.length, passedOver: 0 });
    await expectClean(queue, T0 + 60_000);
  });

  it("makes nothing for a removed schedule, and never a slot twice when one of that name is set again", async () => {
    const queue = await fresh();
    await queue.schedules.set("r", { every: 10_000, type: "job" }, { now: T0 });
    await queue.schedules.plan({ now: T0, horizonMs: HORIZON });
    expect(await queue.schedules.remove("r", { now: T0 + 1 })).toBe("done");
    expect(await queue.schedules.remove("r", { now: T0 + 1 })).toBe("unknown");
    expect(await queue.schedules.plan({ now: T0 + 2, horizonMs: HORIZON })).toMatchObject({ made: 0 });
    // Set again at once: its cursor is the removed one's, beyond the slots already made.
    await queue.schedules.set("r", { every: 10_000, type: "job" }, { now: T0 + 3 });
    await queue.schedules.plan({ now: T0 + 30_000, horizonMs: HORIZON });
    const ids = await slotTasks(queue, "r");
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(10); // 10:00:10 .. 10:01:40
  });

  it("plans nothing while paused and resumes from now, passing over the slots of the pause", async () => {
    const queue = await fresh();
    await queue.schedules.set("p", { every: 60_000, type: "job" }, { now: T0 });
    expect(await queue.schedules.pause("p", { now: T0 })).toBe("done");
    expect(await queue.schedules.pause("p", { now: T0 })).toBe("unchanged");
    expect(await queue.schedules.plan({ now: T0 + 3_600_000, horizonMs: HORIZON })).toMatchObject({ made: 0 });
    expect(await queue.schedules.resume("p", { now: T0 + 3_600_000 })).toBe("done");
    expect(await queue.schedules.plan({ now: T0 + 3_600_000, horizonMs: HORIZON })).toMatchObject({ made: 1 });
    expect(await slotTasks(queue, "p")).toEqual(["p@2026-12-02T11:01:00.000Z"]);
    // The 60 slots of the pause (10:01 .. 11:00) were passed over, and are counted so.
    expect((await queue.schedules.list())[0]).toMatchObject({ made: 1, passedOver: 60 });
  });

  it.each([
    ["none", []],
    ["latest", ["c@2026-12-02T13:00:00.000Z"]],
    [{ max: 2 }, ["c@2026-12-02T12:00:00.000Z", "c@2026-12-02T13:00:00.000Z"]],
  ] as const)("after a 4-hour outage catches up %j of the missed hourly slots", async (catchUp, caught) => {
    const queue = await fresh();
    await queue.schedules.set("c", { cron: "0 * * * *", type: "job", catchUp }, { now: T0 });
    await queue.schedules.plan({ now: T0, horizonMs: HORIZON });
    // No planner from 10:00 to 13:30: the slots 11:00, 12:00, 13:00 were missed.
    const plan = await queue.schedules.plan({ now: T0 + 3.5 * 3_600_000, horizonMs: HORIZON });
    expect(plan.passedOver).toBe(3 - caught.length);
    expect(await slotTasks(queue, "c")).toEqual([...caught]);
    expect((await queue.schedules.list())[0]).toMatchObject({ passedOver: 3 - caught.length, made: caught.length });
  });

  it("with overlap skip passes over a slot whose previous slot's task still runs; with allow runs both", async () => {
    for (const overlap of ["skip", "allow"] as const) {
      const queue = await fresh();
      await queue.schedules.set("o", { every: 10_000, type: "job", overlap }, { now: T0 });
      await queue.schedules.plan({ now: T0, horizonMs: 25_000 });
      const first = await queue.claim({ count: 1, now: T0 + 10_000 });
      expect(first.map((task) => task.id)).toEqual(["o@2026-12-02T10:00:10.000Z"]);
      // The 10:00:20 slot falls due while the 10:00:10 task is leased.
      const second = await queue.claim({ count: 1, now: T0 + 20_000 });
      if (overlap === "skip") {
        expect(second).toEqual([]);
        expect(await queue.admin.inspect("o@2026-12-02T10:00:20.000Z")).toBeUndefined();
        expect((await queue.schedules.list())[0].passedOver).toBe(1);
      } else {
        expect(second.map((task) => task.id)).toEqual(["o@2026-12-02T10:00:20.000Z"]);
      }
      // Once the first is done, the next slot runs again.
      await queue.settle([{ id: first[0].id, token: first[0].token, outcome: "ack" }], { now: T0 + 21_000 });
      await queue.schedules.plan({ now: T0 + 21_000, horizonMs: 25_000 });
      const third = await queue.claim({ count: 1, now: T0 + 30_000 });
      expect(third.map((task) => task.id)).toEqual(["o@2026-12-02T10:00:30.000Z"]);
      await expectClean(queue, T0 + 30_000);
    }
  });

  it("delays each slot's task by the same jitter on every planner, within jitterMs", async () => {
    const queue = await fresh();
    await queue.schedules.set("j", { every: 60_000, type: "job", jitterMs: 30_000 }, { now: T0 });
    await queue.schedules.plan({ now: T0, horizonMs: 3_600_000 });
    const tasks = await queue.admin.list("scheduled", { limit: 100 });
    expect(tasks).toHaveLength(60);
    const delays = tasks.map((task) => task.score - Date.parse(task.id.slice(2)));
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...delays)).toBeLessThanOrEqual(30_000);
    expect(new Set(delays).size).toBeGreaterThan(10);
  });

  // About 440 plans, several calls each: a budget for a busy machine, not a timing assertion.
  it("runs a daily Berlin slot once a day across both DST changes of 2026", { timeout: 120_000 }, async () => {
    const queue = await fresh();
    const start = Date.parse("2026-03-27T00:00:00Z");
    await queue.schedules.set("dst", { cron: "30 2 * * *", tz: "Europe/Berlin", type: "job" }, { now: start });
    await queue.schedules.set("night", { cron: "0 3 * * *", tz: "Europe/Berlin", type: "job" }, { now: start });
    for (let at = start; at < Date.parse("2026-11-01T00:00:00Z"); at += 12 * 3_600_000) {
      await queue.schedules.plan({ now: at, horizonMs: 12 * 3_600_000 });
    }
    const slots = (await slotTasks(queue, "dst")).map((id) => id.slice(4));
    // 02:30 does not exist on 29 March (02:00 → 03:00): it runs at 03:30 CEST, once.
    expect(slots.slice(0, 4)).toEqual([
      "2026-03-27T01:30:00.000Z",
      "2026-03-28T01:30:00.000Z",
      "2026-03-29T01:30:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
    // 02:30 happens twice on 25 October (03:00 → 02:00): it runs once, at the first.
    const october = slots.filter((slot) => slot.startsWith("2026-10-2"));
    expect(october.filter((slot) => slot.startsWith("2026-10-25"))).toEqual(["2026-10-25T00:30:00.000Z"]);
    expect(october).toContain("2026-10-26T01:30:00.000Z");
    // One task per calendar day in Berlin: 27 March to 31 October.
    const days = new Set(slots.map((slot) => new Date(slot).toLocaleDateString("sv", { timeZone: "Europe/Berlin" })));
    expect(days.size).toBe(slots.length);
    expect(slots).toHaveLength(219);
    const nights = (await slotTasks(queue, "night")).map((id) => id.slice(6));
    expect(nights).toContain("2026-03-29T01:00:00.000Z"); // 03:00 CEST, the day the clocks go forward
    expect(nights).toContain("2026-10-25T02:00:00.000Z"); // 03:00 CET, the day they go back
    expect(nights).toHaveLength(219);
  });

  it("refuses a bad definition with every problem named, and a run-time change of a declared schedule", async () => {
    const queue = await fresh();
    await expect(
      queue.schedules.set(
        "bad",
        { cron: "61 * * * *", tz: "Mars/Olympus", type: "job", catchUp: "all", extra: 1 } as never,
        { now: T0 },
      ),
    ).rejects.toThrow(
      /schedule "bad": 4 problems: unknown field "extra".*; cron "61 \* \* \* \*" is not valid: .*minute.*; tz must be an IANA time zone.*; catchUp must be "none", "latest" or \{ max: 1-100 \}, got "all"/,
    );
    await expect(queue.schedules.set("has@at", { every: 1_000, type: "job" }, { now: T0 })).rejects.toThrow(
      InvalidInputError,
    );
    await queue.schedules.set("owned", { every: 60_000, type: "job" }, { now: T0, owner: "deploy" });
    await expect(queue.schedules.set("owned", { every: 1_000, type: "job" }, { now: T0 })).rejects.toThrow(
      /declared in the task module/,
    );
    expect(await queue.schedules.pause("owned", { now: T0 })).toBe("done");
    expect(await queue.schedules.list()).toMatchObject([{ name: "owned", paused: true, declared: true }]);
  });
});

describe("leaseq check knows schedules", () => {
  const { redis, fresh } = queueFixture(adapters[0]);

  it("finds a schedule the plan set lost and a plan member with no schedule, and repairs both", async () => {
    const queue = await fresh();
    await queue.schedules.set("lost", { every: 60_000, type: "job" }, { now: T0 });
    await redis.zrem(queue.keys.plan, "lost");
    await redis.zadd(queue.keys.plan, T0, "ghost");
    const problems = await queue.admin.checkAll({ now: T0 });
    expect(problems.map((problem) => [problem.code, problem.subject])).toEqual([
      ["schedule_unplanned", "lost"],
      ["plan_orphan", "ghost"],
    ]);
    await queue.admin.checkAll({ now: T0, repair: true });
    await expectClean(queue, T0);
    expect(await queue.schedules.plan({ now: T0, horizonMs: HORIZON })).toMatchObject({ made: 1 });
  });
});
