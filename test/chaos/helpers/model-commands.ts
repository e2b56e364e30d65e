// The commands of the model-based suite (model.test.ts), the operator's controls (pause, resume,
// cancel, delete, requeue by filter) among them: each runs one operation against the real
// queue and the pure model (helpers/model.ts), compares the replies, then the whole Redis state.
import fc from "fast-check";
import type { Redis } from "ioredis";
import { expect } from "vitest";
import { isMarker, parseRecord } from "../../../shared/protocol/record.js";
import { VALUES } from "../../../shared/protocol/values.js";
import type { Queue } from "../../../shared/queue.js";
import { assertConsistent } from "../../helpers/invariants.js";
import { operationTally } from "./chaos.js";
import type { Letter, ModelOptions, QueueModel } from "./model.js";

export const START = 1_800_000_000_000;
export const OPTIONS: ModelOptions = {
  policies: { a: { leaseMs: 1_000, maxAttempts: 3 }, b: { leaseMs: 3_000, maxAttempts: 2 } },
  defaultPolicy: { leaseMs: 2_000, maxAttempts: 4 },
  doneRetentionMs: 5_000,
  failedRetentionMs: 8_000,
};
const IDS = Array.from({ length: 10 }, (_, i) => `t${i}`);
const WORKERS = 3;

interface Lease {
  worker: number;
  id: string;
  token: string;
}

/** The model side: the queue model, the clock, and which worker holds which lease. */
export interface World {
  model: QueueModel;
  now: number;
  held: Lease[];
  /** Tokens no longer held by a live worker: settled, released, lost, or held by a crashed one. */
  retired: Lease[];
}

interface Real {
  queue: Queue;
  redis: Redis;
}

const tally = operationTally();
const count = tally.count;
/** How many of each command ran since the last takeTally(). */
export const takeTally = tally.take;

/**
 * Redis state equals the model's: every record field, every sorted set with its scores, the counter.
 * A READY task a claim set aside because its type is paused (state W, flag t, in grouped under
 * "@<type>" by its rank) is READY at its rank to the model: the claims that meet it decide when it
 * is set aside, and where it waits is the queue's business, as long as it comes back at its rank.
 */
async function compareState(world: World, real: Real): Promise<void> {
  const { queue, redis } = real;
  const records = await assertConsistent(redis, queue);
  const expected = Object.fromEntries([...world.model.tasks].map(([id, task]) => [id, { ...task }]));
  const setAside = new Map<string, number>();
  for (const member of await redis.zrange(queue.keys.grouped, 0, -1)) {
    const [owner, rank, id] = member.split("\0");
    if (owner.startsWith("@")) setAside.set(id, Number(rank));
  }
  const actual = Object.fromEntries(
    [...records].map(([id, record]) => [
      id,
      record.state === "W" && record.flags.includes("t")
        ? { ...record, state: "R", flags: record.flags.replace("t", "") }
        : { ...record },
    ]),
  );
  expect(actual).toEqual(expected);
  const zsets: Record<Letter, keyof Queue["keys"]> = {
    R: "ready",
    S: "scheduled",
    L: "leased",
    D: "done",
    F: "failed",
  };
  for (const [letter, zset] of Object.entries(zsets) as Array<[Letter, keyof Queue["keys"]]>) {
    const members = await redis.zrange(queue.keys[zset], 0, -1, "WITHSCORES");
    const scores: Record<string, number> = {};
    // (The queue's markers, the scheduled set's "#v0" guard and the leased set's anchor, are no tasks.)
    for (let i = 0; i < members.length; i += 2) if (!isMarker(members[i])) scores[members[i]] = Number(members[i + 1]);
    if (letter === "R") for (const [id, rank] of setAside) scores[id] = rank;
    const want: Record<string, number> = {};
    for (const [id, task] of world.model.tasks) {
      if (task.state === letter) want[id] = letter === "R" ? task.rank : task.at;
    }
    expect(scores, zset).toEqual(want);
  }
  expect(Number((await redis.get(queue.keys.seq)) ?? 0)).toBe(world.model.seq);
  const hold = await redis.hget(queue.keys.config, "hold");
  // config hold is "<time>|<id of the task it waits for>".
  const retryAt = hold === null ? undefined : parseRecord(VALUES.HOLD.fields, hold)?.retryAtMs;
  expect(retryAt === undefined ? undefined : Number(retryAt), "hold").toBe(world.model.hold);
  const stats = await queue.stats({ now: world.now });
  expect({ paused: stats.paused, pausedTypes: stats.pausedTypes }, "paused").toEqual({
    paused: world.model.paused,
    pausedTypes: [...world.model.pausedTypes].sort(),
  });
  for (const lease of world.held) expect(lease.token).toMatch(/^\d+\.\d+$/);
  expect(await queue.admin.checkAll({ now: world.now }), "leaseq check").toEqual([]);
}

