// Schedules under concurrent planners (docs/schedules.md "Exactly once per slot"): 10 planner
// processes (the reclaimer's planning and tick, each its own process and connection) run against
// one schedule while the test SIGKILLs one of them every few moments and starts another, and
// three redeploys change the schedule's cron mid-flight (the cold start's set, declared), one of
// them while every planner is away (its cursor behind now). The
// clock is the test's, kept in Redis, so 200 and more slots pass in seconds. After it: the tasks
// are exactly the slots each definition gives from the cursor at its change to the next change,
// each once, and none was missed. Then two deployments sharing the queue, each declaring its own
// schedules, their cold starts interleaved with planners whose clocks are up to the allowed skew
// apart, and one redeploy removing a schedule: every slot of every live schedule made once, the
// other deployment's never touched.
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import { loadCron, type ScheduleDefinition, slotId, slotsBetween } from "../../shared/schedules.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { bundled } from "../helpers/bundle.js";
import { expectClean } from "../helpers/check.js";
import { configuredQueue, redisUrl, uniqueQueueName } from "../helpers/stores.js";
import { chaosSeed, FULL, random, report, scale, sleep } from "./helpers/chaos.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/planner-child.ts", import.meta.url));
const T0 = Date.parse("2026-12-02T10:00:00.000Z");
const PLANNERS = 10;
const CRONS = ["* * * * * *", "*/2 * * * * *", "*/3 * * * * *", "* * * * * *"];
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

/** A queue running `types`, and the clock its planners read, kept in Redis and set to T0. */
async function clockedQueue(prefix: string, types: string[]) {
  const name = uniqueQueueName(prefix);
  const store = TcpStore.fromUrl(redisUrl());
  const redis = new Redis(redisUrl());
  const policies = Object.fromEntries(types.map((type) => [type, { leaseMs: 10_000, maxAttempts: 1 }]));
  const queue: Queue = await configuredQueue(store, { name, policies });
  const clockKey = `leaseq:{${name}}:testclock`;
  await redis.set(clockKey, String(T0));
  return { name, store, redis, queue, clockKey };
}

/** The ids of the queue's SCHEDULED and READY tasks: the slots made. */
async function slotTaskIds(queue: Queue): Promise<string[]> {
  const ids: string[] = [];
  for (const state of ["scheduled", "ready"] as const) {
    for (let offset = 0; ; offset += 1000) {
      const page = await queue.admin.list(state, { offset, limit: 1000 });
      ids.push(...page.map((task) => task.id));
      if (page.length < 1000) break;
    }
  }
  return ids;
}

describe("a schedule under 10 planners, SIGKILLs and three redeploys", () => {
  // Its processes are spawned, SIGKILLed and spawned again 50-60 times: 20-30 s on a quiet machine,
  // more under a full CI run, so it has a test timeout of its own.
  it(
    "makes exactly one task per slot, none missed, for 200 slots and more",
    async () => {
      const seed = chaosSeed();
      const rand = random(seed);
      const { name, store, redis, queue, clockKey } = await clockedQueue("sched", ["job"]);
      let now = T0;
      const definition = (cron: string): ScheduleDefinition => ({ cron, type: "job", catchUp: { max: 100 } });
      // The first deploy: the schedule is declared, its cursor is now.
      const cursors = [(await queue.schedules.set("s", definition(CRONS[0]), { now, owner: "deploy" })).cursorMs];

      let kills = 0;
      let spawned = 0;
      let plans = 0;
      const spawn = () => {
        const child = fork(bundled(FIXTURE), [name, clockKey], {
          env: { ...process.env, REDIS_URL: redisUrl() },
          stdio: ["ignore", "ignore", "inherit", "ipc"],
        });
        spawned++;
        children.add(child);
        child.on("message", () => plans++);
        child.on("exit", () => children.delete(child));
        return child;
      };
      for (let i = 0; i < PLANNERS; i++) spawn();
      // Wait for the planners to start planning.
      while (plans < PLANNERS) await sleep(50);

      const phaseSeconds = scale(75, 150);
      for (let phase = 0; phase < CRONS.length; phase++) {
        if (phase === 2) {
          // The planners are away for 30 s (all killed), and the redeploy comes then: the cursor
          // lags behind now at the change, and the slots after it must still be made, none skipped.
          for (const child of children) child.kill("SIGKILL");
          kills += children.size;
          while (children.size > 0) await sleep(20);
          now += 30_000;
          await redis.set(clockKey, String(now));
        }
        if (phase > 0) {
          // A redeploy with a changed cron: the cold start's set, at a moment the planners run.
          cursors.push((await queue.schedules.set("s", definition(CRONS[phase]), { now, owner: "deploy" })).cursorMs);
        }
        while (children.size < PLANNERS) spawn();
        for (let second = 0; second < phaseSeconds; second++) {
          now += 1_000;
          await redis.set(clockKey, String(now));
          await sleep(15);
          if (rand() < 0.15) {
            const victims = [...children];
            const victim = victims[Math.floor(rand() * victims.length)];
            victim?.kill("SIGKILL");
            kills++;
            spawn();
          }
        }
      }
      // The clock stops; the planners catch up with it, then stop.
      const settled = plans;
      while (plans < settled + PLANNERS * 2) await sleep(50);
      await redis.set(clockKey, "stop");
      while (children.size > 0) await sleep(50);
      const [info] = await queue.schedules.list();
      cursors.push(info.cursorMs);

      await loadCron();
      const expected: string[] = [];
      for (let phase = 0; phase < CRONS.length; phase++) {
        for (const slot of slotsBetween(definition(CRONS[phase]), cursors[phase], cursors[phase + 1], 100_000)) {
          expected.push(slotId("s", slot));
        }
      }
      const ids = await slotTaskIds(queue);
      report("schedules", {
        seed,
        planners: PLANNERS,
        spawned,
        kills,
        plans,
        slots: expected.length,
        tasks: ids.length,
      });
      expect(expected.length).toBeGreaterThanOrEqual(200);
      expect(ids.sort()).toEqual(expected.sort());
      // Made once each: the schedule counted as many tasks made as there are, and passed over none.
      expect(info).toMatchObject({ made: expected.length, passedOver: 0 });
      expect(kills).toBeGreaterThanOrEqual(5);
      await expectClean(queue, now);
      redis.disconnect();
      await store.close();
    },
    FULL ? 900_000 : 120_000,
  );
});

