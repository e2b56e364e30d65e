// A stored schedule the planner cannot compute stays in its record (docs/schedules.md): set aside
// with why, named by schedules.list and leaseq check, while every other schedule is planned; a
// corrected set plans it again, and a planner that read an older revision sets nothing aside.
// Both stores.
import { describe, expect, it } from "vitest";
import { expectClean } from "../helpers/check.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const T0 = Date.parse("2026-12-02T10:00:00.000Z");
const HORIZON = 70_000;

describe.each(adapters)("schedules set aside, over $name", (adapter) => {
  const { fresh, redis } = queueFixture(adapter, { policies: { job: { leaseMs: 10_000, maxAttempts: 2 } } });

  it("plans every other schedule, sets the bad ones aside with why, and plans one again once it is set right", async () => {
    const queue = await fresh();
    for (const name of ["before", "cron", "json", "shape", "after"]) {
      await queue.schedules.set(name, { every: 20_000, type: "job" }, { now: T0 });
    }
    await redis.hset(queue.keys.schedules, "cron", JSON.stringify({ cron: "61 * * * *", type: "job" }));
    await redis.hset(queue.keys.schedules, "json", "{oops");
    await redis.hset(queue.keys.schedules, "shape", JSON.stringify({ every: 20_000 }));
    const plan = await queue.schedules.plan({ now: T0, horizonMs: HORIZON });
    expect(plan).toMatchObject({ setAside: 3, planned: 2, made: 6 });
    const listed = Object.fromEntries((await queue.schedules.list()).map((info) => [info.name, info]));
    expect(listed.cron.aside).toMatch(/cron "61 \* \* \* \*" is not valid/);
    expect(listed.json.aside).toBe('its definition is not JSON: "{oops"');
    expect(listed.shape.aside).toMatch(/type must be/);
    expect([listed.before.aside, listed.after.aside]).toEqual([undefined, undefined]);
    // A second plan does not read them again.
    expect(await queue.schedules.plan({ now: T0 + 1_000, horizonMs: HORIZON })).toMatchObject({ setAside: 0 });
    const problems = await queue.admin.checkAll({ now: T0 });
    expect(problems.filter((problem) => problem.code === "schedule_aside").map((problem) => problem.subject)).toEqual(
      expect.arrayContaining(["cron", "json", "shape"]),
    );
    // Set right: planned again, from its cursor.
    await queue.schedules.set("cron", { cron: "*/20 * * * * *", type: "job" }, { now: T0 + 2_000 });
    expect(await queue.schedules.plan({ now: T0 + 2_000, horizonMs: HORIZON })).toMatchObject({ setAside: 0, made: 3 });
    expect((await queue.schedules.list()).find((info) => info.name === "cron")?.aside).toBeUndefined();
    await queue.schedules.remove("json", { now: T0 });
    await queue.schedules.remove("shape", { now: T0 });
    await expectClean(queue, T0 + 2_000);
  });

  it("a planner that read a revision since changed sets nothing aside", async () => {
    const queue = await fresh();
    await queue.schedules.set("s", { every: 20_000, type: "job" }, { now: T0 });
    const [read] = await (
      queue.schedules as unknown as { readSchedules(o: object): Promise<Array<{ revision: string }>> }
    ).readSchedules({ all: true, offset: 0, count: 10, until: 0 });
    await queue.schedules.set("s", { every: 30_000, type: "job" }, { now: T0 });
    await (
      queue.schedules as unknown as { setAside(n: string, r: string, now: number, e: unknown): Promise<void> }
    ).setAside("s", read.revision, T0, new Error("stale"));
    expect((await queue.schedules.list())[0].aside).toBeUndefined();
  });

  it("admits a slot's task as an enqueue would: a type the strict queue does not declare, a payload over its cap, set aside with why", async () => {
    const queue = await fresh({ strictTypes: true, maxPayloadBytes: 100 });
    await queue.schedules.set("typo", { every: 20_000, type: "jbo" }, { now: T0 });
    await queue.schedules.set("big", { every: 20_000, type: "job", payload: "x".repeat(200) }, { now: T0 });
    await queue.schedules.set("fine", { every: 20_000, type: "job" }, { now: T0 });
    // The same tasks through enqueue are refused.
    await expect(queue.enqueue([{ id: "e1", type: "jbo" }], { now: T0 })).rejects.toThrow(/not declared/);
    await expect(queue.enqueue([{ id: "e2", type: "job", payload: "x".repeat(200) }], { now: T0 })).rejects.toThrow(
      /payload is \d+ bytes as JSON; the cap is \d+ bytes/,
    );
    const plan = await queue.schedules.plan({ now: T0, horizonMs: HORIZON });
    expect(plan).toMatchObject({ setAside: 2, planned: 1, made: 3 });
    const listed = Object.fromEntries((await queue.schedules.list()).map((info) => [info.name, info]));
    expect(listed.typo.aside).toMatch(/its type "jbo" is not declared for this queue/);
    expect(listed.big.aside).toMatch(/its payload is 202 bytes, over the queue's maxPayloadBytes/);
    expect(listed.fine.aside).toBeUndefined();
    expect((await queue.admin.list("scheduled", { limit: 100 })).every((task) => task.id.startsWith("fine@"))).toBe(
      true,
    );
  });
});