type Command = fc.AsyncCommand<World, Real>;

/** A command run at the world clock shifted by a skewed client clock. */
abstract class Step implements Command {
  constructor(readonly skewMs: number) {}
  check(_world: Readonly<World>): boolean {
    return true;
  }
  abstract run(world: World, real: Real): Promise<void>;
  abstract toString(): string;
  protected at(world: World): number {
    return world.now + this.skewMs;
  }
}

class Enqueue extends Step {
  constructor(
    readonly items: Array<{ id: string; type: string; priority: number; delayMs: number; text: string }>,
    skewMs: number,
  ) {
    super(skewMs);
  }
  async run(world: World, real: Real) {
    count("enqueue");
    const now = this.at(world);
    const inputs = this.items.map(({ id, type, priority, delayMs, text }) => ({
      id,
      type,
      priority,
      delayMs,
      payload: { text },
    }));
    const got = await real.queue.enqueue(inputs, { now });
    const want = world.model.enqueue(
      this.items.map((item) => ({
        ...item,
        runAtMs: now + item.delayMs,
        payload: JSON.stringify({ text: item.text }),
      })),
      now,
    );
    expect(got.map(({ status, state }) => ({ status, state }))).toEqual(want);
    await compareState(world, real);
  }
  toString() {
    return `enqueue(${JSON.stringify(this.items)}, skew ${this.skewMs})`;
  }
}

class Claim extends Step {
  constructor(
    readonly worker: number,
    readonly count: number,
    skewMs: number,
  ) {
    super(skewMs);
  }
  async run(world: World, real: Real) {
    count("claim");
    const now = this.at(world);
    const got = await real.queue.claim({ count: this.count, now });
    const want = world.model.claim(this.count, now);
    expect(
      got.map(({ id, attempt, token, rank, leaseDeadlineMs, solo }) => ({
        id,
        attempt,
        token,
        rank,
        leaseDeadlineMs,
        solo,
      })),
    ).toEqual(want);
    for (const task of got) {
      // §7.4: a new lease means every older token of the task is dead; nobody else may hold it live.
      for (const lease of world.held.filter((l) => l.id === task.id)) {
        world.held.splice(world.held.indexOf(lease), 1);
        world.retired.push(lease);
      }
      world.held.push({ worker: this.worker, id: task.id, token: task.token });
    }
    await compareState(world, real);
  }
  toString() {
    return `claim(worker ${this.worker}, ${this.count}, skew ${this.skewMs})`;
  }
}

/**
 * A step on one lease, the `pick`-th (modulo) of those its worker holds (or, for a stale token, of
 * the retired ones): it runs only while there is one to pick.
 */
abstract class LeaseStep extends Step {
  constructor(
    readonly pick: number,
    skewMs: number,
  ) {
    super(skewMs);
  }
  protected leases(world: Readonly<World>): Lease[] {
    return world.held;
  }
  override check(world: Readonly<World>) {
    return this.leases(world).length > 0;
  }
  protected chosen(world: Readonly<World>): Lease {
    const leases = this.leases(world);
    return leases[this.pick % leases.length];
  }
  /** The chosen lease, which its worker gives up (settled, released or lost): its token is retired. */
  protected givenUp(world: World): Lease {
    const lease = this.chosen(world);
    world.held.splice(world.held.indexOf(lease), 1);
    world.retired.push(lease);
    return lease;
  }
}

