// No script errors after its first write (docs/design.md "Scripts"): each is driven at its worst
// point, the largest input its arguments allow over a queue holding records that cannot be read in
// every set, and the queue's consistency check finds no problem after the call that was not there
// before it (the planted records are quarantined, or left as they were; nothing half-done).
import { describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import type { ClaimedTask, TaskInput } from "../../shared/types.js";
import { adapters, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const tcp = adapters.filter((adapter) => adapter.name === "tcp");
const key = (problem: { code: string; subject: string }) => `${problem.code} ${problem.subject}`;

describe.each(tcp)("every script at its worst point, over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);

  /** A queue with tasks in every state, groups (a rate, concurrency, ordered), and unreadable records in every set. */
  async function hostileQueue(): Promise<{ queue: Queue; leased: ClaimedTask[] }> {
    const queue = await fresh({
      policies: { job: { leaseMs: 1_000, maxAttempts: 2 }, ord: { leaseMs: 1_000, maxAttempts: 2 } },
      typeGroups: { job: { concurrency: 2, rate: { max: 50, perMs: 1_000 } }, ord: { ordered: true } },
    });
    const tasks: TaskInput[] = [];
    for (let i = 0; i < 600; i++) {
      tasks.push({ id: `g${i}`, type: i % 3 === 0 ? "ord" : "job", group: `tenant-${i % 150}`, priority: i % 2 });
    }
    for (let i = 0; i < 300; i++) tasks.push({ id: `u${i}`, type: "job", delayMs: i % 4 === 0 ? 500 : 0 });
    for (let i = 0; i < tasks.length; i += 1_000) await queue.enqueue(tasks.slice(i, i + 1_000), { now: NOW });
    const leased = await queue.claim({ count: 1_000, now: NOW });
    await queue.settle(
      leased.slice(0, 40).map((task, i) => ({
        id: task.id,
        token: task.token,
        outcome: i % 3 === 0 ? ("ack" as const) : i % 3 === 1 ? ("fail" as const) : ("retry" as const),
        retryAtMs: NOW + 300,
        error: "x",
      })),
      { now: NOW },
    );
    // Unreadable records: a READY one, a parked one, a scheduled one, a leased one, a DONE and a FAILED one.
    const parked = (await redis.zrange(queue.keys.grouped, 0, 0))[0]?.split("\0")[2];
    const states = await redis.hgetall(queue.keys.task);
    const inState = (letter: string) =>
      Object.entries(states)
        .filter(([field, text]) => field.endsWith(":s") && text.startsWith(`${letter}|`))
        .map(([field]) => field.slice(0, -2));
    const victims = [parked, inState("S")[0], inState("L")[0], inState("D")[0], inState("F")[0]].filter(Boolean);
    for (const id of victims) await redis.hset(queue.keys.task, `${id}:s`, `${states[`${id}:s`][0]}|not a state`);
    await redis.hset(queue.keys.task, "u5:s", "R|not a state");
    return { queue, leased: leased.slice(40) };
  }

  it("no script leaves the queue with a problem it did not have", async () => {
    const { queue, leased } = await hostileQueue();
    // 1,000 ids of the queue as it is when the call comes (every state, the unreadable ones among
    // them), each third one named twice, and some unknown.
    const ids = async (offset: number) => {
      const known = [
        ...new Set((await redis.hkeys(queue.keys.task)).filter((f) => !f.startsWith("#")).map((f) => f.split(":")[0])),
      ];
      return Array.from({ length: 1_000 }, (_, i) =>
        i % 17 === 0
          ? `unknown-${i}`
          : known[(offset + Math.floor(i / 3) * 7 + (i % 3 === 2 ? 0 : i % 3)) % known.length],
      );
    };
    const later = NOW + 5_000;
    const calls: Array<[string, () => Promise<unknown>]> = [
      [
        "enqueue",
        () =>
          queue.enqueue(
            Array.from({ length: 1_000 }, (_, i) => ({
              id: i % 2 === 0 ? `g${i}` : `n${i}`,
              type: "job",
              group: `other-${i}`,
              delayMs: i % 7 === 0 ? 100 : 0,
            })),
            { now: NOW + 1 },
          ),
      ],
      ["claim", () => queue.claim({ count: 1_000, now: NOW + 600 })],
      [
        "settle",
        () =>
          queue.settle(
            [...leased, ...leased].slice(0, 1_000).map((task, i) => ({
              id: task.id,
              token: i % 4 === 0 ? `${task.token}0` : task.token,
              outcome: i % 2 === 0 ? ("ack" as const) : ("retry" as const),
              retryAtMs: NOW + 900,
              error: "again",
            })),
            { now: NOW + 700 },
          ),
      ],
      [
        "extend",
        async () =>
          queue.extend(
            (await ids(1)).map((id) => ({ id, token: "1.1", leaseMs: 1_000 })),
            { now: NOW + 800 },
          ),
      ],
      [
        "release",
        async () =>
          queue.release(
            (await ids(2)).map((id) => ({ id, token: "1.1" })),
            { now: NOW + 800 },
          ),
      ],
      ["reclaim", () => queue.reclaim({ now: later, limit: 10_000 })],
      ["promote", () => queue.promote({ now: later, limit: 10_000 })],
      ["tick", () => queue.tick({ now: later + 1, limit: 10_000, wakeHorizonMs: 900_000 })],
      ["pause a type", () => queue.admin.pause({ now: later, type: "job" })],
      ["claim past a paused type", () => queue.claim({ count: 1_000, now: later + 2 })],
      ["resume the type", () => queue.admin.resume({ now: later + 3, type: "job" })],
      ["requeue", async () => queue.admin.requeue(await ids(3), { now: later + 4 })],
      ["repair", async () => queue.admin.repair(await ids(4), { now: later + 5 })],
      [
        "cancel",
        async () =>
          queue.admin.cancel(
            (await ids(5)).filter((_, i) => i % 2 === 0),
            { now: later + 6 },
          ),
      ],
      [
        "delete",
        async () =>
          queue.admin.delete(
            (await ids(6)).filter((_, i) => i % 2 === 1),
            { now: later + 7 },
          ),
      ],
      ["purge", () => queue.admin.purge("failed", { now: later + 8 })],
      ["trim", () => queue.trim({ now: later + 86_400_000 * 8, limit: 10_000 })],
      ["check with repair", () => queue.admin.checkAll({ now: later + 10, repair: true })],
      // (No wake-up is one of its answers: a wake-up arranged before and not answered covers the work.)
      ["handoff", async () => (await queue.handOff({ now: later + 11, cutOff: true })) ?? "none needed"],
      ["stats", () => queue.stats({ now: later + 12 })],
      ["list", () => queue.admin.list("ready", { limit: 1_000 })],
      ["groups", () => queue.admin.groups({ count: 1_000 })],
    ];
    let before = new Set((await queue.admin.checkAll({ now: NOW + 1 })).map(key));
    expect(before.size, "the planted records are problems to begin with").toBeGreaterThan(0);
    for (const [name, call] of calls) {
      await expect(call(), name).resolves.toBeDefined();
      const after = (await queue.admin.checkAll({ now: later + 12 })).map(key);
      expect(
        after.filter((problem) => !before.has(problem)),
        `problems ${name} left that were not there before it`,
      ).toEqual([]);
      before = new Set(after);
    }
    // In the end the check has set every unreadable record aside: nothing is left to report.
    expect(await queue.admin.checkAll({ now: later + 13 })).toEqual([]);
  }, 120_000);
});
