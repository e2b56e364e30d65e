import type { Redis } from "ioredis";
import { expect } from "vitest";
import { SINGLETON_GROUP_PREFIX } from "../../shared/config.js";
import { parseGroupPolicy, parseLane } from "../../shared/protocol/groups.js";
import { isMarker, parseBodyFields, parseRecord, STATE_FIELDS } from "../../shared/protocol/record.js";
import type { Queue } from "../../shared/queue.js";

/** A task as storage format v2 keeps it (docs/storage.md), read straight from Redis. */
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
  /** Leases that ran out while held (field `<id>:t`), 0 when none. */
  stalls: number;
}

/** Parses the fields of one task (its state and body) by their declaration (shared/protocol/record.ts). */
export function parseTask(
  stateText: string | undefined,
  bodyText: string | undefined,
  readyRank?: number,
  stallsText?: string,
): RawTask {
  const stalls = Number(stallsText ?? 0);
  const body = bodyText === undefined ? undefined : parseBodyFields(bodyText);
  if (bodyText !== undefined && !body) throw new Error(`malformed body ${JSON.stringify(bodyText.slice(0, 80))}`);
  const payload = body?.payload ?? "";
  if (stateText === undefined) {
    if (!body) throw new Error("a task with neither state nor body");
    return {
      state: "R",
      type: body.type,
      group: body.group,
      rank: readyRank ?? Number.NaN,
      attempts: 0,
      claims: 0,
      maxAttempts: 0,
      at: Number(body.enqueued),
      flags: "",
      error: "",
      payload,
      stalls,
    };
  }
  const state = parseRecord(STATE_FIELDS, stateText);
  if (!state) throw new Error(`malformed state ${JSON.stringify(stateText.slice(0, 80))}`);
  return {
    state: state.letter,
    attempts: Number(state.attempts),
    claims: Number(state.gen),
    maxAttempts: Number(state.max),
    at: Number(state.at),
    flags: state.flags,
    rank: Number(state.rank),
    type: state.type,
    group: state.group,
    error: state.error,
    payload,
    stalls,
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

/**
 * The fields of the task hash that belong to tasks (bodies, states, quarantine reasons): not the
 * queue's own, which start with "#" (the lease counter, the guard against workers of format v0),
 * nor flow control's, which start with "!" (lua/lib/flow.lua).
 */
export async function taskFields(redis: Redis, queue: Queue): Promise<string[]> {
  return (await redis.hkeys(queue.keys.task)).filter((field) => !field.startsWith("#") && !field.startsWith("!"));
}

/** The flow-control fields of the task hash (lua/lib/flow.lua), by name: `!d:<key>`, `!b:<key>`, `!t:<key>`. */
export async function flowFields(redis: Redis, queue: Queue): Promise<Record<string, string>> {
  const fields = await redis.hgetall(queue.keys.task);
  return Object.fromEntries(Object.entries(fields).filter(([field]) => field.startsWith("!")));
}

/** Every task of the queue as stored, by id (quarantined ones left out). */
export async function readTasks(
  redis: Redis,
  queue: Queue,
  unreadable: ReadonlySet<string> = new Set(),
): Promise<Map<string, RawTask>> {
  const fields = await redis.hgetall(queue.keys.task);
  const ready = new Map<string, number>();
  const page = await redis.zrange(queue.keys.ready, 0, -1, "WITHSCORES");
  for (let i = 0; i < page.length; i += 2) ready.set(page[i], Number(page[i + 1]));
  const ids = new Set<string>();
  // Fields starting with "#" are the queue's own (the lease counter, the guard against format v0),
  // those starting with "!" flow control's (lua/lib/flow.lua); a task's own fields end in ":" and a
  // lower-case letter, which no id does (an id may hold ":").
  const own = (field: string) => field.startsWith("#") || field.startsWith("!");
  for (const field of Object.keys(fields)) if (!/:[a-z]$/.test(field) && !own(field)) ids.add(field);
  for (const field of Object.keys(fields)) if (field.endsWith(":s") && !own(field)) ids.add(field.slice(0, -2));
  const tasks = new Map<string, RawTask>();
  for (const id of ids) {
    if (fields[`${id}:x`] !== undefined) continue;
    if (unreadable.has(id)) continue; // made unreadable on purpose by the test, not quarantined yet
    tasks.set(id, parseTask(fields[`${id}:s`], fields[id], ready.get(id), fields[`${id}:t`]));
  }
  return tasks;
}

/**
 * Asserts DESIGN.md §7 invariants 1, 3 and 5 on the raw keys: each known id is in exactly the
 * sorted set of its state, every member of a state set has a record, payloads exist except for
 * DONE, and attempts never exceed the recorded maximum. Returns the records by id.
 */
export async function assertConsistent(
  redis: Redis,
  queue: Queue,
  unreadable: ReadonlySet<string> = new Set(),
  tainted: ReadonlySet<string> = new Set(),
  stale: ReadonlySet<string> = new Set(),
): Promise<Map<string, RawTask>> {
  const tasks = await readTasks(redis, queue, unreadable);
  const fair = await redis.hget(queue.keys.config, "fair");
  const members = new Map<string, string[]>();
  for (const zset of Object.values(ZSET_BY_STATE)) {
    for (const member of await redis.zrange(queue.keys[zset], 0, -1)) {
      if (isMarker(member)) continue; // the queue's markers: the v0 guard, the leased set's anchor
      const id = zset === "grouped" ? member.split("\0")[2] : member;
      members.set(id, [...(members.get(id) ?? []), zset]);
    }
  }
  for (const [id, task] of tasks) {
    let sets = members.get(id) ?? [];
    // An id once unreadable may keep a parked member no script could name (lane_unpark drops it).
    if (stale.has(id)) sets = [...new Set(sets)].filter((set) => set !== "grouped" || task.state === "W");
    expect(sets, `id ${id} in state ${task.state}`).toEqual([ZSET_BY_STATE[task.state]]);
    if (task.state === "D") expect(task.payload, `payload of DONE ${id}`).toBe("");
    else expect(task.payload.length, `payload of ${id}`).toBeGreaterThan(0);
    if (task.maxAttempts > 0) expect(task.attempts).toBeLessThanOrEqual(task.maxAttempts);
    // A READY task without a group is at its rank, until the queue takes fair turns (its first group).
    if (task.state === "R" && task.group === "" && fair !== "1")
      expect(task.rank, `rank of READY ${id}`).toBe(
        (await redis.zscore(queue.keys.ready, id)) === null
          ? Number.NaN
          : Number(await redis.zscore(queue.keys.ready, id)),
      );
  }
  for (const id of members.keys())
    if (!unreadable.has(id) && !stale.has(id)) expect(tasks.has(id), `record of ${id}`).toBe(true);
  expect(await redis.zscore(queue.keys.scheduled, "#v0"), "the guard against workers of format v0").not.toBeNull();
  await assertGroups(redis, queue, tasks, tainted);
  return tasks;
}

/**
 * The groups' invariants (docs/groups.md), read independently of the scripts: a group's record
 * names, among its slots, every lease, held retry and FAILED task it waits behind (onFailure hold)
 * (a group with a concurrency) and every task let
 * out (R or W with flag u), never more than its concurrency; it counts its READY tasks and its
 * parked ones, and the parked tasks it names ahead are its first ones in `grouped`, in order; a
 * group with parked tasks and no task let out is full, or waits in groupwait for its rate window.
 * A type's own record counts the tasks set aside by type.
 */
export async function assertGroups(
  redis: Redis,
  queue: Queue,
  tasks: Map<string, RawTask>,
  tainted: ReadonlySet<string> = new Set(),
): Promise<void> {
  const config = await redis.hgetall(queue.keys.config);
  const records = await redis.hgetall(queue.keys.groups);
  const waiting = new Set(await redis.zrange(queue.keys.groupwait, 0, -1));
  const lanes = new Map<string, { ready: string[]; active: string[]; parked: number; out: string[] }>();
  const typeParked = new Map<string, number>();
  const lane = (task: RawTask) => {
    const name = `${task.type}|${task.group}`;
    let entry = lanes.get(name);
    if (!entry) {
      entry = { ready: [], active: [], parked: 0, out: [] };
      lanes.set(name, entry);
    }
    return entry;
  };
  for (const [id, task] of tasks) {
    if (task.state === "W" && task.flags.includes("t")) typeParked.set(task.type, (typeParked.get(task.type) ?? 0) + 1);
    if (task.group === "") continue;
    if (task.state === "R" || (task.state === "W" && task.flags.includes("t"))) lane(task).ready.push(id);
    if ((task.state === "R" || task.state === "W") && task.flags.includes("u")) lane(task).out.push(id);
    // A lease, an ordered group's retry waiting for its time, a FAILED task the group waits behind.
    if (task.state === "L" || ((task.state === "S" || task.state === "F") && task.flags.includes("h"))) {
      lane(task).active.push(id);
    }
    if (task.state === "W" && !task.flags.includes("t")) lane(task).parked += 1;
  }
  for (const [name, entry] of lanes) {
    const {
      ready,
      slots: slotText,
      parked,
    } = parseLane(records[name] ?? "0||") ?? { ready: "0", slots: "", parked: "0" };
    const slots = new Set(slotText === "" ? [] : slotText.split(","));
    const type = name.slice(0, name.indexOf("|"));
    // A singleton's lane runs one task at a time, in no order, whatever its type's policy (docs/flow-control.md).
    const singleton = name.slice(type.length + 1).startsWith(SINGLETON_GROUP_PREFIX);
    const policy = parseGroupPolicy(config[`g:${type}`] ?? config.gd ?? "");
    const [concurrency, ordered] = singleton ? [1, 0] : [policy?.concurrency ?? 0, policy?.ordered ?? 0];
    if (concurrency > 0) {
      for (const id of entry.active) expect(slots.has(id), `group ${name}'s record names its lease ${id}`).toBe(true);
      expect(entry.active.length + entry.out.length, `concurrency of group ${name}`).toBeLessThanOrEqual(concurrency);
    }
    for (const id of entry.out) {
      expect(slots.has(id), `group ${name}'s record names its task let out ${id}`).toBe(true);
    }
    if (ordered === 1)
      expect(entry.active.length + entry.out.length, `ordered group ${name}: one at a time`).toBeLessThanOrEqual(1);
    // A group that had a task made unreadable on purpose counts what it counted (a hint) until the
    // check repairs it: its counts are not compared.
    if (!tainted.has(name)) {
      expect(Number(parked), `parked tasks of group ${name}`).toBe(entry.parked);
      expect(Number(ready), `READY tasks of group ${name}`).toBe(entry.ready.length + entry.parked);
    }
    if (entry.parked > 0 && entry.out.length === 0 && !tainted.has(name)) {
      expect(
        (concurrency > 0 && entry.active.length >= concurrency) || waiting.has(name),
        `group ${name} has ${entry.parked} parked tasks and none let out, yet it is not full nor waiting for its rate`,
      ).toBe(true);
    }
  }
  // The parked tasks a record names ahead (rank and id each) are its first in `grouped`, in order.
  const grouped = await redis.zrange(queue.keys.grouped, 0, -1);
  for (const [name, text] of Object.entries(records)) {
    const ahead = parseLane(text)?.ahead ?? "";
    if (ahead === "" || tainted.has(name)) continue;
    const first = grouped
      .filter((member) => member.startsWith(`${name}\0`))
      .map((member) => member.slice(name.length + 1));
    expect(ahead.split(","), `the parked tasks group ${name} names ahead`).toEqual(
      first.slice(0, ahead.split(",").length),
    );
  }
  for (const [type, count] of typeParked) {
    if (tainted.has(`@${type}`)) continue; // it counted a record made unreadable on purpose
    const parked = parseLane(records[`@${type}`] ?? "0||")?.parked ?? "0";
    expect(Number(parked), `tasks of type ${type} set aside`).toBe(count);
  }
  for (const [name, text] of Object.entries(records)) {
    if (name.startsWith("@") || name === "|" || lanes.has(name) || tainted.has(name)) continue;
    const parked = parseLane(text)?.parked ?? "0";
    expect(parked, `record of group ${name}, which has no task`).toBe("0");
  }
  // parkedsince holds the groups and types whose records count parked tasks, and no other, each by a
  // time that has come (when its next parked task became READY).
  const since = await redis.zrange(queue.keys.parkedsince, 0, -1, "WITHSCORES");
  const sinceNames = new Set<string>();
  for (let i = 0; i < since.length; i += 2) {
    sinceNames.add(since[i]);
    expect(Number(since[i + 1]), `parkedsince of ${since[i]}`).toBeGreaterThan(0);
  }
  for (const [name, text] of Object.entries(records)) {
    if (name === "|" || tainted.has(name)) continue;
    const parked = Number(parseLane(text)?.parked ?? "0");
    expect(sinceNames.has(name), `group ${name} counts ${parked} parked tasks: in parkedsince`).toBe(parked > 0);
  }
  for (const name of sinceNames) {
    if (tainted.has(name)) continue;
    expect(records[name], `parkedsince names ${name}, which has a record`).toBeDefined();
  }
}
