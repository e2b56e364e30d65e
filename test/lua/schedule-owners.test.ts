// Deployments sharing a queue each own the schedules their declaration sets (docs/schedules.md,
// "Deployments own their schedules"): a cold start adds, changes and retires only its own, never
// another deployment's, through any interleaving; a rolling deploy's two releases of one deployment
// hand a schedule back and forth without a slot lost unseen. Both stores.
import { describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import { expectClean } from "../helpers/check.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const T0 = Date.parse("2026-12-02T10:00:00.000Z");
const MINUTE = 60_000;
const HORIZON = 70_000;

/** The slot times (ms) of schedule `name`'s tasks, in order. */
async function slotTimes(queue: Queue, name: string): Promise<number[]> {
  const times: number[] = [];
  for (const state of ["scheduled", "ready", "leased", "done", "failed"] as const) {
    for (const task of await queue.admin.list(state, { limit: 1000 })) {
      if (task.id.startsWith(`${name}@`)) times.push(Date.parse(task.id.slice(name.length + 1)));
    }
  }
  return times.sort((a, b) => a - b);
}

describe.each(adapters)("schedules owned by their deployment, over $name", (adapter) => {
  const { fresh, redis } = queueFixture(adapter, {
    policies: { a: { leaseMs: 10_000, maxAttempts: 2 }, b: { leaseMs: 10_000, maxAttempts: 2 } },
  });
  const declarationA = { nightly: { every: MINUTE, type: "a" } };
  const declarationB = { hourly: { every: MINUTE, type: "b" } };

  it("two deployments' cold starts, interleaved, each keep the other's schedule: every slot of both made once", async () => {
    const queue = await fresh();
    expect(await queue.schedules.syncDeclared(declarationA, { now: T0, owner: "stack-a" })).toEqual({
      set: ["nightly"],
      removed: [],
      refused: [],
    });
    await queue.schedules.syncDeclared(declarationB, { now: T0, owner: "stack-b" });
    // Planning and cold starts of either, one after another, over ten minutes.
    for (let minute = 0; minute <= 10; minute++) {
      const now = T0 + minute * MINUTE + 500;
      const owner = minute % 2 === 0 ? "stack-a" : "stack-b";
      const result = await queue.schedules.syncDeclared(owner === "stack-a" ? declarationA : declarationB, {
        now,
        owner,
      });
      expect(result.removed).toEqual([]);
      await queue.schedules.plan({ now, horizonMs: HORIZON });
    }
    // Every slot up to the last plan's horizon (10 min 30 s + 70 s): minutes 1 to 11.
    const expected = Array.from({ length: 11 }, (_, i) => T0 + (i + 1) * MINUTE);
    expect(await slotTimes(queue, "nightly")).toEqual(expected);
    expect(await slotTimes(queue, "hourly")).toEqual(expected);
    const listed = await queue.schedules.list();
    expect(listed.map((info) => [info.name, info.owner, info.passedOver]).sort()).toEqual([
      ["hourly", "stack-b", 0],
      ["nightly", "stack-a", 0],
    ]);
    await expectClean(queue, T0 + 11 * MINUTE);
  });

  it("a deployment does not take over another's schedule of the same name, nor does a run-time caller", async () => {
    const queue = await fresh();
    await queue.schedules.syncDeclared(declarationA, { now: T0, owner: "stack-a" });
    const clash = { nightly: { every: 5_000, type: "b" } };
    expect(await queue.schedules.syncDeclared(clash, { now: T0 + 1_000, owner: "stack-b" })).toEqual({
      set: [],
      removed: [],
      refused: [{ name: "nightly", owner: "stack-a" }],
    });
    await expect(queue.schedules.set("nightly", clash.nightly, { now: T0, owner: "stack-b" })).rejects.toThrow(
      /schedule "nightly" is declared by deployment "stack-a"; deployment "stack-b" does not take it over/,
    );
    await expect(queue.schedules.set("nightly", clash.nightly, { now: T0 })).rejects.toThrow(
      /declared in the task module of deployment "stack-a"/,
    );
    const [info] = await queue.schedules.list();
    expect(info).toMatchObject({ name: "nightly", owner: "stack-a", definition: { every: MINUTE, type: "a" } });
    // A bad owner is named.
    await expect(queue.schedules.syncDeclared(declarationA, { now: T0, owner: "stack a" })).rejects.toThrow(
      /owner must be 1-64 characters of A-Z a-z 0-9 _ \. -/,
    );
  });

  it("a rolling deploy that drops a schedule: the release before takes it back at its cursor, the slots between counted; its removal is final once the old release is gone", async () => {
    const queue = await fresh();
    const both = { ...declarationA, weekly: { every: MINUTE, type: "a" } };
    await queue.schedules.syncDeclared(both, { now: T0, owner: "stack-a" });
    await queue.schedules.plan({ now: T0 + 500, horizonMs: HORIZON });
    // The new release (without weekly) cold-starts: weekly is retired.
    expect(await queue.schedules.syncDeclared(declarationA, { now: T0 + 2 * MINUTE, owner: "stack-a" })).toMatchObject({
      removed: ["weekly"],
    });
    // A worker of the release before cold-starts three minutes later: weekly is back from its cursor,
    // not from now: the slots it missed are made or passed over by its catch-up ("latest") and counted.
    expect(await queue.schedules.syncDeclared(both, { now: T0 + 5 * MINUTE, owner: "stack-a" })).toMatchObject({
      set: ["weekly"],
    });
    await queue.schedules.plan({ now: T0 + 5 * MINUTE + 500, horizonMs: HORIZON });
    const [weekly] = (await queue.schedules.list()).filter((info) => info.name === "weekly");
    const made = await slotTimes(queue, "weekly");
    // Every slot from the first (T0 + 1 min) to the horizon (T0 + 6 min) is made or passed over: none unseen.
    expect(made.length + weekly.passedOver).toBe(6);
    // Slots 2 and 3 were missed (more than the horizon past): the latest (3) is made, 2 passed over.
    expect(made).toEqual([T0 + MINUTE, T0 + 3 * MINUTE, T0 + 4 * MINUTE, T0 + 5 * MINUTE, T0 + 6 * MINUTE]);
    expect(weekly.passedOver).toBe(1);
    expect(weekly.made).toBe(made.length);
    // The rollout ends: the new release retires it again; no release sets it any more.
    await queue.schedules.syncDeclared(declarationA, { now: T0 + 6 * MINUTE, owner: "stack-a" });
    expect((await queue.schedules.list()).map((info) => info.name)).toEqual(["nightly"]);
    // Another deployment cannot retire what is not its own: stack-b's cold start leaves nightly.
    expect(await queue.schedules.syncDeclared(declarationB, { now: T0 + 7 * MINUTE, owner: "stack-b" })).toMatchObject({
      removed: [],
    });
    expect((await queue.schedules.list()).map((info) => info.name).sort()).toEqual(["hourly", "nightly"]);
  });

  it("a schedule declared before owners were kept is adopted by the first deployment that declares it", async () => {
    const queue = await fresh();
    await queue.schedules.syncDeclared(declarationA, { now: T0, owner: "stack-a" });
    // As the release before wrote it: declared, no owner.
    await redis.hset(queue.keys.schedules, "nightly:d", "1");
    expect((await queue.schedules.list())[0]).toMatchObject({ declared: true, owner: "1" });
    expect(await queue.schedules.syncDeclared(declarationA, { now: T0 + 1_000, owner: "stack-a" })).toMatchObject({
      set: [],
      removed: [],
    });
    expect((await queue.schedules.list())[0]).toMatchObject({ declared: true, owner: "stack-a" });
  });
});