class Settle extends LeaseStep {
  constructor(
    pick: number,
    readonly outcome: "ack" | "retry" | "fail",
    readonly retryDelayMs: number,
    skewMs: number,
  ) {
    super(pick, skewMs);
  }
  async run(world: World, real: Real) {
    count(`settle-${this.outcome}`);
    const now = this.at(world);
    const lease = this.givenUp(world);
    const item =
      this.outcome === "ack"
        ? { id: lease.id, token: lease.token, outcome: "ack" as const }
        : this.outcome === "retry"
          ? {
              id: lease.id,
              token: lease.token,
              outcome: "retry" as const,
              retryAtMs: now + this.retryDelayMs,
              error: "e",
            }
          : { id: lease.id, token: lease.token, outcome: "fail" as const, error: "poison" };
    const got = await real.queue.settle([item], { now });
    const want = world.model.settle([item], now);
    expect(got.map(({ status, state }) => ({ status, state }))).toEqual(want);
    await compareState(world, real);
  }
  toString() {
    return `settle(#${this.pick}, ${this.outcome}, +${this.retryDelayMs} ms, skew ${this.skewMs})`;
  }
}

class Extend extends LeaseStep {
  constructor(
    pick: number,
    readonly leaseMs: number,
    skewMs: number,
  ) {
    super(pick, skewMs);
  }
  async run(world: World, real: Real) {
    count("extend");
    const now = this.at(world);
    const lease = this.chosen(world);
    const items = [{ id: lease.id, token: lease.token, leaseMs: this.leaseMs }];
    const got = await real.queue.extend(items, { now });
    const want = world.model.extend(items, now);
    expect(got.map(({ status, leaseDeadlineMs }) => ({ status, leaseDeadlineMs }))).toEqual(want);
    // The worker learns it lost the lease, as the drain loop's heartbeat does.
    if (got[0].status !== "ok") this.givenUp(world);
    await compareState(world, real);
  }
  toString() {
    return `extend(#${this.pick}, ${this.leaseMs} ms, skew ${this.skewMs})`;
  }
}

class Release extends LeaseStep {
  async run(world: World, real: Real) {
    count("release");
    const now = this.at(world);
    const lease = this.givenUp(world);
    const items = [{ id: lease.id, token: lease.token }];
    expect((await real.queue.release(items, { now })).map(({ status }) => ({ status }))).toEqual(
      world.model.release(items, now),
    );
    await compareState(world, real);
  }
  toString() {
    return `release(#${this.pick}, skew ${this.skewMs})`;
  }
}

class Reclaim extends Step {
  async run(world: World, real: Real) {
    count("reclaim");
    const now = this.at(world);
    const got = await real.queue.reclaim({ now });
    const want = world.model.reclaim(now, 0);
    expect({ reclaimed: [...got.reclaimed].sort(), failed: [...got.failed].sort() }).toEqual({
      reclaimed: want.reclaimed.sort(),
      failed: want.failed.sort(),
    });
    await compareState(world, real);
  }
  toString() {
    return `reclaim(skew ${this.skewMs})`;
  }
}

class Requeue extends Step {
  constructor(
    readonly id: string,
    skewMs: number,
  ) {
    super(skewMs);
  }
  async run(world: World, real: Real) {
    count("requeue");
    const now = this.at(world);
    const got = await real.queue.admin.requeue([this.id], { now });
    expect(got.map(({ status }) => ({ status }))).toEqual(world.model.requeue([this.id], now));
    await compareState(world, real);
  }
  toString() {
    return `requeue(${this.id}, skew ${this.skewMs})`;
  }
}

class Pause extends Step {
  constructor(
    readonly action: "pause" | "resume",
    readonly type: string | undefined,
    skewMs: number,
  ) {
    super(skewMs);
  }
  async run(world: World, real: Real) {
    count(this.action);
    const now = this.at(world);
    const options = { now, type: this.type };
    const changed =
      this.action === "pause"
        ? await real.queue.admin.pause(options)
        : (await real.queue.admin.resume(options)).changed;
    expect(changed).toBe(world.model.pause(this.action, this.type));
    await compareState(world, real);
  }
  toString() {
    return `${this.action}(${this.type ?? "queue"}, skew ${this.skewMs})`;
  }
}

