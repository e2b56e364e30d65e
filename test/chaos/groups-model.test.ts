// Model-based testing of groups (issue 15): fast-check generates sequences of enqueues (tasks of
// an ordered type, a type of concurrency 2 and a type with no group policy, in a few groups or
// none, at three priorities, some delayed), claims, acks, retries (now or later), fails, releases,
// crashed workers, time passing with the reclaimer's tick, cancels and requeues, and runs each
// against the real queue and a model of the tasks' states. After every step the states agree, the
// storage and group invariants hold (test/helpers/invariants.ts), and every claim obeyed the
// groups' rules: no group over its concurrency, an ordered group's task only when nothing of its
// group is leased or waiting to be retried and no task of it ranks before it, and no claim
// empty-handed while a task may run. A failure shrinks to a minimal sequence.
import fc from "fast-check";
import type { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import type { ClaimedTask } from "../../shared/types.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, openQueue, rawClient } from "../helpers/stores.js";
import { chaosSeed, report, scale } from "./helpers/chaos.js";

const START = 1_800_000_000_000;
const LEASE_MS = 1_000;
const MAX_ATTEMPTS = 3;
/** Type → the most tasks of one of its groups leased at once (0: no limit), and whether ordered. */
const RULES: Record<string, { concurrency: number; ordered: boolean }> = {
  ord: { concurrency: 1, ordered: true },
  two: { concurrency: 2, ordered: false },
  any: { concurrency: 0, ordered: false },
};
const TYPES = Object.keys(RULES);
const GROUPS = ["", "g1", "g2", "g3"];
const IDS = Array.from({ length: 12 }, (_, i) => `t${i}`);

type Letter = "R" | "S" | "L" | "D" | "F";
interface ModelTask {
  state: Letter;
  type: string;
  group: string;
  rank: number;
  attempts: number;
  /** R: returned by a reclaim (it goes alone); S: an ordered group's retry holding its group. */
  solo: boolean;
  held: boolean;
  at: number;
  token: string;
}

interface World {
  now: number;
  seq: number;
  tasks: Map<string, ModelTask>;
  /** Ordered groups: the task whose turn it is (READY), chosen when the group has none and nothing leased. */
  heads: Map<string, string>;
  /** Ordered groups a delete left without a head: the next claim or tick gives them one. */
  pending: Set<string>;
  /** Leases the live workers hold. */
  held: Array<{ worker: number; id: string; token: string }>;
}

interface Real {
  queue: Queue;
  redis: Redis;
}

const tally: Record<string, number> = {};
const count = (name: string) => {
  tally[name] = (tally[name] ?? 0) + 1;
};

const laneOf = (task: ModelTask) => `${task.type}/${task.group}`;

/** Tasks of `lane` holding a slot: leased, or an ordered retry waiting for its time. */
function busy(world: World, lane: string): number {
  return [...world.tasks.values()].filter(
    (task) => task.group !== "" && laneOf(task) === lane && (task.state === "L" || (task.state === "S" && task.held)),
  ).length;
}

const ordered = (task: ModelTask) => task.group !== "" && RULES[task.type].ordered;

/**
 * An ordered group with no head and nothing leased gets one: its READY task of lowest rank. A task
 * that becomes READY later waits behind the head whose turn has come, whatever its rank.
 */
function chooseHead(world: World, lane: string): void {
  if (world.heads.has(lane) || busy(world, lane) > 0) return;
  const first = [...world.tasks]
    .filter(([, task]) => task.state === "R" && ordered(task) && laneOf(task) === lane)
    .sort(([, a], [, b]) => a.rank - b.rank)[0];
  if (first) world.heads.set(lane, first[0]);
}

/** A leased or held task of an ordered group is READY again: it goes first, as its group's head. */
function returned(world: World, id: string, task: ModelTask): void {
  if (ordered(task)) world.heads.set(laneOf(task), id);
}

/** Whether the groups' rules let `task` (READY) be claimed now, `taken` of its lane already in this claim. */
function mayRun(world: World, id: string, taken: number): boolean {
  const task = world.tasks.get(id);
  if (task?.state !== "R") return false;
  if (task.group === "") return true;
  const rules = RULES[task.type];
  const lane = laneOf(task);
  if (rules.concurrency > 0 && busy(world, lane) + taken >= rules.concurrency) return false;
  if (rules.ordered && world.heads.get(lane) !== id) return false;
  return true;
}

/** The real queue's task states equal the model's (W, parked, is READY to the world), and its check is clean. */
async function compare(world: World, real: Real): Promise<void> {
  const records = await assertConsistent(real.redis, real.queue);
  expect(await real.queue.checkAll({ now: world.now }), "leaseq check").toEqual([]);
  const actual = Object.fromEntries(
    [...records].map(([id, record]) => [
      id,
      { state: record.state === "W" ? "R" : record.state, attempts: record.attempts },
    ]),
  );
  const expected = Object.fromEntries(
    [...world.tasks].map(([id, task]) => [id, { state: task.state, attempts: task.attempts }]),
  );
  expect(actual).toEqual(expected);
}

/**
 * Promotes due SCHEDULED tasks in the scheduled set's order (due time, then id), as the claim and
 * the tick do first, then gives the groups a delete left without a head one.
 */
function promote(world: World, now: number): number {
  const due = [...world.tasks]
    .filter(([, task]) => task.state === "S" && task.at <= now)
    .sort(([a, x], [b, y]) => x.at - y.at || (a < b ? -1 : 1));
  for (const [id, task] of due) {
    const held = task.held;
    task.state = "R";
    task.held = false;
    if (held) returned(world, id, task);
    else if (ordered(task)) chooseHead(world, laneOf(task));
  }
  for (const lane of world.pending) chooseHead(world, lane);
  world.pending.clear();
  return due.length;
}

type Command = fc.AsyncCommand<World, Real>;

class Enqueue implements Command {
  constructor(readonly items: Array<{ id: string; type: string; group: string; priority: number; delayMs: number }>) {}
  check() {
    return true;
  }
  async run(world: World, real: Real) {
    count("enqueue");
    const inputs = this.items.map(({ id, type, group, priority, delayMs }) => ({
      id,
      type,
      priority,
      delayMs,
      ...(group === "" ? {} : { group }),
    }));
    const got = await real.queue.enqueue(inputs, { now: world.now });
    const want = this.items.map((item, index) => {
      const known = world.tasks.get(item.id);
      if (known || this.items.findIndex((other) => other.id === item.id) !== index) {
        return { status: "duplicate" };
      }
      world.tasks.set(item.id, {
        state: item.delayMs > 0 ? "S" : "R",
        type: item.type,
        group: item.group,
        rank: (item.priority + 1000) * 2 ** 42 + ++world.seq,
        attempts: 0,
        solo: false,
        held: false,
        at: world.now + item.delayMs,
        token: "",
      });
      const task = world.tasks.get(item.id);
      if (task && task.state === "R" && ordered(task)) chooseHead(world, laneOf(task));
      return { status: "ok" };
    });
    expect(got.map(({ status }) => ({ status }))).toEqual(want);
    await compare(world, real);
  }
  toString() {
    return `enqueue(${JSON.stringify(this.items)})`;
  }
}

class Claim implements Command {
  constructor(
    readonly worker: number,
    readonly count: number,
  ) {}
  check() {
    return true;
  }
  async run(world: World, real: Real) {
    count("claim");
    promote(world, world.now);
    const got: ClaimedTask[] = await real.queue.claim({ count: this.count, now: world.now });
    const takenOf = new Map<string, number>();
    for (const [index, claimed] of got.entries()) {
      const task = world.tasks.get(claimed.id);
      expect(task, `claimed ${claimed.id}, unknown to the model`).toBeDefined();
      if (!task) return;
      const lane = laneOf(task);
      expect(mayRun(world, claimed.id, takenOf.get(lane) ?? 0), `claimed ${claimed.id} against its group's rules`).toBe(
        true,
      );
      if (task.solo) expect(got.length, `${claimed.id} came back from a reclaim: alone`).toBe(1);
      expect(index === 0 || !task.solo).toBe(true);
      takenOf.set(lane, (takenOf.get(lane) ?? 0) + 1);
    }
    for (const claimed of got) {
      const task = world.tasks.get(claimed.id);
      if (!task) return;
      if (world.heads.get(laneOf(task)) === claimed.id) world.heads.delete(laneOf(task));
      task.state = "L";
      task.attempts++;
      task.solo = false;
      task.at = world.now + LEASE_MS;
      task.token = claimed.token;
      world.held.push({ worker: this.worker, id: claimed.id, token: claimed.token });
    }
    if (got.length === 0) {
      const runnable = [...world.tasks.keys()].filter((id) => mayRun(world, id, 0));
      expect(runnable, "a claim returned nothing while these tasks could run").toEqual([]);
    }
    await compare(world, real);
  }
  toString() {
    return `claim(worker ${this.worker}, ${this.count})`;
  }
}

class Settle implements Command {
  constructor(
    readonly pick: number,
    readonly outcome: "ack" | "retry-now" | "retry-later" | "fail",
  ) {}
  check(world: Readonly<World>) {
    return world.held.length > 0;
  }
  async run(world: World, real: Real) {
    count(`settle-${this.outcome}`);
    const lease = world.held.splice(this.pick % world.held.length, 1)[0];
    const now = world.now;
    const item =
      this.outcome === "ack"
        ? { id: lease.id, token: lease.token, outcome: "ack" as const }
        : this.outcome === "fail"
          ? { id: lease.id, token: lease.token, outcome: "fail" as const, error: "no" }
          : {
              id: lease.id,
              token: lease.token,
              outcome: "retry" as const,
              retryAtMs: this.outcome === "retry-now" ? now : now + 500,
              error: "again",
            };
    const [got] = await real.queue.settle([item], { now });
    const task = world.tasks.get(lease.id);
    if (task?.state !== "L" || task.token !== lease.token) {
      expect(got.status).not.toBe("ok");
    } else {
      expect(got.status).toBe("ok");
      if (this.outcome === "ack") task.state = "D";
      else if (this.outcome === "fail" || task.attempts >= MAX_ATTEMPTS) task.state = "F";
      else if (this.outcome === "retry-later") {
        task.state = "S";
        task.at = now + 500;
        task.held = ordered(task);
      } else {
        task.state = "R";
        returned(world, lease.id, task);
      }
      if (task.state === "D" || task.state === "F") chooseHead(world, laneOf(task));
    }
    await compare(world, real);
  }
  toString() {
    return `settle(#${this.pick}, ${this.outcome})`;
  }
}

class Release implements Command {
  constructor(readonly pick: number) {}
  check(world: Readonly<World>) {
    return world.held.length > 0;
  }
  async run(world: World, real: Real) {
    count("release");
    const lease = world.held.splice(this.pick % world.held.length, 1)[0];
    const [got] = await real.queue.release([{ id: lease.id, token: lease.token }], { now: world.now });
    const task = world.tasks.get(lease.id);
    if (task && task.state === "L" && task.token === lease.token) {
      expect(got.status).toBe("ok");
      task.state = "R";
      task.attempts--;
      returned(world, lease.id, task);
    } else expect(got.status).not.toBe("ok");
    await compare(world, real);
  }
  toString() {
    return `release(#${this.pick})`;
  }
}

/** A worker dies holding its leases: only the reclaim (a tick once they expire) brings them back. */
class Crash implements Command {
  constructor(readonly worker: number) {}
  check(world: Readonly<World>) {
    return world.held.some((lease) => lease.worker === this.worker);
  }
  async run(world: World, real: Real) {
    count("crash");
    world.held = world.held.filter((lease) => lease.worker !== this.worker);
    await compare(world, real);
  }
  toString() {
    return `crash(worker ${this.worker})`;
  }
}

/** Time passes, then the reclaimer's tick: expired leases back (alone) or FAILED, due tasks READY. */
class Tick implements Command {
  constructor(readonly ms: number) {}
  check() {
    return true;
  }
  async run(world: World, real: Real) {
    count("tick");
    world.now += this.ms;
    const got = await real.queue.tick({ now: world.now });
    let reclaimed = 0;
    let failed = 0;
    const expired = [...world.tasks].filter(([, task]) => task.state === "L" && task.at < world.now);
    expired.sort(([a, x], [b, y]) => x.at - y.at || (a < b ? -1 : 1));
    for (const [id, task] of expired) {
      if (task.attempts >= MAX_ATTEMPTS) {
        task.state = "F";
        failed++;
        chooseHead(world, laneOf(task));
      } else {
        task.state = "R";
        task.solo = true;
        reclaimed++;
        returned(world, id, task);
      }
    }
    world.held = world.held.filter((lease) => world.tasks.get(lease.id)?.state === "L");
    const promoted = promote(world, world.now);
    expect({ reclaimed: got.reclaimed, failed: got.reclaimFailed, promoted: got.promoted }).toEqual({
      reclaimed,
      failed,
      promoted,
    });
    await compare(world, real);
  }
  toString() {
    return `tick(+${this.ms} ms)`;
  }
}

class Cancel implements Command {
  constructor(readonly id: string) {}
  check() {
    return true;
  }
  async run(world: World, real: Real) {
    count("cancel");
    const [got] = await real.queue.cancel([this.id], { now: world.now });
    const task = world.tasks.get(this.id);
    if (task && "RSL".includes(task.state)) {
      expect(got.status).toBe("ok");
      // A delayed task not holding its group's slot gives its group nothing: a head a delete left
      // for later is still chosen by the next claim or tick.
      const freesTurn = task.state !== "S" || task.held;
      task.state = "F";
      task.held = false;
      task.solo = false;
      world.held = world.held.filter((lease) => lease.id !== this.id);
      if (world.heads.get(laneOf(task)) === this.id) world.heads.delete(laneOf(task));
      if (ordered(task) && freesTurn) chooseHead(world, laneOf(task));
    } else expect(got.status).not.toBe("ok");
    await compare(world, real);
  }
  toString() {
    return `cancel(${this.id})`;
  }
}

class Delete implements Command {
  constructor(readonly id: string) {}
  check() {
    return true;
  }
  async run(world: World, real: Real) {
    count("delete");
    const [got] = await real.queue.delete([this.id]);
    const task = world.tasks.get(this.id);
    if (task && task.state !== "L") {
      expect(got.status).toBe("ok");
      world.tasks.delete(this.id);
      const lane = laneOf(task);
      // A head or a held retry leaves its group's turn to the next claim (delete has no clock).
      if (world.heads.get(lane) === this.id || (task.state === "S" && task.held)) {
        world.heads.delete(lane);
        if (ordered(task)) world.pending.add(lane);
      }
    } else expect(got.status).not.toBe("ok");
    await compare(world, real);
  }
  toString() {
    return `delete(${this.id})`;
  }
}

class Requeue implements Command {
  constructor(readonly id: string) {}
  check(world: Readonly<World>) {
    return world.tasks.get(this.id)?.state === "F";
  }
  async run(world: World, real: Real) {
    count("requeue");
    const [got] = await real.queue.requeue([this.id], { now: world.now });
    expect(got.status).toBe("ok");
    const task = world.tasks.get(this.id);
    if (task) {
      task.state = "R";
      task.attempts = 0;
      task.solo = false;
      if (ordered(task)) chooseHead(world, laneOf(task));
    }
    await compare(world, real);
  }
  toString() {
    return `requeue(${this.id})`;
  }
}

const item = fc.record({
  id: fc.constantFrom(...IDS),
  type: fc.constantFrom(...TYPES),
  group: fc.constantFrom(...GROUPS),
  priority: fc.constantFrom(-1, 0, 0, 1),
  delayMs: fc.constantFrom(0, 0, 0, 300),
});
const commands = [
  fc.array(item, { minLength: 1, maxLength: 5 }).map((items) => new Enqueue(items)),
  fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 4 })).map(([w, n]) => new Claim(w, n)),
  fc
    .tuple(fc.nat(), fc.constantFrom("ack", "ack", "retry-now", "retry-later", "fail"))
    .map(([pick, outcome]) => new Settle(pick, outcome as Settle["outcome"])),
  fc.nat().map((pick) => new Release(pick)),
  fc.integer({ min: 0, max: 2 }).map((worker) => new Crash(worker)),
  fc.constantFrom(200, 600, 1_500).map((ms) => new Tick(ms)),
  fc.constantFrom(...IDS).map((id) => new Cancel(id)),
  fc.constantFrom(...IDS).map((id) => new Delete(id)),
  fc.constantFrom(...IDS).map((id) => new Requeue(id)),
];

