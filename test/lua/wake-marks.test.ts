// Wake-ups are never lost to a lost reply, a resume or a rate window:
// the script that records a wake-up mark answers it again when its caller's store repeats the call,
// the reclaimer's tick does not trust a mark it cannot know was sent, and resume and tick arrange one
// for every kind of work falling due. The lost reply is real: the local Upstash endpoint runs the
// script, then closes the socket, and @upstash/redis's request is retried by the store.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../dev/standins/upstash/index.js";
import type { Queue } from "../../shared/queue.js";
import { UpstashStore } from "../../shared/stores/upstash.js";
import { expectClean } from "../helpers/check.js";
import { adapters, configuredQueue, queueFixture, redisUrl, uniqueQueueName } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const NO_BACKOFF = { retries: 2, backoffMs: () => 0 };

describe("a wake-up whose reply was lost", () => {
  let endpoint: UpstashEndpoint;
  const stores: UpstashStore[] = [];
  beforeAll(async () => {
    endpoint = await startUpstashEndpoint({ redisUrl: redisUrl() });
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    await endpoint.close();
  });
  /** A queue over the endpoint, its library loaded (a fault then hits the script's own run, not a load). */
  async function open(settings = {}) {
    const store = new UpstashStore({ url: endpoint.url, token: endpoint.token, retry: NO_BACKOFF });
    stores.push(store);
    const queue = await configuredQueue(store, { name: uniqueQueueName("wake"), ...settings });
    await queue.enqueue([{ id: "warm-up", type: "job", delayMs: 3_600_000 }], { now: NOW - 10_000 });
    await queue.handOff({ now: NOW - 10_000 });
    return queue;
  }

  it("13: an enqueue repeated after a lost reply still answers the wake-up its first run arranged", async () => {
    const queue = await open();
    const fault = endpoint.faults.add({
      match: (command) => command.some((arg) => arg.includes("lost-1")),
      action: { kind: "drop" },
    });
    const { results, wakeAtMs } = await queue.enqueueAndWake([{ id: "lost-1", type: "job", delayMs: 30_000 }], {
      now: NOW,
    });
    expect(fault).toMatchObject({ fired: 1 });
    expect(results).toEqual([{ id: "lost-1", status: "duplicate", state: "scheduled" }]);
    expect(wakeAtMs).toBe(NOW + 30_000);
    await expectClean(queue, NOW + 1);
  });

  it("13: the reclaimer's tick arranges a wake-up a lost reply's mark claims, before it falls due", async () => {
    const queue = await open();
    // The producer's reply is lost, and its store gives up: the mark is recorded, no message was sent.
    const fault = endpoint.faults.add({
      match: (command) => command.some((arg) => arg.includes("lost-2")),
      action: { kind: "drop" },
      times: 3,
    });
    await expect(queue.enqueue([{ id: "lost-2", type: "job", delayMs: 30_000 }], { now: NOW })).rejects.toThrow();
    expect(fault.fired).toBe(3);
    const tick = await queue.tick({ now: NOW + 1_000, wakeHorizonMs: 70_000 });
    expect(tick.wakeAtMs).toBe(NOW + 30_000);
  });

  it("13: a handoff repeated after a lost reply answers its wake-up again", async () => {
    const queue = await open({ policies: { job: { leaseMs: 5_000, maxAttempts: 3 } } });
    await queue.enqueue([{ id: "r", type: "job" }], { now: NOW });
    const fault = endpoint.faults.add({
      match: (command) => /^(EVAL|FCALL)/i.test(command[0]) && command.includes(String(NOW + 5)),
      action: { kind: "drop" },
    });
    // A worker retries its task in 20 s and stops: that wake-up is its to arrange.
    // The worker the enqueue's wake-up started answers it with its first claim.
    const [task] = await queue.claim({ count: 1, now: NOW + 1, woken: true });
    await queue.settle([{ ...task, outcome: "retry", retryAtMs: NOW + 20_000, error: "later" }], { now: NOW + 2 });
    expect(await queue.handOff({ now: NOW + 5, horizonMs: 900_000 })).toBe(NOW + 20_000);
    expect(fault.fired).toBe(1);
  });
});

