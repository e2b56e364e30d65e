// Time decisions that cannot be undone rest on the store's clock, not on one caller's alone
// (docs/design.md, "Time decisions and their clocks"): a caller whose clock runs ahead reclaims no
// live lease, trims no task inside its retention, and passes over no schedule slot the store's
// clock has not seen pass. A queue told to trust its callers' clocks (tests, leaseq/testing) takes
// theirs. Both stores, on the real clock (the store's TIME).
import { describe, expect, it } from "vitest";
import { adapters, queueFixture } from "../helpers/stores.js";

const MINUTE = 60_000;
/** How far ahead the fast caller's clock runs. */
const AHEAD = 10 * MINUTE;

describe.each(adapters)("time decisions over $name", (adapter) => {
  const { fresh } = queueFixture(adapter, {
    policies: { job: { leaseMs: 10_000, maxAttempts: 3 } },
    trustCallerClock: false,
    doneRetentionMs: MINUTE,
  });

  it("a caller whose clock runs ahead reclaims no live lease and trims no task inside its retention", async () => {
    const queue = await fresh();
    const now = Date.now();
    await queue.enqueue(
      ["live", "done"].map((id) => ({ id, type: "job" })),
      { now },
    );
    const [live, done] = await queue.claim({ count: 2, now });
    await queue.ack([done], { now });
    // Ten minutes ahead: by its clock the lease ended long ago and the DONE task is past its retention.
    expect((await queue.reclaim({ now: now + AHEAD })).reclaimed).toEqual([]);
    expect((await queue.tick({ now: now + AHEAD })).reclaimed).toBe(0);
    expect(await queue.trim({ now: now + AHEAD })).toEqual({ done: 0, failed: 0 });
    expect(await queue.admin.inspect("live")).toMatchObject({ state: "leased" });
    expect(await queue.admin.inspect("done")).toMatchObject({ state: "done" });
    // Its holder still settles it: the lease was never taken.
    expect((await queue.ack([live], { now }))[0]).toMatchObject({ status: "ok" });
  });

  it("a planner whose clock runs ahead passes over no slot the store's clock has not seen pass", async () => {
    const queue = await fresh();
    const now = Date.now();
    await queue.schedules.set("minutely", { every: MINUTE, type: "job", catchUp: "none" }, { now });
    const plan = await queue.schedules.plan({ now: now + AHEAD, horizonMs: 70_000 });
    // Planned at the store's time: the slots of the next 70 s made, none passed over.
    expect(plan).toMatchObject({ passedOver: 0, stale: 0 });
    expect(plan.made).toBeGreaterThanOrEqual(1);
    const [info] = await queue.schedules.list();
    expect(info.passedOver).toBe(0);
    expect(info.cursorMs).toBeLessThanOrEqual(Date.now() + 70_000);
    // The script refuses a pass-over from a `now` past the store's clock and the skew (-2), whatever
    // the caller computed; nothing is written.
    const internals = queue.schedules as unknown as {
      context: { run(name: "plan", fixed: Record<string, string>, items: string[]): Promise<unknown[]> };
      readSchedules(options: object): Promise<Array<{ revision: string; cursor: string }>>;
    };
    const [read] = await internals.readSchedules({ all: true, offset: 0, count: 10, until: 0 });
    const body = `1|${now}|job||null`;
    const reply = await internals.context.run("plan", { now: String(now + AHEAD), horizonMs: "0", callId: "" }, [
      "minutely",
      read.revision,
      read.cursor,
      String(now + AHEAD),
      String(now + AHEAD + MINUTE),
      "0",
      "",
      body,
      "",
      "9",
    ]);
    expect(Number(reply[0])).toBe(-2);
    expect((await queue.schedules.list())[0]).toMatchObject({ cursorMs: info.cursorMs, passedOver: 0 });
  });

  it("a caller whose clock runs ahead ends no dedupe window early: its task is still a duplicate", async () => {
    const queue = await fresh();
    const now = Date.now();
    const dedupe = { key: "user-42", ttlMs: MINUTE };
    expect(await queue.enqueue([{ id: "first", type: "job", dedupe }], { now })).toMatchObject([{ status: "ok" }]);
    expect(await queue.enqueue([{ id: "second", type: "job", dedupe }], { now: now + AHEAD })).toMatchObject([
      { status: "duplicate", existingId: "first" },
    ]);
    // Nor does a sweep (the reclaimer's tick, `check --repair`) remove the window's field early,
    // nor a replaced task's memory.
    const debounce = { key: "doc-1", delayMs: MINUTE, maxWaitMs: 2 * MINUTE };
    await queue.enqueue([{ id: "v1", type: "job", debounce }], { now });
    await queue.enqueue([{ id: "v2", type: "job", debounce }], { now });
    await queue.tick({ now: now + AHEAD });
    expect(await queue.admin.checkAll({ now: now + AHEAD, repair: true })).toEqual([]);
    expect(await queue.enqueue([{ id: "third", type: "job", dedupe }], { now: now + AHEAD })).toMatchObject([
      { status: "duplicate", existingId: "first" },
    ]);
    expect(await queue.enqueue([{ id: "v1", type: "job", debounce }], { now: now + AHEAD })).toMatchObject([
      { status: "duplicate", existingId: "v2" },
    ]);
  });

  it("a caller whose clock runs ahead frees no throttle period and opens no rate window early", async () => {
    // Rate windows are aligned to their span (an hour here): away from a window's edge, so the
    // store's own clock stays in the first claim's window for the whole test.
    const HOUR = 60 * MINUTE;
    const queue = await fresh({ typeGroups: { job: { rate: { max: 1, perMs: HOUR } } } });
    const edge = HOUR - (Date.now() % HOUR);
    if (edge < 15_000) await new Promise((resolve) => setTimeout(resolve, edge + 100));
    const now = Date.now();
    const throttle = { key: "tenant-7", perMs: MINUTE };
    expect(await queue.enqueue([{ id: "t1", type: "job", throttle }], { now })).toMatchObject([{ status: "ok" }]);
    expect(await queue.enqueue([{ id: "t2", type: "job", throttle }], { now: now + AHEAD })).toMatchObject([
      { status: "throttled" },
    ]);
    // One claim an hour per group: the second waits for the store's next window, not the caller's.
    await queue.enqueue(
      ["g1", "g2"].map((id) => ({ id, type: "job", group: "acme" })),
      { now },
    );
    const first = await queue.claim({ count: 5, now });
    expect(first.map((task) => task.id).filter((id) => id.startsWith("g"))).toEqual(["g1"]);
    const ahead = await queue.claim({ count: 5, now: now + AHEAD });
    expect(ahead.map((task) => task.id).filter((id) => id.startsWith("g"))).toEqual([]);
  });

  it("a queue that trusts its callers' clocks takes theirs", async () => {
    const queue = await fresh({ trustCallerClock: true });
    const now = Date.now();
    await queue.enqueue([{ id: "a", type: "job" }], { now });
    await queue.claim({ count: 1, now });
    expect((await queue.reclaim({ now: now + AHEAD })).reclaimed).toEqual(["a"]);
    const dedupe = { key: "k", ttlMs: MINUTE };
    await queue.enqueue([{ id: "first", type: "job", dedupe }], { now });
    expect(await queue.enqueue([{ id: "second", type: "job", dedupe }], { now: now + AHEAD })).toMatchObject([
      { status: "ok" },
    ]);
  });
});
