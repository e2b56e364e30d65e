import type { Redis } from "ioredis";
import { expect } from "vitest";
import type { Queue } from "../../shared/queue.js";

/** A task as storage format v1 keeps it (docs/storage.md), read straight from Redis. */
export interface RawTask {
  state: string;
  type: string;
  group: string;
  rank: number;
  attempts: number;
  /** The lease generation (the second part of a token). */
  claims: number;
  maxAttempts: number;
  at: number;
  flags: string;
  error: string;
  /** "" once DONE (the body is dropped at ack). */
  payload: string;
}

const STATE = /^([RSLDFW])\|(\d+)\|(\d+)\|(\d+)\|(\d+)\|([a-z]*)\|(\d+)\|([^|]*)\|([^|]*)\|([^|]*)\|/;
const BODY = /^1\|(\d+)\|([^|]+)\|([^|]*)\|/;

/** Parses the fields of one task (its state and body) as lua/_lib.lua writes them. */
export function parseTask(stateText: string | undefined, bodyText: string | undefined, readyRank?: number): RawTask {
  const body = bodyText === undefined ? undefined : BODY.exec(bodyText);
  if (bodyText !== undefined && !body) throw new Error(`malformed body ${JSON.stringify(bodyText.slice(0, 80))}`);
  const payload = body && bodyText ? bodyText.slice(body[0].length) : "";
  if (stateText === undefined) {
    if (!body) throw new Error("a task with neither state nor body");
    return {
      state: "R",
      type: body[2],
      group: body[3],
      rank: readyRank ?? Number.NaN,
      attempts: 0,
      claims: 0,
      maxAttempts: 0,
      at: Number(body[1]),
      flags: "",
      error: "",
      payload,
    };
  }
  const match = STATE.exec(stateText);
  if (!match) throw new Error(`malformed state ${JSON.stringify(stateText.slice(0, 80))}`);
  return {
    state: match[1],
    attempts: Number(match[2]),
    claims: Number(match[3]),
    maxAttempts: Number(match[4]),
    at: Number(match[5]),
    flags: match[6],
    rank: Number(match[7]),
    type: match[8],
    group: match[9],
    error: stateText.slice(match[0].length),
    payload,
  };
}

const ZSET_BY_STATE: Record<string, "ready" | "scheduled" | "leased" | "done" | "failed" | "grouped"> = {
  R: "ready",
  W: "grouped",
  S: "scheduled",
  L: "leased",
  D: "done",
  F: "failed",
};

/** Every task of the queue as stored, by id (quarantined ones left out). */
export async function readTasks(redis: Redis, queue: Queue): Promise<Map<string, RawTask>> {
  const fields = await redis.hgetall(queue.keys.task);
  const ready = new Map<string, number>();
  const page = await redis.zrange(queue.keys.ready, 0, -1, "WITHSCORES");
  for (let i = 0; i < page.length; i += 2) ready.set(page[i], Number(page[i + 1]));
  const ids = new Set<string>();
  for (const field of Object.keys(fields)) if (!field.includes(":")) ids.add(field);
  for (const field of Object.keys(fields)) if (field.endsWith(":s")) ids.add(field.slice(0, -2));
  const tasks = new Map<string, RawTask>();
  for (const id of ids) {
    if (fields[`${id}:x`] !== undefined) continue;
    tasks.set(id, parseTask(fields[`${id}:s`], fields[id], ready.get(id)));
  }
  return tasks;
}

/**
 * Asserts DESIGN.md §7 invariants 1, 3 and 5 on the raw keys: each known id is in exactly the
 * sorted set of its state, every member of a state set has a record, payloads exist except for
 * DONE, and attempts never exceed the recorded maximum. Returns the records by id.
 */
