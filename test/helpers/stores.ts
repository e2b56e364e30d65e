import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, expect, inject } from "vitest";
import { Queue, type QueueOptions } from "../../shared/queue.js";
import type { QueueSettings } from "../../shared/settings.js";
import { argsForRetry, type Store } from "../../shared/store.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { UpstashStore } from "../../shared/stores/upstash.js";
import type { ClaimedTask } from "../../shared/types.js";
import { deleteMatching } from "./redis-keys.js";

export const redisUrl = (): string => inject("redisUrl");

const created = new Set<string>();

/**
 * A queue name no other test uses, under this run's prefix. The test file's queues are deleted
 * when it ends (test/helpers/cleanup.ts), and the global teardown deletes whatever a crashed file
 * left under the prefix: `npm test` leaves no key behind.
 */
export function uniqueQueueName(prefix = "t"): string {
  const name = `${inject("runPrefix")}-${prefix}-${randomBytes(5).toString("hex")}`;
  created.add(name);
  return name;
}

/** The names uniqueQueueName gave out in this file that are not deleted yet. */
export function takeCreatedQueues(): string[] {
  const names = [...created];
  created.clear();
  return names;
}

/** Deletes every key of each named queue (all of them share the `{queue}` hash tag, or a partition's). */
export async function deleteQueues(names: readonly string[], url: string = redisUrl()): Promise<number> {
  if (names.length === 0) return 0;
  const redis = new Redis(url);
  try {
    let deleted = 0;
    for (const name of names) {
      deleted += await deleteMatching(redis, `leaseq:{${name}}:*`);
      // Its partitions after the first, if it had some (shared/partitions.ts partitionTag).
      deleted += await deleteMatching(redis, `leaseq:{${name}#*}:*`);
    }
    return deleted;
  } finally {
    redis.disconnect();
  }
}

export interface Adapter {
  name: string;
  open(): Promise<Store>;
}

/** The adapters every queue test runs over: TCP, and @upstash/redis through the local endpoint. */
export const adapters: Adapter[] = [
  { name: "tcp", open: async () => TcpStore.fromUrl(redisUrl()) },
  {
    name: "upstash",
    open: async () => new UpstashStore({ url: inject("upstashUrl"), token: inject("upstashToken") }),
  },
];

/** A plain client for assertions on raw keys. */
export function rawClient(): Redis {
  return new Redis(redisUrl());
}

/** Queue options with its settings flat, as tests give them: `{ name, ordered: true, ... }`. */
export type TestQueueOptions = Partial<QueueOptions> & QueueSettings;

/**
 * A Queue whose settings are written into its config in Redis (what a worker's cold start does),
 * so the scripts follow them. Settings not given keep their defaults, but for the clock: tests
 * drive time (NOW is weeks ahead of the store's clock), so the queue trusts its callers' clocks
 * unless a test says `trustCallerClock: false` (test/lua/clock.test.ts).
 */
export async function configuredQueue(store: Store, options: TestQueueOptions & { name: string }): Promise<Queue> {
  const { name, keyPrefix, settings, ...flat } = options;
  const queue = new Queue(store, { name, keyPrefix, settings: { trustCallerClock: true, ...settings, ...flat } });
  await queue.configure();
  return queue;
}

/** Opens a store and a fresh, configured queue; `close` closes the store. */
export async function openQueue(adapter: Adapter, options: TestQueueOptions = {}) {
  const store = await adapter.open();
  const queue = await configuredQueue(store, { name: uniqueQueueName(), ...options });
  return { store, queue, close: () => store.close() };
}

/** Every key of a queue with its type and content, to assert "nothing changed". */
export async function snapshot(redis: Redis, queue: Queue): Promise<Record<string, unknown>> {
  const result: Record<string, unknown> = {};
  for (const [name, key] of Object.entries(queue.keys)) {
    const type = await redis.type(key);
    if (type === "zset") result[name] = await redis.zrange(key, 0, -1, "WITHSCORES");
    else if (type === "hash") result[name] = await redis.hgetall(key);
    else if (type === "string") result[name] = await redis.get(key);
    else result[name] = type;
  }
  return result;
}

/**
 * For one describe block: `open()` opens a store on `adapter`, `redis` is a raw client for
 * assertions; both are closed after the block.
 */
export function storeFixture(adapter: Adapter) {
  const redis = rawClient();
  const stores: Store[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close();
    redis.disconnect();
  });
  const open = async (): Promise<Store> => {
    const store = await adapter.open();
    stores.push(store);
    return store;
  };
  return { redis, open };
}

/**
 * For one describe block: `fresh(options)` opens a queue on a store of its own (over `defaults`),
 * `open()` a store, `redis` is a raw client for assertions; all are closed after the block.
 */
export function queueFixture(adapter: Adapter, defaults: TestQueueOptions = {}) {
  const { redis, open } = storeFixture(adapter);
  const fresh = async (options: TestQueueOptions = {}): Promise<Queue> =>
    configuredQueue(await open(), { name: uniqueQueueName(), ...defaults, ...options });
  return { redis, open, fresh };
}

/** The ids of claimed tasks, in the order claimed. */
export const ids = (tasks: ClaimedTask[]): string[] => tasks.map((task) => task.id);

/** Acks `tasks` at `now` in one settle call; resolves to its per-task results. */
export const ack = (queue: Queue, tasks: ClaimedTask[], now: number) =>
  queue.settle(
    tasks.map((task) => ({ id: task.id, token: task.token, outcome: "ack" as const })),
    { now },
  );

/** A task for failTasks: its id (type "job", the call's error), or its id with a type and error of its own. */
export type TaskToFail = string | { id: string; type?: string; error?: string };

/**
 * Enqueues `tasks` at `now` (default: the clock), claims exactly them, and fails each with its
 * error (default "boom"): they end FAILED. The queue must hold nothing else READY.
 */
export async function failTasks(
  queue: Queue,
  tasks: TaskToFail[],
  options: { error?: string; payload?: unknown; now?: number } = {},
): Promise<void> {
  const now = options.now ?? Date.now();
  const items = tasks.map((task) => (typeof task === "string" ? { id: task } : task));
  await queue.enqueue(
    items.map(({ id, type }) => ({ id, type: type ?? "job", payload: options.payload })),
    { now },
  );
  const claimed = await queue.claim({ count: items.length, now });
  expect(claimed.map((task) => task.id).sort()).toEqual(items.map((item) => item.id).sort());
  const errorOf = new Map(items.map((item) => [item.id, item.error ?? options.error ?? "boom"]));
  await queue.settle(
    claimed.map(({ id, token }) => ({ id, token, outcome: "fail" as const, error: errorOf.get(id) ?? "" })),
    { now },
  );
}

/** A store that runs each call, drops its reply, and sends it again as a store's retry does. */
export function lossyStore(inner: Store): Store {
  return {
    async evalScript(script, keys, args) {
      await inner.evalScript(script, keys, args);
      return inner.evalScript(script, keys, argsForRetry(script, args, 1));
    },
    close: () => inner.close(),
  };
}
