// `leaseq delete --state <s>` with filters finds tasks, then deletes them: a task that moved on in
// between (another operator requeued it) must not be deleted. The race is made deterministic by a
// queue whose find lets that other operator act right after it answers.
import { afterAll, describe, expect, it } from "vitest";
import { deleteByFilter } from "../../cli/filters.js";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { failTasks, redisUrl, uniqueQueueName } from "../helpers/stores.js";

const store = TcpStore.fromUrl(redisUrl());
afterAll(() => store.close());

/** A queue whose every find is followed, before its answer is used, by `meanwhile`. */
class RacedQueue extends Queue {
  meanwhile: () => Promise<unknown> = async () => undefined;
  constructor(...args: ConstructorParameters<typeof Queue>) {
    super(...args);
    const find = this.admin.find.bind(this.admin);
    this.admin.find = async (...findArgs) => {
      const page = await find(...findArgs);
      await this.meanwhile();
      return page;
    };
  }
}

describe("leaseq delete --state with filters", () => {
  it("leaves a task requeued between the find and the delete READY, and reports it", async () => {
    const name = uniqueQueueName("delrace");
    const queue = new RacedQueue(store, { name });
    try {
      await failTasks(queue, ["f1", "f2", "f3"], { error: "SMTP 550" });
      queue.meanwhile = async () => {
        await queue.admin.requeue(["f2"], { now: Date.now() });
        queue.meanwhile = async () => undefined;
      };
      const outcome = await deleteByFilter(queue, "failed", { error: "SMTP" });
      expect(outcome.matched.sort()).toEqual(["f1", "f2", "f3"]);
      expect(outcome.changed.sort()).toEqual(["f1", "f3"]);
      expect(outcome.refused).toEqual([{ id: "f2", status: "not_in_state" }]);
      expect((await queue.admin.inspect("f2"))?.state).toBe("ready");
      expect(await queue.admin.inspect("f1")).toBeUndefined();
    } finally {
      await queue.admin.drop({ confirm: name });
    }
  });
});