export async function assertConsistent(redis: Redis, queue: Queue): Promise<Map<string, RawTask>> {
  const tasks = await readTasks(redis, queue);
  const members = new Map<string, string[]>();
  for (const zset of Object.values(ZSET_BY_STATE)) {
    for (const member of await redis.zrange(queue.keys[zset], 0, -1)) {
      const id = zset === "grouped" ? member.split("\0")[2] : member;
      members.set(id, [...(members.get(id) ?? []), zset]);
    }
  }
  for (const [id, task] of tasks) {
    expect(members.get(id), `id ${id} in state ${task.state}`).toEqual([ZSET_BY_STATE[task.state]]);
    if (task.state === "D") expect(task.payload, `payload of DONE ${id}`).toBe("");
    else expect(task.payload.length, `payload of ${id}`).toBeGreaterThan(0);
    if (task.maxAttempts > 0) expect(task.attempts).toBeLessThanOrEqual(task.maxAttempts);
    if (task.state === "R" && task.group === "")
      expect(task.rank, `rank of READY ${id}`).toBe(
        (await redis.zscore(queue.keys.ready, id)) === null
          ? Number.NaN
          : Number(await redis.zscore(queue.keys.ready, id)),
      );
  }
  for (const id of members.keys()) expect(tasks.has(id), `record of ${id}`).toBe(true);
  await assertGroups(redis, queue, tasks);
  return tasks;
}

/**
 * The groups' invariants (docs/groups.md): a group's record counts its leased tasks and held
 * retries (never more than its concurrency), its READY and its parked tasks; its head is one of its
 * READY tasks; a group with parked tasks and no head is full, or waits for its rate window.
 */
export async function assertGroups(redis: Redis, queue: Queue, tasks: Map<string, RawTask>): Promise<void> {
  const config = await redis.hgetall(queue.keys.config);
  const records = await redis.hgetall(queue.keys.groups);
  const waiting = new Set(await redis.zrange(queue.keys.groupwait, 0, -1));
  const lanes = new Map<string, { ready: string[]; active: number; parked: number; out: number }>();
  const lane = (task: RawTask) => {
    const name = `${task.type}|${task.group}`;
    let entry = lanes.get(name);
    if (!entry) {
      entry = { ready: [], active: 0, parked: 0, out: 0 };
      lanes.set(name, entry);
    }
    return entry;
  };
  for (const [id, task] of tasks) {
    if (task.group === "") continue;
    if (task.state === "R") lane(task).ready.push(id);
    if (task.state === "R" && task.flags.includes("u")) lane(task).out += 1;
    if (task.state === "L" || (task.state === "S" && task.flags === "h")) lane(task).active += 1;
    if (task.state === "W") lane(task).parked += 1;
  }
  for (const [name, entry] of lanes) {
    const [ready = "0", , holderText = "", parked = "0", heads = "0"] = (records[name] ?? "").split("|");
    const holders = holderText === "" ? [] : holderText.split(",");
    // The record's holders may name tasks acked since (their acks write no record); those that
    // still hold a slot are exactly the group's leased tasks and held retries.
    const holding = holders.filter((id) => {
      const task = tasks.get(id);
      return (
        task !== undefined &&
        `${task.type}|${task.group}` === name &&
        (task.state === "L" || (task.state === "S" && task.flags.includes("h")))
      );
    });
    const type = name.slice(0, name.indexOf("|"));
    const concurrency = Number((config[`g:${type}`] ?? config.gd ?? "0").split(",")[0]);
    if (concurrency > 0) expect(holding.length, `leased and held tasks of group ${name}`).toBe(entry.active);
    expect(Number(parked), `parked tasks of group ${name}`).toBe(entry.parked);
    expect(Number(ready), `READY tasks of group ${name}`).toBe(entry.ready.length + entry.parked);
    expect(Number(heads), `tasks let out of group ${name}`).toBe(entry.out);
    if (concurrency > 0) expect(entry.active, `concurrency of group ${name}`).toBeLessThanOrEqual(concurrency);
    if (entry.parked > 0 && entry.out === 0) {
      expect(
        (concurrency > 0 && entry.active >= concurrency) || waiting.has(name),
        `group ${name} has ${entry.parked} parked tasks and none let out, yet it is not full nor waiting for its rate`,
      ).toBe(true);
    }
  }
  for (const [name, text] of Object.entries(records)) {
    if (name.startsWith("@") || lanes.has(name)) continue;
    const [ready, , , parked = "0", heads = "0"] = text.split("|");
    expect({ ready, parked, heads }, `record of group ${name}, which has no task`).toEqual({
      ready: "0",
      parked: "0",
      heads: "0",
    });
  }
}
