import type { Redis } from "ioredis";
import { expect } from "vitest";
import type { Queue } from "../../shared/queue.js";

export interface RawTask {
  state: string;
  type: string;
  rank: number;
  attempts: number;
  claims: number;
  maxAttempts: number;
  at: number;
  error: string;
  payload: string;
}

/** Parses a task record as lua/_lib.lua writes it. */
export function parseRecord(record: string): RawTask {
  const match = /^([RSLDF])\|([^|]*)\|(\d+)\|(\d+)\|(\d+)\|(\d+)\|(-?\d+)\|(\d+)\|/.exec(record);
  if (!match) throw new Error(`malformed record ${JSON.stringify(record.slice(0, 80))}`);
  const body = Buffer.from(record.slice(match[0].length));
  const errorBytes = Number(match[8]);
  return {
    state: match[1],
    type: match[2],
    rank: Number(match[3]),
    attempts: Number(match[4]),
    claims: Number(match[5]),
    maxAttempts: Number(match[6]),
    at: Number(match[7]),
    error: body.subarray(0, errorBytes).toString(),
    payload: body.subarray(errorBytes).toString(),
  };
}

const ZSET_BY_STATE: Record<string, "ready" | "scheduled" | "leased" | "done" | "failed"> = {
  R: "ready",
  S: "scheduled",
  L: "leased",
  D: "done",
  F: "failed",
};

/**
 * Asserts DESIGN.md §7 invariants 1, 3 and 5 on the raw keys: each known id is in exactly the
 * sorted set of its state, every member of a state set has a record, payloads exist except for
 * DONE, and attempts never exceed the recorded maximum. Returns the records by id.
 */
export async function assertConsistent(redis: Redis, queue: Queue): Promise<Map<string, RawTask>> {
  const records = await redis.hgetall(queue.keys.task);
  const tasks = new Map(Object.entries(records).map(([id, record]) => [id, parseRecord(record)]));
  const members = new Map<string, string[]>();
  for (const zset of Object.values(ZSET_BY_STATE)) {
    for (const id of await redis.zrange(queue.keys[zset], 0, -1)) {
      members.set(id, [...(members.get(id) ?? []), zset]);
    }
  }
  for (const [id, task] of tasks) {
    expect(members.get(id), `id ${id} in state ${task.state}`).toEqual([ZSET_BY_STATE[task.state]]);
    if (task.state === "D") expect(task.payload, `payload of DONE ${id}`).toBe("");
    else expect(task.payload.length, `payload of ${id}`).toBeGreaterThan(0);
    if (task.maxAttempts > 0) expect(task.attempts).toBeLessThanOrEqual(task.maxAttempts);
  }
  for (const id of members.keys()) expect(tasks.has(id), `record of ${id}`).toBe(true);
  return tasks;
}
