// Order per group from the producer's send, over the local stack: 5 ordered groups × 100 tasks,
// one message each, sent by 4 concurrent producers in a known order per group, once with a FIFO
// task queue and once with a standard one. The figure is how many ran before a task its producer
// sent earlier (docs/groups.md "Order from the producer").
import type { SQSClient } from "@aws-sdk/client-sqs";
import { startStack } from "../dev/stack.js";
import { createProducer } from "../functions/producer.js";
import { defineTasks, type Task } from "../functions/tasks.js";
import { functionSqsClient } from "../functions/wake.js";
import { Queue } from "../shared/queue.js";
import { TcpStore } from "../shared/stores/tcp.js";

export interface OrderResult {
  tasks: number;
  groups: number;
  producers: number;
  /** Tasks that ran before one of their group sent earlier, per task queue kind. */
  outOfOrder: { fifo: number; standard: number };
}

export const ORDER_WORKLOAD = { groups: 5, perGroup: 100, producers: 4 } as const;

/** Tasks of each group that ran before a task of that group sent earlier (`seq` is the send order). */
export function outOfOrder(runs: ReadonlyArray<{ group: string; seq: number }>): number {
  const highest = new Map<string, number>();
  let late = 0;
  for (const { group, seq } of runs) {
    const seen = highest.get(group) ?? -1;
    if (seq < seen) late++;
    else highest.set(group, seq);
  }
  return late;
}

/**
 * Sends the workload through the task queue of a running stack: group g by producer g mod 4, each
 * producer one task per send, in its groups' order (what an API handler does).
 */
export async function sendOrdered(queueUrl: string, client: SQSClient): Promise<void> {
  const { groups, perGroup, producers } = ORDER_WORKLOAD;
  const names = Array.from({ length: groups }, (_, g) => `c${g + 1}`);
  await Promise.all(
    Array.from({ length: producers }, async (_, p) => {
      const producer = createProducer({ queueUrl, client });
      const mine = names.filter((_, g) => g % producers === p);
      for (let seq = 0; seq < perGroup; seq++) {
        for (const group of mine) await producer.send([{ type: "hook", group, payload: { seq } }]);
      }
    }),
  );
}

/** The task declaration the workload runs: one ordered type that records each run. */
export function orderedHooks(runs: Array<{ group: string; seq: number }>) {
  return defineTasks({
    types: {
      hook: {
        leaseMs: 10_000,
        group: { ordered: true },
        handler: (task: Task<{ seq: number }>) => void runs.push({ group: String(task.group), seq: task.payload.seq }),
      },
    },
  });
}

/**
 * The local stack the order runs use (and test/dev/intake-stack.test.ts): four workers, a minute's
 * reclaimer period and worker timeout, silent.
 */
export function orderStack(queue: string, tasks: Parameters<typeof startStack>[0]["tasks"], fifo: boolean) {
  return startStack({
    queue,
    tasks,
    reclaimIntervalMs: 60_000,
    workerTimeoutMs: 60_000,
    visibilityTimeoutMs: 30_000,
    maxReceiveCount: 5,
    concurrency: 4,
    fifo,
    logLevel: "SILENT",
  });
}

async function runOnce(fifo: boolean, redisUrl: string): Promise<number> {
  const runs: Array<{ group: string; seq: number }> = [];
  const name = `order-${fifo ? "fifo" : "standard"}-${process.pid}`;
  const stack = await orderStack(name, orderedHooks(runs), fifo);
  const client = functionSqsClient(stack.sqs.endpoint);
  const store = TcpStore.fromUrl(redisUrl);
  try {
    stack.run();
    await sendOrdered(stack.sqs.queueUrl, client);
    const total = ORDER_WORKLOAD.groups * ORDER_WORKLOAD.perGroup;
    const deadline = Date.now() + 120_000;
    while (runs.length < total) {
      if (Date.now() > deadline) throw new Error(`order: ${runs.length} of ${total} ran within 120 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return outOfOrder(runs);
  } finally {
    await stack.stopWork();
    await new Queue(store, { name }).admin.drop({ confirm: name }).catch(() => 0);
    await store.close();
    client.destroy();
    await stack.close();
  }
}

export async function runOrder(redisUrl: string, log: (line: string) => void): Promise<OrderResult> {
  const previousRedis = process.env.REDIS_URL;
  process.env.REDIS_URL = redisUrl;
  try {
    log("  5 ordered groups × 100 tasks, one per send, 4 concurrent producers: FIFO task queue, then standard");
    const fifo = await runOnce(true, redisUrl);
    const standard = await runOnce(false, redisUrl);
    const { groups, perGroup, producers } = ORDER_WORKLOAD;
    return { tasks: groups * perGroup, groups, producers, outOfOrder: { fifo, standard } };
  } finally {
    if (previousRedis === undefined) delete process.env.REDIS_URL;
    else process.env.REDIS_URL = previousRedis;
  }
}