describe("two deployments sharing a queue, their cold starts interleaved", () => {
  it("keeps each deployment's schedules: every slot of every live schedule made once, none passed over", async () => {
    const seed = chaosSeed();
    const rand = random(seed);
    const { name, store, redis, queue, clockKey } = await clockedQueue("shared", ["a", "b"]);
    let now = T0;
    const at = (cron: string, type: string): ScheduleDefinition => ({ cron, type, catchUp: { max: 100 } });
    const declarations = {
      a: { every1: at("* * * * * *", "a"), every2: at("*/2 * * * * *", "a") },
      aWithout: { every1: at("* * * * * *", "a") },
      b: { every3: at("*/3 * * * * *", "b"), every5: at("*/5 * * * * *", "b") },
    };
    await queue.schedules.syncDeclared(declarations.a, { now, owner: "stack-a" });
    await queue.schedules.syncDeclared(declarations.b, { now, owner: "stack-b" });
    const starts = Object.fromEntries((await queue.schedules.list()).map((info) => [info.name, info.cursorMs]));

    let plans = 0;
    const spawn = () => {
      // Each planner's clock up to the allowed skew (2 s) from the parent's, either way.
      const offset = Math.round((rand() * 2 - 1) * 2_000);
      const child = fork(bundled(FIXTURE), [name, clockKey, String(offset)], {
        env: { ...process.env, REDIS_URL: redisUrl() },
        stdio: ["ignore", "ignore", "inherit", "ipc"],
      });
      children.add(child);
      child.on("message", () => plans++);
      child.on("exit", () => children.delete(child));
    };
    for (let i = 0; i < 6; i++) spawn();
    while (plans < 6) await sleep(50);

    let aDeclaration: Record<string, ScheduleDefinition> = declarations.a;
    let removedCursor: number | undefined;
    const seconds = scale(60, 150);
    for (let second = 0; second < seconds; second++) {
      now += 1_000;
      await redis.set(clockKey, String(now));
      await sleep(15);
      // Cold starts of either deployment at random moments, as their workers scale out.
      if (rand() < 0.2) await queue.schedules.syncDeclared(declarations.b, { now, owner: "stack-b" });
      if (rand() < 0.2) await queue.schedules.syncDeclared(aDeclaration, { now, owner: "stack-a" });
      if (second === Math.floor(seconds / 2)) {
        // stack-a redeploys without every2: its cold start retires it; stack-b's cold starts never touch it.
        aDeclaration = declarations.aWithout;
        expect((await queue.schedules.syncDeclared(aDeclaration, { now, owner: "stack-a" })).removed).toEqual([
          "every2",
        ]);
        removedCursor = Number(await redis.hget(queue.keys.schedules, "every2:c"));
      }
      if (rand() < 0.1) {
        const victim = [...children][Math.floor(rand() * children.size)];
        victim?.kill("SIGKILL");
        spawn();
      }
    }
    const settled = plans;
    while (plans < settled + 12) await sleep(50);
    await redis.set(clockKey, "stop");
    while (children.size > 0) await sleep(50);

    await loadCron();
    const listed = Object.fromEntries((await queue.schedules.list()).map((info) => [info.name, info]));
    expect(Object.keys(listed).sort()).toEqual(["every1", "every3", "every5"]);
    expect(Number(await redis.hget(queue.keys.schedules, "every2:c"))).toBe(removedCursor);
    const ids = await slotTaskIds(queue);
    const definitions = { ...declarations.a, ...declarations.b };
    const expected: string[] = [];
    for (const [schedule, definition] of Object.entries(definitions)) {
      const end = schedule === "every2" ? (removedCursor ?? 0) : listed[schedule].cursorMs;
      const slots = slotsBetween(definition, starts[schedule], end, 100_000).map((slot) => slotId(schedule, slot));
      expected.push(...slots);
      if (schedule !== "every2")
        expect(listed[schedule], schedule).toMatchObject({ made: slots.length, passedOver: 0 });
    }
    report("schedules-shared", { seed, slots: expected.length, tasks: ids.length, plans });
    expect(expected.length).toBeGreaterThanOrEqual(100);
    expect(ids.sort()).toEqual(expected.sort());
    await expectClean(queue, now);
    redis.disconnect();
    await store.close();
  });
});