class Cancel extends Step {
  constructor(
    readonly ids: string[],
    skewMs: number,
  ) {
    super(skewMs);
  }
  async run(world: World, real: Real) {
    count("cancel");
    const now = this.at(world);
    const got = await real.queue.admin.cancel(this.ids, { now });
    expect(got.map(({ status }) => ({ status }))).toEqual(world.model.cancel(this.ids, now));
    // A cancelled lease is revoked: its holder's token is dead (its settle answers stale_token).
    for (const lease of world.held.filter((l) => this.ids.includes(l.id))) {
      world.held.splice(world.held.indexOf(lease), 1);
      world.retired.push(lease);
    }
    await compareState(world, real);
  }
  toString() {
    return `cancel(${this.ids.join(", ")}, skew ${this.skewMs})`;
  }
}

class Delete implements Command {
  constructor(readonly ids: string[]) {}
  check() {
    return true;
  }
  async run(world: World, real: Real) {
    count("delete");
    const got = await real.queue.admin.delete(this.ids);
    expect(got.map(({ status }) => ({ status }))).toEqual(world.model.delete(this.ids));
    await compareState(world, real);
  }
  toString() {
    return `delete(${this.ids.join(", ")})`;
  }
}

/** What an operator's `requeue --type --error` does: find the matching FAILED tasks, requeue them. */
class RequeueByFilter extends Step {
  constructor(
    readonly type: string | undefined,
    readonly error: string | undefined,
    readonly scan: number,
    skewMs: number,
  ) {
    super(skewMs);
  }
  async run(world: World, real: Real) {
    count("requeue-by-filter");
    const now = this.at(world);
    const found: string[] = [];
    let cursor: number | undefined = 0;
    while (cursor !== undefined) {
      const page = await real.queue.admin.find("failed", {
        type: this.type,
        error: this.error,
        cursor,
        scan: this.scan,
      });
      found.push(...page.tasks.map((task) => task.id));
      cursor = page.next;
    }
    expect([...found].sort()).toEqual(world.model.failedMatching(this.type, this.error));
    if (found.length > 0) {
      const got = await real.queue.admin.requeue(found, { now });
      expect(got.map(({ status }) => ({ status }))).toEqual(world.model.requeue(found, now));
    }
    await compareState(world, real);
  }
  toString() {
    return `requeueByFilter(${this.type ?? "any type"}, ${JSON.stringify(this.error)}, scan ${this.scan}, skew ${this.skewMs})`;
  }
}

class Trim extends Step {
  async run(world: World, real: Real) {
    count("trim");
    const now = this.at(world);
    expect(await real.queue.trim({ now })).toEqual(world.model.trim(now));
    await compareState(world, real);
  }
  toString() {
    return `trim(skew ${this.skewMs})`;
  }
}

class AdvanceTime implements Command {
  constructor(readonly ms: number) {}
  check() {
    return true;
  }
  async run(world: World) {
    count("advance-time");
    world.now += this.ms;
  }
  toString() {
    return `advance(${this.ms} ms)`;
  }
}

/** A worker dies: it never settles what it holds; only reclaim brings those tasks back. */
class CrashWorker implements Command {
  constructor(readonly worker: number) {}
  check(world: Readonly<World>) {
    return world.held.some((lease) => lease.worker === this.worker);
  }
  async run(world: World, real: Real) {
    count("crash-worker");
    const lost = world.held.filter((lease) => lease.worker === this.worker);
    world.held = world.held.filter((lease) => lease.worker !== this.worker);
    world.retired.push(...lost);
    await compareState(world, real);
  }
  toString() {
    return `crash(worker ${this.worker})`;
  }
}

