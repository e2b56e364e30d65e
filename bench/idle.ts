import { Worker } from "bullmq";
import { Queue } from "../shared/queue.js";
import { TcpStore } from "../shared/stores/tcp.js";
import { type BenchRedis, commandCalls, commandDelta, countCommands, flush, startBenchRedis } from "./redis.js";

export interface IdleResult {
  commandsPerMinute: number;
  /** How it was measured, in words, for the table and the JSON. */
  method: string;
  byCommand: Record<string, number>;
}

/**
 * leaseq when idle: nothing polls; the reclaimer runs one `tick` per minute (EventBridge
 * rate(1 minute)) and starts the worker (a drain invocation) only when work is waiting. So: the
 * commands of one tick on an empty queue, once per minute.
 */
export async function leaseqIdle(redis: BenchRedis): Promise<IdleResult> {
  await flush(redis);
  const store = TcpStore.fromUrl(redis.url);
  try {
    const queue = new Queue(store, { name: `idle-${process.pid}` });
    await queue.tick({ now: Date.now() }); // loads the script: not part of the steady state
    const { total, byCommand } = await countCommands(redis.admin, () => queue.tick({ now: Date.now() }));
    return { commandsPerMinute: total, method: "1 reclaimer tick per minute on an empty queue", byCommand };
  } finally {
    await store.close();
  }
}

/**
 * BullMQ when idle: one Worker with its defaults on an empty queue, on a redis-server of its own
 * (so it can run alongside the other measurements), counted over `windowMs` after a settling
 * period, scaled to a minute. Resolves when the window has passed.
 */
export async function bullmqIdle(windowMs: number, settleMs = 3_000): Promise<IdleResult> {
  const redis = await startBenchRedis();
  const connection = { host: redis.host, port: redis.port, maxRetriesPerRequest: null };
  const worker = new Worker(`idle-${process.pid}`, async () => undefined, { connection });
  try {
    await worker.waitUntilReady();
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    const before = await commandCalls(redis.admin);
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const after = await commandCalls(redis.admin);
    const { total, byCommand } = commandDelta(before, after, 1);
    return {
      commandsPerMinute: (total * 60_000) / windowMs,
      method: `1 idle Worker (defaults), ${Math.round(windowMs / 1000)} s window scaled to 1 min`,
      byCommand,
    };
  } finally {
    await worker.close();
    await redis.stop();
  }
}
