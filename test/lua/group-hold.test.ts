// An ordered group with onFailure "hold" (docs/groups.md): a task of it that ends FAILED keeps the
// group waiting until an operator requeues it (it runs first) or skips it (it stays FAILED and the
// group goes on); other groups go on meanwhile. On a real redis-server over both stores.
import { describe, expect, it } from "vitest";
import { expectClean } from "../helpers/check.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, ids, queueFixture } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;

describe.each(adapters)("an ordered group that holds on failure, over $name", (adapter) => {
  const { redis, fresh } = queueFixture(adapter);
  const files = (tenant: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ id: `${tenant}-file-${i + 1}`, type: "import", group: tenant }));

  async function importing() {
    const queue = await fresh({
      typeGroups: { import: { ordered: true, onFailure: "hold" }, plain: { ordered: true } },
      policies: { import: { leaseMs: 30_000, maxAttempts: 2 }, plain: { leaseMs: 30_000, maxAttempts: 2 } },
    });
    await queue.enqueue([...files("acme", 3), ...files("globex", 2)], { now: NOW });
    return queue;
  }

  it("waits behind a FAILED task (its last attempt or a permanent failure) while other groups go on", async () => {
    const queue = await importing();
    const first = await queue.claim({ count: 10, now: NOW });
    expect(ids(first)).toEqual(["acme-file-1", "globex-file-1"]);
    // acme's first file fails for good; globex's succeeds.
    await queue.settle(
      [
        { ...first[0], outcome: "fail", error: "PermanentError: bad file" },
        { ...first[1], outcome: "ack" },
      ],
      { now: NOW + 1 },
    );
    // globex goes on; acme holds behind its FAILED file.
    expect(ids(await queue.claim({ count: 10, now: NOW + 2 }))).toEqual(["globex-file-2"]);
    expect(await queue.claim({ count: 10, now: NOW + 3 })).toEqual([]);
    expect(await queue.admin.inspect("acme-file-1")).toMatchObject({ state: "failed", holdsGroup: true });
    const acme = (await queue.admin.groups()).groups.find((group) => group.group === "acme");
    expect(acme).toMatchObject({ ready: 2, heldBy: "acme-file-1" });
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 5);
  });

  it("a requeued FAILED task runs first, in the slot it kept, then the group goes on in order", async () => {
    const queue = await importing();
    const [a1, g1] = await queue.claim({ count: 10, now: NOW });
    expect(ids([a1, g1])).toEqual(["acme-file-1", "globex-file-1"]);
    await queue.settle([{ ...a1, outcome: "retry", retryAtMs: NOW, error: "once" }], { now: NOW + 1 });
    const [again] = await queue.claim({ count: 10, now: NOW + 2 });
    expect(again).toMatchObject({ id: "acme-file-1", attempt: 2 });
    // Its last attempt fails (a retry with none left): the group holds.
    await queue.settle([{ ...again, outcome: "retry", retryAtMs: NOW + 3, error: "twice" }], { now: NOW + 3 });
    expect(await queue.admin.inspect("acme-file-1")).toMatchObject({ state: "failed", holdsGroup: true });
    await queue.ack([g1], { now: NOW + 4 });
    expect(ids(await queue.claim({ count: 10, now: NOW + 4 }))).toEqual(["globex-file-2"]);
    expect(await queue.admin.requeue(["acme-file-1"], { now: NOW + 5 })).toEqual([{ id: "acme-file-1", status: "ok" }]);
    // It runs before the rest of its group, and nothing else of acme runs beside it.
    expect(ids(await queue.claim({ count: 10, now: NOW + 6 }))).toEqual(["acme-file-1"]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 7);
  });

  it("a skipped FAILED task stays FAILED, and its group runs its next task; skip refuses what holds nothing", async () => {
    const queue = await importing();
    const [a1, g1] = await queue.claim({ count: 10, now: NOW });
    await queue.settle(
      [
        { ...a1, outcome: "fail", error: "bad file" },
        { ...g1, outcome: "ack" },
      ],
      { now: NOW + 1 },
    );
    expect(ids(await queue.claim({ count: 10, now: NOW + 2 }))).toEqual(["globex-file-2"]);
    expect(await queue.admin.skip(["acme-file-1", "acme-file-2", "nope"], { now: NOW + 2 })).toEqual([
      { id: "acme-file-1", status: "ok" },
      { id: "acme-file-2", status: "not_failed" },
      { id: "nope", status: "unknown_id" },
    ]);
    expect(await queue.admin.inspect("acme-file-1")).toMatchObject({ state: "failed", holdsGroup: false });
    expect(ids(await queue.claim({ count: 10, now: NOW + 3 }))).toEqual(["acme-file-2"]);
    // Skipped again (a repeat after a lost reply): it holds nothing now.
    expect(await queue.admin.skip(["acme-file-1"], { now: NOW + 4 })).toEqual([
      { id: "acme-file-1", status: "not_holding" },
    ]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 5);
  });

  it("holds nothing by default (onFailure continue), nor for a cancel; a delete or the task's trim lets the group go on", async () => {
    const queue = await importing();
    await queue.enqueue(
      [
        { id: "p1", type: "plain", group: "p" },
        { id: "p2", type: "plain", group: "p" },
      ],
      { now: NOW },
    );
    const first = await queue.claim({ count: 10, now: NOW });
    const p1 = first.find((task) => task.id === "p1");
    const g1 = first.find((task) => task.id === "globex-file-1");
    if (!p1 || !g1) throw new Error("expected p1 and globex-file-1 in the first claim");
    await queue.settle([{ ...p1, outcome: "fail", error: "no" }], { now: NOW + 1 });
    // A cancel is the operator's decision: acme's next file runs.
    await queue.admin.cancel(["acme-file-1"], { now: NOW + 1 });
    const next = ids(await queue.claim({ count: 10, now: NOW + 2 }));
    expect(next).toContain("p2");
    expect(next).toContain("acme-file-2");
    expect(await queue.admin.inspect("acme-file-1")).toMatchObject({ state: "failed", holdsGroup: false });
    // globex's first fails and holds; its deletion lets globex go on.
    await queue.settle([{ ...g1, outcome: "fail", error: "no" }], { now: NOW + 4 });
    expect(await queue.admin.inspect("globex-file-1")).toMatchObject({ holdsGroup: true });
    expect(ids(await queue.claim({ count: 10, now: NOW + 4 }))).not.toContain("globex-file-2");
    expect(await queue.admin.delete(["globex-file-1"], { now: NOW + 5 })).toEqual([
      { id: "globex-file-1", status: "ok" },
    ]);
    expect(ids(await queue.claim({ count: 10, now: NOW + 6 }))).toContain("globex-file-2");
    // The same by its FAILED retention ending: acme's second file fails, holds, and is trimmed.
    await queue.enqueue(
      [
        { id: "later-1", type: "import", group: "initech" },
        { id: "later-2", type: "import", group: "initech" },
      ],
      {
        now: NOW + 7,
      },
    );
    const [l1] = (await queue.claim({ count: 10, now: NOW + 8 })).filter((task) => task.id === "later-1");
    await queue.settle([{ ...l1, outcome: "fail", error: "no" }], { now: NOW + 9 });
    expect(await queue.trim({ now: NOW + 10, failedRetentionMs: 0 })).toMatchObject({ failed: 3 });
    expect(ids(await queue.claim({ count: 10, now: NOW + 11 }))).toEqual(["later-2"]);
    await assertConsistent(redis, queue);
    await expectClean(queue, NOW + 12);
  });
});
