// Shared by the partitioned queue's tests on one redis-server (test/shared/partitioned-queue.test.ts)
// and on the local Redis Cluster (test/chaos/cluster.test.ts).
import { expect } from "vitest";
import type { PartitionedQueue } from "../../shared/partitioned-queue.js";
import type { ClaimedTask } from "../../shared/types.js";

/**
 * One claim of up to `count` at `now`: the library's choice of partition, then, when that comes back
 * empty, each partition named in turn (two partitions drawn empty while another is not).
 */
export async function claimAny(queue: PartitionedQueue, count: number, now: number): Promise<ClaimedTask[]> {
  let claimed = await queue.claim({ count, now });
  for (let k = 0; claimed.length === 0 && k < queue.partitions.length; k++) {
    claimed = await queue.claim({ count, now, partition: k });
  }
  return claimed;
}

/**
 * Two producers (5 tasks a call, `rounds` calls each) and two consumers (claims of 4, each acked)
 * run at once on `before`; halfway every process turns to `after` (a redeploy with another partition
 * count reaching the processes), tasks leased before acked after. Resolves to the ids sent and how
 * many times each ran.
 */
export async function turnUnderLoad(
  before: PartitionedQueue,
  after: PartitionedQueue,
  options: { rounds: number; now: number },
): Promise<{ sent: string[]; ran: Map<string, number> }> {
  const { rounds, now } = options;
  let turned = false;
  const current = () => (turned ? after : before);
  const sent: string[] = [];
  const ran = new Map<string, number>();
  let producing = 2;
  const producer = async (who: string) => {
    for (let round = 0; round < rounds; round++) {
      if (round === Math.floor(rounds / 2)) turned = true;
      const batch = Array.from({ length: 5 }, (_, i) => ({ id: `${who}-${round}-${i}`, type: "t", payload: "{}" }));
      expect((await current().enqueue(batch, { now })).every((result) => result.status === "ok")).toBe(true);
      sent.push(...batch.map((task) => task.id));
    }
    producing--;
  };
  const consumer = async () => {
    for (let idle = 0; idle < 3; ) {
      const claimed = await claimAny(current(), 4, now);
      if (claimed.length === 0) {
        if (producing === 0) idle++;
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      for (const task of claimed) ran.set(task.id, (ran.get(task.id) ?? 0) + 1);
      // Acked through whichever queue the process holds by then: the token names its partition.
      expect((await current().ack(claimed, { now })).every((result) => result.status === "ok")).toBe(true);
    }
  };
  await Promise.all([producer("a"), producer("b"), consumer(), consumer()]);
  return { sent, ran };
}