describe.each(adapters)("wake-ups for every kind of work falling due, over $name", (adapter) => {
  const { fresh } = queueFixture(adapter);

  it("14: a resume arranges the wake-up for a delayed task that falls due while nothing else waits", async () => {
    const queue = await fresh();
    await queue.admin.pause({ now: NOW });
    const { wakeAtMs: whilePaused } = await queue.enqueueAndWake([{ id: "later", type: "job", delayMs: 30_000 }], {
      now: NOW,
    });
    expect(whilePaused).toBeUndefined();
    const { changed, wakeAtMs } = await queue.admin.resume({ now: NOW + 1_000 });
    expect(changed).toBe(true);
    expect(wakeAtMs).toBe(NOW + 30_000);
    await expectClean(queue, NOW + 2_000);
  });

  it.each([
    ["deleted by id without a now, as `leaseq delete` does", (queue: Queue) => queue.admin.delete(["later"])],
    ["purged, as `leaseq purge scheduled` does", (queue: Queue) => queue.admin.purge("scheduled")],
    ["cancelled", (queue: Queue) => queue.admin.cancel(["later"], { now: NOW + 500 })],
  ])(
    "a delayed task %s takes its due time with it: a resume after it arranges no wake-up for nothing",
    async (_, remove) => {
      const queue = await fresh();
      // A worker is draining (its empty claim's mark): the enqueue notes when the task falls due and
      // arranges no wake-up of its own.
      expect(await queue.claim({ count: 1, now: NOW })).toEqual([]);
      await queue.enqueue([{ id: "later", type: "job", delayMs: 30_000 }], { now: NOW });
      await remove(queue);
      const { wakeAtMs } = await queue.admin.resume({ now: NOW + 1_000 });
      expect(wakeAtMs).toBeUndefined();
      await expectClean(queue, NOW + 2_000);
    },
  );

  it("a debounce that replaces a delayed task takes its due time: a resume arranges the wake-up for the one that replaced it", async () => {
    const queue = await fresh();
    expect(await queue.claim({ count: 1, now: NOW })).toEqual([]);
    const debounce = { key: "k", delayMs: 10_000, maxWaitMs: 60_000 };
    await queue.enqueue([{ id: "first", type: "job", debounce }], { now: NOW });
    await queue.enqueue([{ id: "second", type: "job", debounce }], { now: NOW + 1_000 });
    const { wakeAtMs } = await queue.admin.resume({ now: NOW + 2_000 });
    expect(wakeAtMs).toBe(NOW + 11_000);
    await expectClean(queue, NOW + 3_000);
  });

  it("a task enqueued between a worker's last empty claim and its handoff gets the wake-up the worker's mark kept from it", async () => {
    const queue = await fresh();
    // The worker's claim comes back empty: its mark says a worker is draining.
    expect(await queue.claim({ count: 10, now: NOW })).toEqual([]);
    // A producer's enqueue, covered by that mark, asks for no wake-up of its own...
    const { wakeAtMs } = await queue.enqueueAndWake([{ id: "late", type: "job" }], { now: NOW + 10 });
    expect(wakeAtMs).toBeUndefined();
    // ...so the worker, stopping without having claimed it, arranges one now.
    expect(await queue.handOff({ now: NOW + 20 })).toBe(NOW + 20);
    // A worker that stops after an empty claim with nothing new since arranges none, even with
    // READY work it cannot take (here: a type whose lease outlasts the time it had).
    const long = await fresh({ policies: { report: { leaseMs: 600_000, maxAttempts: 1 } } });
    await long.enqueue([{ id: "r", type: "report" }], { now: NOW });
    expect(await long.claim({ count: 10, now: NOW + 1, maxLeaseMs: 60_000 })).toEqual([]);
    expect(await long.handOff({ now: NOW + 2 })).toBeUndefined();
    await expectClean(queue, NOW + 30);
  });

  it("14: the tick arranges the wake-up of groups waiting for their rate window when nothing is scheduled", async () => {
    const queue = await fresh({ typeGroups: { job: { rate: { max: 1, perMs: 10_000 } } } });
    await queue.enqueue(
      ["a", "b"].map((id) => ({ id, type: "job", group: "g" })),
      { now: NOW },
    );
    expect((await queue.claim({ count: 10, now: NOW })).map((task) => task.id)).toEqual(["a"]);
    // b waits for the group's next window; nothing is SCHEDULED, nothing else is due. The worker
    // that claimed a stopped more than 5 s ago (its claim's mark covers nothing any more).
    const windowEnds = NOW - (NOW % 10_000) + 10_000;
    const tick = await queue.tick({ now: NOW + 6_000, wakeHorizonMs: 70_000 });
    expect(tick.wakeAtMs).toBe(windowEnds);
    await expectClean(queue, NOW + 200);
  });
});

