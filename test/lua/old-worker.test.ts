// A worker of leaseq 0.1.0 (format v0) still running on a queue of this release: the guard every new
// queue is stamped with (docs/storage.md "Older formats") stops its claim before it pops anything.
import { describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { luaScript } from "../../shared/store.js";
import { expectClean } from "../helpers/check.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";
import { V0_SCRIPTS } from "./fixtures/v0-scripts.js";

const NOW = 1_800_000_000_000;
const v0Claim = luaScript("claim", V0_SCRIPTS.claim);

describe.each(adapters)("a worker of format v0, over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);

  it("pops nothing a producer of this release enqueued", async () => {
    const store = await open();
    const name = uniqueQueueName("v0w");
    const queue = new Queue(store, { name });
    const k = queue.keys;
    // 0.1.0 kept an ordered queue's hold in a key of its own.
    const hold = `leaseq:{${name}}:hold`;
    await queue.enqueue(
      [
        { id: "new-1", type: "job" },
        { id: "new-2", type: "job", priority: -1 },
        { id: "new-3", type: "job", delayMs: 1_000 },
      ],
      { now: NOW },
    );
    const answered = await store
      .evalScript(
        v0Claim,
        [k.task, k.ready, k.scheduled, k.leased, hold],
        [String(NOW + 500), "10", "0", "10", "5000", "3"],
      )
      .then(
        (reply) => reply,
        (error: unknown) => error,
      );
    // Whatever the old claim answered (an error), it took nothing: every task is still waiting, in order.
    expect(Array.isArray(answered) ? answered : []).toEqual([]);
    expect(await queue.stats({ now: NOW + 2_000 })).toMatchObject({ ready: 2, scheduled: 1, corrupt: 0 });
    const claimed = await queue.claim({ count: 10, now: NOW + 2_000 });
    expect(claimed.map((task) => task.id)).toEqual(["new-2", "new-1", "new-3"]);
    await expectClean(queue, NOW + 2_001);
    await redis.del(hold);
  });
});