describe.each(adapters)("groups, model-based over $name", (adapter) => {
  const redis = rawClient();
  const stores: Store[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close();
    redis.disconnect();
  });
  const runs = adapter.name === "tcp" ? scale(40, 1_000) : scale(10, 150);
  const maxCommands = scale(40, 100);
  it(
    `obeys every group's rules over ${runs} random sequences of up to ${maxCommands} operations`,
    async () => {
      const seed = chaosSeed();
      let sequences = 0;
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { maxCommands, size: "max" }), async (sequence) => {
          sequences++;
          const policy = { leaseMs: LEASE_MS, maxAttempts: MAX_ATTEMPTS };
          const { store, queue } = await openQueue(adapter, {
            policies: Object.fromEntries(TYPES.map((type) => [type, policy])),
            typeGroups: { ord: { ordered: true }, two: { concurrency: 2 } },
            clockSkewMs: 0,
          });
          stores.push(store);
          const world: World = { now: START, seq: 0, tasks: new Map(), held: [], heads: new Map(), pending: new Set() };
          await fc.asyncModelRun(() => ({ model: world, real: { queue, redis } }), sequence);
        }),
        { numRuns: runs, seed },
      );
      const operations = { ...tally };
      for (const key of Object.keys(tally)) delete tally[key];
      const steps = Object.values(operations).reduce((sum, n) => sum + n, 0);
      report(`groups-model-${adapter.name}`, { seed, sequences, steps, operations });
    },
    scale(90_000, 1_800_000),
  );
});