/** An old token comes back (a zombie worker, a retried request): it must change nothing unless still current. */
class StaleAck extends LeaseStep {
  protected override leases(world: Readonly<World>): Lease[] {
    return world.retired;
  }
  async run(world: World, real: Real) {
    count("stale-ack");
    const now = this.at(world);
    const lease = this.chosen(world);
    const task = world.model.tasks.get(lease.id);
    const stateBefore = task?.state;
    const current = task?.state === "L" && world.model.token(task) === lease.token;
    const item = { id: lease.id, token: lease.token, outcome: "ack" as const };
    const got = await real.queue.settle([item], { now });
    expect(got.map(({ status, state }) => ({ status, state }))).toEqual(world.model.settle([item], now));
    // §7.4 and §7.6: only the current lease's token can finish a task; a repeated ack is "already done".
    if (!current) expect(got[0].status).not.toBe("ok");
    if (stateBefore === "D") expect(got[0].status).toBe("already_done");
    if (current) count("zombie-ack-accepted");
    await compareState(world, real);
  }
  toString() {
    return `staleAck(#${this.pick}, skew ${this.skewMs})`;
  }
}

const skew = fc.oneof(
  { weight: 4, arbitrary: fc.constant(0) },
  { weight: 1, arbitrary: fc.integer({ min: -500, max: 500 }) },
);
const enqueue = fc
  .tuple(
    fc.array(
      fc.record({
        id: fc.constantFrom(...IDS),
        type: fc.constantFrom("a", "b", "c"),
        priority: fc.oneof(fc.constant(0), fc.integer({ min: -1000, max: 1000 })),
        delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 })),
        text: fc.string({ maxLength: 8, unit: "grapheme" }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    skew,
  )
  .map(([items, s]) => new Enqueue(items, s));
const claim = fc
  .tuple(fc.nat(WORKERS - 1), fc.integer({ min: 1, max: 4 }), skew)
  .map(([w, n, s]) => new Claim(w, n, s));
/**
 * Retry delays. An ordered queue's hold key expires by Redis's own clock (SET … PX), which the
 * model cannot follow while it travels in time: there, delays are 0 or long enough (≥ 10 s of
 * real time) for the key to outlive any sequence.
 */
const retryDelay = (ordered: boolean) =>
  ordered ? fc.oneof(fc.constant(0), fc.integer({ min: 10_000, max: 20_000 })) : fc.nat(3_000);
const settle = (ordered: boolean) =>
  fc
    .tuple(fc.nat(), fc.constantFrom("ack" as const, "retry" as const, "fail" as const), retryDelay(ordered), skew)
    .map(([p, o, d, s]) => new Settle(p, o, d, s));
// Listed more than once = drawn more often: the lease commands need something enqueued and claimed.
export const commandsFor = (ordered: boolean) => [
  enqueue,
  enqueue,
  claim,
  claim,
  settle(ordered),
  settle(ordered),
  settle(ordered),
  fc.tuple(fc.nat(), fc.integer({ min: 1, max: 4_000 }), skew).map(([p, ms, s]) => new Extend(p, ms, s)),
  fc.tuple(fc.nat(), skew).map(([p, s]) => new Release(p, s)),
  skew.map((s) => new Reclaim(s)),
  fc.tuple(fc.constantFrom(...IDS), skew).map(([id, s]) => new Requeue(id, s)),
  skew.map((s) => new Trim(s)),
  fc.integer({ min: 1, max: 4_000 }).map((ms) => new AdvanceTime(ms)),
  fc.nat(WORKERS - 1).map((w) => new CrashWorker(w)),
  fc.tuple(fc.nat(), skew).map(([p, s]) => new StaleAck(p, s)),
  // The operator's controls (docs/design.md "Controls").
  fc
    .tuple(fc.constantFrom("pause" as const, "resume" as const), fc.constantFrom(undefined, "a", "b"), skew)
    .map(([action, type, s]) => new Pause(action, type, s)),
  fc
    .tuple(fc.array(fc.constantFrom(...IDS), { minLength: 1, maxLength: 3 }), skew)
    .map(([ids, s]) => new Cancel(ids, s)),
  fc.array(fc.constantFrom(...IDS), { minLength: 1, maxLength: 2 }).map((ids) => new Delete(ids)),
  fc
    .tuple(
      fc.constantFrom(undefined, "a", "c"),
      fc.constantFrom(undefined, "poison", "cancel", "expired", "e"),
      fc.integer({ min: 1, max: 4 }),
      skew,
    )
    .map(([type, error, scan, s]) => new RequeueByFilter(type, error, scan, s)),
];
