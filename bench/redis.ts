import { Redis } from "ioredis";
import { type StartedRedis, startRedisServer } from "../dev/redis-server.js";

/**
 * A redis-server of the benchmark's own, on a free loopback port: nobody else's commands land in
 * its INFO commandstats or used_memory, and FLUSHALL between rounds touches only it.
 */
export interface BenchRedis {
  url: string;
  host: string;
  port: number;
  /** The measuring connection: INFO, FLUSHALL. Never used by a system under test. */
  admin: Redis;
  stop(): Promise<void>;
}

export async function startBenchRedis(): Promise<BenchRedis> {
  const server: StartedRedis = await startRedisServer(["--maxmemory", "0", "--lazyfree-lazy-user-flush", "no"]);
  const admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  await admin.ping();
  return {
    url: server.url,
    host: "127.0.0.1",
    port: server.port,
    admin,
    stop: async () => {
      admin.disconnect();
      await server.stop();
    },
  };
}

/** Empties the benchmark's own server (synchronously, so freed memory is gone before we measure). */
export async function flush(redis: BenchRedis): Promise<void> {
  await redis.admin.flushall("SYNC");
}

/** Calls per command from INFO commandstats, commands run inside scripts included. */
export async function commandCalls(admin: Redis): Promise<Map<string, number>> {
  const text = await admin.info("commandstats");
  const calls = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (match) calls.set(match[1], Number(match[2]));
  }
  return calls;
}

export interface CommandDelta {
  total: number;
  byCommand: Record<string, number>;
}

/**
 * Counts the commands a piece of work sends: INFO commandstats before and after. The INFO that
 * took the first snapshot is counted in the second one, so it is taken off.
 */
export async function countCommands<T>(admin: Redis, work: () => Promise<T>): Promise<{ result: T } & CommandDelta> {
  const before = await commandCalls(admin);
  const result = await work();
  const after = await commandCalls(admin);
  return { result, ...commandDelta(before, after, 1) };
}

/** after - before per command; `ownInfoCalls` INFO calls made by the measurement are left out. */
export function commandDelta(before: Map<string, number>, after: Map<string, number>, ownInfoCalls = 0): CommandDelta {
  const byCommand: Record<string, number> = {};
  let total = 0;
  for (const [command, calls] of after) {
    let delta = calls - (before.get(command) ?? 0);
    if (command === "info") delta -= ownInfoCalls;
    if (delta > 0) {
      byCommand[command] = delta;
      total += delta;
    }
  }
  return { total, byCommand };
}

/** `used_memory` in bytes: what the allocator holds for data, buffers and scripts. */
export async function usedMemory(admin: Redis): Promise<number> {
  const text = await admin.info("memory");
  const match = /^used_memory:(\d+)/m.exec(text);
  if (!match) throw new Error("INFO memory has no used_memory line");
  return Number(match[1]);
}

export async function redisVersion(admin: Redis): Promise<string> {
  const text = await admin.info("server");
  return /^redis_version:(\S+)/m.exec(text)?.[1] ?? "unknown";
}

/** CPU seconds the redis-server process has used (user + system, main and background threads). */
export async function redisCpuSeconds(admin: Redis): Promise<number> {
  const text = await admin.info("cpu");
  const user = /^used_cpu_user:([\d.]+)/m.exec(text);
  const system = /^used_cpu_sys:([\d.]+)/m.exec(text);
  return Number(user?.[1] ?? 0) + Number(system?.[1] ?? 0);
}