describe.each(adapters)("each wake-up arranged once, over $name", (adapter) => {
  const { fresh } = queueFixture(adapter);

  it("a worker's claims never erase a wake-up arranged for later: its hand-off does not arrange that time again", async () => {
    const queue = await fresh();
    // A producer's delayed task: a wake-up arranged for its time.
    const { wakeAtMs } = await queue.enqueueAndWake([{ id: "later", type: "job", delayMs: 30_000 }], { now: NOW });
    expect(wakeAtMs).toBe(NOW + 30_000);
    // A worker drains other work meanwhile (woken for it), claiming (and marking itself active) again and again.
    await queue.enqueue([{ id: "now", type: "job" }], { now: NOW + 1 });
    for (let at = NOW + 2; at < NOW + 10_000; at += 3_000)
      await queue.claim({ count: 10, now: at, woken: at === NOW + 2 });
    // It stops: the wake-up for "later" is still arranged, so it arranges nothing more.
    expect(await queue.handOff({ now: NOW + 10_000 })).toBeUndefined();
    // Another worker started by an earlier wake-up stops too: still nothing.
    expect(await queue.handOff({ now: NOW + 11_000 })).toBeUndefined();
    // A sooner task gets its own; the later one stays arranged beside it.
    const sooner = await queue.enqueueAndWake([{ id: "sooner", type: "job", delayMs: 5_000 }], { now: NOW + 12_000 });
    expect(sooner.wakeAtMs).toBe(NOW + 17_000);
    // The worker that one started takes it, and stops: "later" is still arranged.
    expect((await queue.claim({ count: 10, now: NOW + 17_100, woken: true })).map((task) => task.id)).toEqual([
      "sooner",
    ]);
    expect(await queue.handOff({ now: NOW + 18_000 })).toBeUndefined();
    await expectClean(queue, NOW + 18_000);
  });

  it("a claim that leaves its types' tasks for want of room arranges one wake-up for another worker, once", async () => {
    const queue = await fresh();
    await queue.enqueue(
      ["a", "b", "c"].map((id) => ({ id, type: "import" })),
      { now: NOW },
    );
    // The worker the enqueue's wake-up started: it answers it, takes the one it has room for.
    const first = await queue.claimOrNextDue({
      count: 10,
      now: NOW,
      types: ["import"],
      room: { import: 1 },
      woken: true,
    });
    expect(first.tasks.map((task) => task.id)).toEqual(["a"]);
    expect(first.wakeAtMs).toBe(NOW);
    // The same worker's next claim with no room: the wake-up is arranged already.
    const second = await queue.claimOrNextDue({ count: 10, now: NOW + 100, types: ["import"], room: { import: 0 } });
    expect(second).toMatchObject({ tasks: [], wakeAtMs: undefined });
    // The worker that wake-up started has room: it takes the next one.
    const other = await queue.claimOrNextDue({
      count: 10,
      now: NOW + 1_000,
      types: ["import"],
      room: { import: 1 },
      woken: true,
    });
    expect(other.tasks.map((task) => task.id)).toEqual(["b"]);
    await expectClean(queue, NOW + 1_000);
  });

  it("a wake-up arranged for tasks left for want of room covers no other work: a short task enqueued meanwhile gets its own, answered first", async () => {
    const queue = await fresh();
    await queue.enqueue(
      ["a", "b"].map((id) => ({ id, type: "import" })),
      { now: NOW },
    );
    // The worker the enqueue's wake-up brought (a free slot of a running one: it does not linger)
    // takes the one import it has room for: a wake-up for another worker, for the import left,
    // marked as such.
    const claimed = await queue.claimOrNextDue({
      count: 5,
      now: NOW,
      types: ["import", "ping"],
      room: { import: 1 },
      woken: true,
      lingers: false,
    });
    expect(claimed.tasks.map((task) => task.id)).toEqual(["a"]);
    expect(claimed.wakeAtMs).toBe(NOW);
    // A short task: that wake-up is for imports (the workers running may have no room for one for
    // long), so it gets one of its own; and the claim did not mark its worker active.
    const ping = await queue.enqueueAndWake([{ id: "p", type: "ping" }], { now: NOW + 100 });
    expect(ping.wakeAtMs).toBe(NOW + 100);
    // A second ping is covered by the first's.
    expect((await queue.enqueueAndWake([{ id: "p2", type: "ping" }], { now: NOW + 200 })).wakeAtMs).toBeUndefined();
    // A free slot takes the ping's wake-up: its claim answers the ping's, not the one for imports.
    const pinged = await queue.claimOrNextDue({
      count: 1,
      now: NOW + 300,
      types: ["import", "ping"],
      room: { import: 0 },
      woken: true,
      lingers: false,
    });
    expect(pinged.tasks.map((task) => task.id)).toEqual(["p"]);
    // The import left still has its wake-up: no claim short of room arranges another.
    expect(pinged.wakeAtMs).toBeUndefined();
    // The next short task is covered by nothing now: its own wake-up.
    expect((await queue.enqueueAndWake([{ id: "p3", type: "ping" }], { now: NOW + 400 })).wakeAtMs).toBe(NOW + 400);
    await expectClean(queue, NOW + 400);
  });
});
