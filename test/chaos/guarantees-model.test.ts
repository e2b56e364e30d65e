// Model-based testing of the guarantees under groups, rates and the operator's controls:
// fast-check generates sequences of enqueues (an ordered type, a type of concurrency 2, a type
// rated per group and across its groups, a type with no policy; a few groups or none; three
// priorities; some delayed; an id named twice in one call), claims, settles, releases, crashed
// workers, time passing with the reclaimer's tick, cancels, deletes, requeues, pauses and resumes
// of the queue and of a type, trims and purges (so ids come back as new tasks), records made
// unreadable on purpose and repaired; each step at a caller clock up to a second off, and any of
// them through a store that loses the reply and sends the call again. Workers run as an invocation
// does: several tasks at once (claiming with `busy` while they run some, and a room per type),
// heartbeats confirming the tasks whose handlers started, and crashes taking down whatever they ran;
// two deployments share the queue, each worker claiming only its deployment's types.
// After every step: the states agree with the model, the storage and group invariants hold,
// `leaseq check` finds nothing, every claim obeyed the rules (concurrency, order, rates within their
// windows, pauses, rooms, a task that stalled twice alone and only to a worker running nothing),
// no claim came back empty-handed while a task could run, and an attempt is charged only to a
// started handler (a confirmed lease, or a run its holder settled).
import fc from "fast-check";
import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { rankOf } from "../../shared/records.js";
import type { ClaimedTask } from "../../shared/types.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, configuredQueue, lossyStore, storeFixture, uniqueQueueName } from "../helpers/stores.js";
import { checkSequences, operationTally, reportModelRun, scale } from "./helpers/chaos.js";

const START = 1_800_000_000_000;
const LEASE_MS = 1_000;
const MAX_ATTEMPTS = 3;
interface Rules {
  concurrency: number;
  ordered: boolean;
  rate?: { max: number; perMs: number };
  typeRate?: { max: number; perMs: number };
}
const RULES: Record<string, Rules> = {
  ord: { concurrency: 1, ordered: true },
  two: { concurrency: 2, ordered: false },
  rt: { concurrency: 0, ordered: false, rate: { max: 2, perMs: 1_000 }, typeRate: { max: 3, perMs: 1_000 } },
  any: { concurrency: 0, ordered: false },
};
const TYPES = Object.keys(RULES);
/**
 * Two deployments share the queue, each running its own types and accepting the other's (docs/deploy.md
 * "Deployments sharing a queue"): workers 0 and 1 are deployment a's, worker 2 deployment b's.
 */
const DEPLOYMENTS = { a: ["ord", "two", "any"], b: ["rt"] };
const WORKER_TYPES = [DEPLOYMENTS.a, DEPLOYMENTS.a, DEPLOYMENTS.b];
// Groups and ids with ":" and "@" (docs/design.md "Ids and names"): the group "@rt" is spelt as the
// type rt's own record, which rates and pauses use.
const GROUPS = ["", "g:1", "@rt", "g3@eu"];
const IDS = Array.from({ length: 12 }, (_, i) => [`t${i}`, `u:${i}`, `n@2026-12-01T0${i % 10}:00:00Z`][i % 3]);
const SKEWS = [0, 0, 0, -1_000, -1, 1, 1_000];
const MAX_STALLS = 3;

type Letter = "R" | "S" | "L" | "D" | "F" | "C";
interface ModelTask {
  /** C: quarantined. */
  state: Letter;
  type: string;
  group: string;
  rank: number;
  attempts: number;
  /** Runs whose handler started: a lease its holder confirmed (a heartbeat), or settled. */
  ran: number;
  /** L: its holder confirmed it (a heartbeat): its handler started, a reclaim keeps its attempt. */
  confirmed: boolean;
  /** Leases that ran out while held. */
  stalls: number;
  /** R: it stalled twice (it goes alone, to a worker running nothing); S: an ordered group's retry holding its group. */
  solo: boolean;
  held: boolean;
  at: number;
  token: string;
  /** Made unreadable on purpose: the queue quarantines it when a script meets it (or the check). */
  unreadable: boolean;
  /** DONE when it was made unreadable: it has no body left, so repair cannot bring it back. */
  bodyless?: boolean;
}

interface World {
  now: number;
  seq: number;
  tasks: Map<string, ModelTask>;
  /** Ordered groups: the task whose turn it is (READY), chosen when the group has none and nothing held. */
  heads: Map<string, string>;
  /** Ordered groups left without a head by a delete or a quarantine: the next claim or tick gives them one. */
  pending: Set<string>;
  held: Array<{ worker: number; id: string; token: string }>;
  paused: boolean;
  pausedTypes: Set<string>;
  /** Rate windows by group ("<type>|<group>") and by type ("@<type>"): start and claims. */
  windows: Map<string, { window: number; count: number }>;
  /** Groups that had a task made unreadable: their counts are hints from then on. */
  tainted: Set<string>;
  /**
   * Ids ever made unreadable: a parked member of theirs no script could name (their record named
   * it) may stay in grouped after they were quarantined, deleted, repaired or given to a new task,
   * until their group next lets a task out or the check drops it. It lets out nothing (its rank
   * names the task it was).
   */
  stale: Set<string>;
}

interface Real {
  queue: Queue;
  /** The same queue through a store that loses every reply and sends the call again (argsForRetry). */
  lossy: Queue;
  redis: Redis;
}

const tally = operationTally();
const count = tally.count;

const laneOf = (task: { type: string; group: string }) => `${task.type}|${task.group}`;
const ordered = (task: ModelTask) => task.group !== "" && RULES[task.type].ordered;

/** Tasks of `lane` holding a slot: leased, or an ordered retry waiting for its time (readable or not). */
function busy(world: World, lane: string): number {
  return [...world.tasks.values()].filter(
    (task) => task.group !== "" && laneOf(task) === lane && (task.state === "L" || (task.state === "S" && task.held)),
  ).length;
}

function chooseHead(world: World, lane: string): void {
  if (world.heads.has(lane) || busy(world, lane) > 0) return;
  const first = [...world.tasks]
    .filter(([, task]) => task.state === "R" && !task.unreadable && ordered(task) && laneOf(task) === lane)
    .sort(([, a], [, b]) => a.rank - b.rank)[0];
  if (first) world.heads.set(lane, first[0]);
}

function returned(world: World, id: string, task: ModelTask): void {
  if (ordered(task)) world.heads.set(laneOf(task), id);
}

/** The rate window a claim at `at` counts in: never one before the newest a claim opened. */
function windowOf(world: World, key: string, span: number, at: number): { window: number; used: number } {
  const record = world.windows.get(key);
  const own = at - (at % span);
  const window = record && record.window > own ? record.window : own;
  return { window, used: record && record.window === window ? record.count : 0 };
}

function countClaim(world: World, key: string, span: number, at: number): void {
  const { window, used } = windowOf(world, key, span, at);
  world.windows.set(key, { window, count: used + 1 });
}

/**
 * Whether the rules let `id` (READY) be claimed at `at`, `takenLane`/`takenType` of its group and type
 * claimed already, by a worker running other tasks (`running`) with `room` left per type.
 */
function mayRun(
  world: World,
  id: string,
  takenLane: number,
  takenType: number,
  at: number,
  running = false,
  room: Record<string, number> = {},
  types: readonly string[] = TYPES,
): boolean {
  const task = world.tasks.get(id);
  if (task?.state !== "R" || task.unreadable) return false;
  if (!types.includes(task.type)) return false;
  if (world.paused || world.pausedTypes.has(task.type)) return false;
  if (task.solo && running) return false;
  if (room[task.type] !== undefined && takenType >= room[task.type]) return false;
  const rules = RULES[task.type];
  if (rules.typeRate) {
    const { used } = windowOf(world, `@${task.type}`, rules.typeRate.perMs, at);
    if (used + takenType >= rules.typeRate.max) return false;
  }
  if (task.group === "") return true;
  const lane = laneOf(task);
  if (rules.concurrency > 0 && busy(world, lane) + takenLane >= rules.concurrency) return false;
  if (rules.ordered && world.heads.get(lane) !== id) return false;
  if (rules.rate) {
    const { used } = windowOf(world, lane, rules.rate.perMs, at);
    if (used + takenLane >= rules.rate.max) return false;
  }
  return true;
}

/** Due SCHEDULED tasks become READY (at the caller's `at`); groups a delete left headless get one. */
function promote(world: World, at: number): number {
  const due = [...world.tasks]
    .filter(([, task]) => task.state === "S" && !task.unreadable && task.at <= at)
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

/** Ids the queue quarantined since the last step (an unreadable record met by a script): C in the model. */
async function noteQuarantined(world: World, real: Real): Promise<void> {
  const corrupt = new Set(await real.redis.zrange(real.queue.keys.corrupt, 0, -1));
  for (const [id, task] of world.tasks) {
    if (!task.unreadable || task.state === "C" || !corrupt.has(id)) continue;
    const lane = laneOf(task);
    task.state = "C";
    task.held = false;
    task.solo = false;
    world.held = world.held.filter((lease) => lease.id !== id);
    if (world.heads.get(lane) === id) world.heads.delete(lane);
    if (ordered(task)) world.pending.add(lane); // its group's next turn: the next claim or tick
  }
}

/** The real queue's task states equal the model's, its invariants hold, and its check is clean. */
async function compare(world: World, real: Real): Promise<void> {
  await noteQuarantined(world, real);
  const unreadable = new Set(
    [...world.tasks].filter(([, task]) => task.unreadable && task.state !== "C").map(([id]) => id),
  );
  const records = await assertConsistent(real.redis, real.queue, unreadable, world.tainted, world.stale);
  const corrupt = new Set(await real.redis.zrange(real.queue.keys.corrupt, 0, -1));
  const actual: Record<string, { state: string; attempts: number; stalls: number }> = {};
  for (const [id, record] of records) {
    actual[id] = { state: record.state === "W" ? "R" : record.state, attempts: record.attempts, stalls: record.stalls };
  }
  for (const id of corrupt) actual[id] = { state: "C", attempts: 0, stalls: 0 };
  const expected: Record<string, { state: string; attempts: number; stalls: number }> = {};
  for (const [id, task] of world.tasks) {
    if (unreadable.has(id)) continue;
    const known = task.state !== "C";
    expected[id] = { state: task.state, attempts: known ? task.attempts : 0, stalls: known ? task.stalls : 0 };
    // An attempt is charged only to a started handler: every attempt counted is a run that started
    // (confirmed, or settled by its holder), but the one a lease not confirmed yet holds.
    if (known && !task.unreadable) {
      const pending = task.state === "L" && !task.confirmed ? 1 : 0;
      expect(task.attempts, `${id}: attempts against the runs that started`).toBe(task.ran + pending);
    }
  }
  expect(actual).toEqual(expected);
  // The check finds nothing but what the test did on purpose: records not quarantined yet.
  const problems = (await real.queue.admin.checkAll({ now: world.now })).filter(
    (problem) =>
      !unreadable.has(problem.subject) &&
      !(problem.code === "orphan_member" && world.stale.has(problem.subject)) &&
      !world.tainted.has(problem.subject) &&
      !(problem.code === "group_slots" && world.tainted.has(problem.subject)),
  );
  expect(problems, "leaseq check").toEqual([]);
}

type Command = fc.AsyncCommand<World, Real>;

/** A step at a caller clock `skew` ms off, optionally through the store that loses the reply. */
abstract class Step implements Command {
  constructor(
    readonly skew: number,
    readonly lost: boolean,
  ) {}
  check(_world: Readonly<World>): boolean {
    return true;
  }
  abstract run(world: World, real: Real): Promise<void>;
  abstract describe(): string;
  protected at(world: World): number {
    return world.now + this.skew;
  }
  protected queue(real: Real): Queue {
    return this.lost ? real.lossy : real.queue;
  }
  /** Statuses are compared when the reply was not lost (a repeat answers what the repeat found). */
  protected expectStatuses(got: Array<{ status: string }>, want: string[]): void {
    if (!this.lost) expect(got.map((item) => item.status)).toEqual(want);
  }
  toString(): string {
    return `${this.describe()}${this.skew ? ` @${this.skew > 0 ? "+" : ""}${this.skew}ms` : ""}${this.lost ? " (reply lost)" : ""}`;
  }
}

/** A control naming ids (cancel, delete, requeue): described by its verb and ids. */
abstract class IdsStep extends Step {
  abstract readonly verb: string;
  constructor(
    readonly ids: string[],
    skew: number,
    lost: boolean,
  ) {
    super(skew, lost);
  }
  describe() {
    return `${this.verb}(${this.ids.join(", ")})`;
  }
}

class Enqueue extends Step {
  constructor(
    readonly items: Array<{ id: string; type: string; group: string; priority: number; delayMs: number }>,
    skew: number,
    lost: boolean,
  ) {
    super(skew, lost);
  }
  async run(world: World, real: Real) {
    count("enqueue");
    const at = this.at(world);
    const inputs = this.items.map(({ id, type, group, priority, delayMs }) => ({
      id,
      type,
      priority,
      delayMs,
      ...(group === "" ? {} : { group }),
    }));
    const got = await this.queue(real).enqueue(inputs, { now: at });
    const want = this.items.map((item, index) => {
      if (world.tasks.has(item.id) || this.items.findIndex((other) => other.id === item.id) !== index) {
        return "duplicate";
      }
      const task: ModelTask = {
        state: item.delayMs > 0 ? "S" : "R",
        type: item.type,
        group: item.group,
        rank: rankOf(item.priority, ++world.seq),
        attempts: 0,
        ran: 0,
        confirmed: false,
        stalls: 0,
        solo: false,
        held: false,
        at: at + item.delayMs,
        token: "",
        unreadable: false,
      };
      world.tasks.set(item.id, task);
      if (task.state === "R" && ordered(task)) chooseHead(world, laneOf(task));
      return "ok";
    });
    this.expectStatuses(got, want);
    await compare(world, real);
  }
  describe() {
    return `enqueue(${JSON.stringify(this.items)})`;
  }
}

class Claim extends Step {
  constructor(
    readonly worker: number,
    readonly count: number,
    /** The room the worker has left for the type "any" (its per-invocation limit), or none. */
    readonly room: number | undefined,
    skew: number,
    lost: boolean,
  ) {
    super(skew, lost);
  }
  async run(world: World, real: Real) {
    count("claim");
    const at = this.at(world);
    // A worker running tasks claims as busy: a task that stalled twice is left for one running none.
    const busy = world.held.some((lease) => lease.worker === this.worker);
    const room: Record<string, number> = this.room === undefined ? {} : { any: this.room };
    if (!world.paused) promote(world, at); // a paused queue's claim returns before it looks at anything
    const types = WORKER_TYPES[this.worker];
    const outcome = await this.queue(real).claimOrNextDue({ count: this.count, now: at, busy, room, types });
    const got: ClaimedTask[] = outcome.tasks;
    await noteQuarantined(world, real);
    // A group whose head this claim quarantined may go on with its next task in the same claim.
    for (const lane of world.pending) chooseHead(world, lane);
    world.pending.clear();
    const takenLane = new Map<string, number>();
    const takenType = new Map<string, number>();
    for (const [index, claimed] of got.entries()) {
      const task = world.tasks.get(claimed.id);
      expect(task, `claimed ${claimed.id}, unknown to the model`).toBeDefined();
      if (!task) return;
      const lane = laneOf(task);
      expect(
        mayRun(world, claimed.id, takenLane.get(lane) ?? 0, takenType.get(task.type) ?? 0, at, busy, room, types),
        `claimed ${claimed.id} against the rules (group ${lane}, type ${task.type}, worker ${this.worker}${busy ? ", busy" : ""})`,
      ).toBe(true);
      if (task.solo) expect(got.length, `${claimed.id} stalled twice: alone`).toBe(1);
      expect(index === 0 || !task.solo).toBe(true);
      expect(claimed.solo, `${claimed.id} runs alone when it stalled twice`).toBe(task.solo);
      takenLane.set(lane, (takenLane.get(lane) ?? 0) + 1);
      takenType.set(task.type, (takenType.get(task.type) ?? 0) + 1);
    }
    for (const claimed of got) {
      const task = world.tasks.get(claimed.id);
      if (!task) return;
      const rules = RULES[task.type];
      if (rules.typeRate) countClaim(world, `@${task.type}`, rules.typeRate.perMs, at);
      if (rules.rate && task.group !== "") countClaim(world, laneOf(task), rules.rate.perMs, at);
      if (world.heads.get(laneOf(task)) === claimed.id) world.heads.delete(laneOf(task));
      task.state = "L";
      task.attempts++;
      task.confirmed = false;
      task.solo = false;
      task.at = claimed.leaseDeadlineMs;
      task.token = claimed.token;
      world.held.push({ worker: this.worker, id: claimed.id, token: claimed.token });
    }
    if (got.length === 0) {
      // A group with a task made unreadable may wait for the claim that quarantines it: not counted.
      const runnable = [...world.tasks.keys()].filter((id) => {
        const task = world.tasks.get(id);
        return task && !world.tainted.has(laneOf(task)) && mayRun(world, id, 0, 0, at, busy, room, types);
      });
      expect(runnable, "a claim returned nothing while these tasks could run").toEqual([]);
    }
    await compare(world, real);
  }
  describe() {
    return `claim(worker ${this.worker}, ${this.count}${this.room === undefined ? "" : `, room any ${this.room}`})`;
  }
}

/** A step on one lease a worker holds, the `pick`-th (modulo): it runs only while some lease is held. */
abstract class HeldStep extends Step {
  constructor(
    readonly pick: number,
    skew: number,
    lost: boolean,
  ) {
    super(skew, lost);
  }
  override check(world: Readonly<World>) {
    return world.held.length > 0;
  }
  /** Takes the picked lease from its worker, which settles or releases it. */
  protected take(world: World) {
    return world.held.splice(this.pick % world.held.length, 1)[0];
  }
}

class Settle extends HeldStep {
  constructor(
    pick: number,
    readonly outcome: "ack" | "retry-now" | "retry-later" | "fail",
    skew: number,
    lost: boolean,
  ) {
    super(pick, skew, lost);
  }
  async run(world: World, real: Real) {
    count(`settle-${this.outcome}`);
    const lease = this.take(world);
    const at = this.at(world);
    const item =
      this.outcome === "ack"
        ? { id: lease.id, token: lease.token, outcome: "ack" as const }
        : this.outcome === "fail"
          ? { id: lease.id, token: lease.token, outcome: "fail" as const, error: "no" }
          : {
              id: lease.id,
              token: lease.token,
              outcome: "retry" as const,
              retryAtMs: this.outcome === "retry-now" ? at : at + 500,
              error: "again",
            };
    const [got] = await this.queue(real).settle([item], { now: at });
    const task = world.tasks.get(lease.id);
    if (task?.state !== "L" || task.token !== lease.token || task.unreadable) {
      if (!this.lost && !task?.unreadable) expect(got.status).not.toBe("ok");
    } else {
      if (!this.lost) expect(got.status).toBe("ok");
      // Its holder settled it: its handler ran (counted once, at its heartbeat when it had one).
      if (!task.confirmed) task.ran++;
      task.confirmed = false;
      if (this.outcome === "ack") task.state = "D";
      else if (this.outcome === "fail" || task.attempts >= MAX_ATTEMPTS) task.state = "F";
      else if (this.outcome === "retry-later") {
        task.state = "S";
        task.at = at + 500;
        task.held = ordered(task);
      } else {
        task.state = "R";
        returned(world, lease.id, task);
      }
      if (task.state === "D" || task.state === "F") {
        task.at = at; // the finished set is ordered by when it finished
        chooseHead(world, laneOf(task));
      }
    }
    await compare(world, real);
  }
  describe() {
    return `settle(#${this.pick}, ${this.outcome})`;
  }
}

class Release extends HeldStep {
  async run(world: World, real: Real) {
    count("release");
    const lease = this.take(world);
    const [got] = await this.queue(real).release([{ id: lease.id, token: lease.token }], { now: this.at(world) });
    const task = world.tasks.get(lease.id);
    if (task && task.state === "L" && task.token === lease.token && !task.unreadable) {
      if (!this.lost) expect(got.status).toBe("ok");
      task.state = "R";
      // Given back unless its handler had started (a confirmed lease keeps its attempt).
      if (!task.confirmed) task.attempts--;
      task.confirmed = false;
      returned(world, lease.id, task);
    } else if (!this.lost && !task?.unreadable) expect(got.status).not.toBe("ok");
    await compare(world, real);
  }
  describe() {
    return `release(#${this.pick})`;
  }
}

/**
 * A worker's heartbeat: its handlers run, and it extends every lease it holds (one call), which
 * confirms each: a reclaim from then on charges its attempt.
 */
class Heartbeat extends Step {
  constructor(
    readonly worker: number,
    skew: number,
    lost: boolean,
  ) {
    super(skew, lost);
  }
  override check(world: Readonly<World>) {
    return world.held.some((lease) => lease.worker === this.worker);
  }
  async run(world: World, real: Real) {
    count("heartbeat");
    const at = this.at(world);
    const leases = world.held.filter((lease) => lease.worker === this.worker);
    const got = await this.queue(real).extend(
      leases.map(({ id, token }) => ({ id, token, leaseMs: LEASE_MS })),
      { now: at },
    );
    const want = leases.map(({ id, token }) => {
      const task = world.tasks.get(id);
      if (!task || task.unreadable) return undefined;
      if (task.state !== "L" || task.token !== token) return "stale_token";
      if (!task.confirmed) task.ran++;
      task.confirmed = true;
      task.at = at + LEASE_MS;
      return "ok";
    });
    if (!this.lost) {
      got.forEach((result, i) => {
        if (want[i] !== undefined) expect(result.status, `heartbeat of ${leases[i].id}`).toBe(want[i]);
      });
    }
    await compare(world, real);
  }
  describe() {
    return `heartbeat(worker ${this.worker})`;
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

/** Time passes, then the reclaimer's tick (at the true clock): expired leases back or FAILED, due tasks READY. */
class Tick extends Step {
  constructor(
    readonly ms: number,
    lost: boolean,
  ) {
    super(0, lost);
  }
  async run(world: World, real: Real) {
    count("tick");
    world.now += this.ms;
    const got = await this.queue(real).tick({ now: world.now });
    let reclaimed = 0;
    let failed = 0;
    const expired = [...world.tasks].filter(
      ([, task]) => task.state === "L" && !task.unreadable && task.at < world.now,
    );
    expired.sort(([a, x], [b, y]) => x.at - y.at || (a < b ? -1 : 1));
    for (const [id, task] of expired) {
      // A stall: a lease never confirmed gives its attempt back (its handler may never have run).
      task.stalls++;
      if (!task.confirmed) task.attempts--;
      const lastRun = task.confirmed && task.attempts >= MAX_ATTEMPTS;
      task.confirmed = false;
      if (lastRun || task.stalls >= MAX_STALLS) {
        task.state = "F";
        task.at = world.now;
        failed++;
        chooseHead(world, laneOf(task));
      } else {
        task.state = "R";
        task.solo = task.stalls >= 2;
        reclaimed++;
        returned(world, id, task);
      }
    }
    world.held = world.held.filter((lease) => world.tasks.get(lease.id)?.state === "L");
    const promoted = promote(world, world.now);
    if (!this.lost && ![...world.tasks.values()].some((task) => task.unreadable && task.state !== "C")) {
      expect({ reclaimed: got.reclaimed, failed: got.reclaimFailed, promoted: got.promoted }).toEqual({
        reclaimed,
        failed,
        promoted,
      });
    }
    await compare(world, real);
  }
  describe() {
    return `tick(+${this.ms} ms)`;
  }
}

class Cancel extends IdsStep {
  readonly verb = "cancel";
  async run(world: World, real: Real) {
    count("cancel");
    const got = await this.queue(real).admin.cancel(this.ids, { now: this.at(world) });
    const seen = new Set<string>();
    const want = this.ids.map((id) => {
      const task = world.tasks.get(id);
      if (!task) return "unknown_id";
      if (seen.has(id) && task.state !== "C") return "already_failed";
      if (task.state === "C") return "corrupt"; // quarantined: still known, its record kept to read
      if (task.unreadable) {
        seen.add(id);
        task.state = "C"; // cancel quarantines what it cannot read
        world.tainted.add(laneOf(task));
        if (world.heads.get(laneOf(task)) === id) world.heads.delete(laneOf(task));
        if (ordered(task)) world.pending.add(laneOf(task));
        world.held = world.held.filter((lease) => lease.id !== id);
        return "corrupt";
      }
      if (task.state === "D") return "already_done";
      if (task.state === "F") return "already_failed";
      seen.add(id);
      const freesTurn = task.state !== "S" || task.held;
      if (task.state === "L" && !task.confirmed) task.attempts--;
      task.confirmed = false;
      task.state = "F";
      task.at = this.at(world);
      task.held = false;
      task.solo = false;
      world.held = world.held.filter((lease) => lease.id !== id);
      if (world.heads.get(laneOf(task)) === id) world.heads.delete(laneOf(task));
      if (ordered(task) && freesTurn) chooseHead(world, laneOf(task));
      return "ok";
    });
    this.expectStatuses(got, want);
    await compare(world, real);
  }
}

class Delete extends IdsStep {
  readonly verb = "delete";
  async run(world: World, real: Real) {
    count("delete");
    const got = await this.queue(real).admin.delete(this.ids, { now: this.at(world) });
    const answered = new Map<string, string>();
    const want = this.ids.map((id) => {
      const known = answered.get(id);
      if (known) return known;
      const task = world.tasks.get(id);
      let status = "ok";
      if (!task) status = "unknown_id";
      else if (task.state === "L")
        status = "leased"; // readable or not: a delete refuses a lease
      else {
        world.tasks.delete(id);
        const lane = laneOf(task);
        if (task.unreadable) world.tainted.add(lane);
        // Its group's place frees only if it held it: the head, or a held retry (readable or not: a
        // parked task deleted unreadable leaves the head let out before it in place).
        if (world.heads.get(lane) === id || (task.state === "S" && task.held)) {
          world.heads.delete(lane);
          if (ordered(task)) world.pending.add(lane);
        }
      }
      answered.set(id, status);
      return status;
    });
    this.expectStatuses(got, want);
    await compare(world, real);
  }
}

class Requeue extends IdsStep {
  readonly verb = "requeue";
  override check(world: Readonly<World>) {
    return this.ids.every((id) => world.tasks.get(id)?.state === "F" && !world.tasks.get(id)?.unreadable);
  }
  async run(world: World, real: Real) {
    count("requeue");
    const got = await this.queue(real).admin.requeue(this.ids, { now: this.at(world) });
    this.expectStatuses(
      got,
      this.ids.map(() => "ok"),
    );
    for (const id of new Set(this.ids)) {
      const task = world.tasks.get(id);
      if (!task) continue;
      task.state = "R";
      task.attempts = 0;
      task.ran = 0;
      task.stalls = 0;
      task.solo = false;
      if (ordered(task)) chooseHead(world, laneOf(task));
    }
    await compare(world, real);
  }
}

class Pause extends Step {
  constructor(
    readonly action: "pause" | "resume",
    readonly type: string | undefined,
    skew: number,
    lost: boolean,
  ) {
    super(skew, lost);
  }
  async run(world: World, real: Real) {
    count(`${this.action}${this.type ? "-type" : ""}`);
    const queue = this.queue(real);
    const options = { now: this.at(world), ...(this.type ? { type: this.type } : {}) };
    if (this.action === "pause") await queue.admin.pause(options);
    else await queue.admin.resume(options);
    if (this.type === undefined) world.paused = this.action === "pause";
    else if (this.action === "pause") world.pausedTypes.add(this.type);
    else world.pausedTypes.delete(this.type);
    await compare(world, real);
  }
  describe() {
    return `${this.action}(${this.type ?? "queue"})`;
  }
}

/** Retention of 0 (trim) or a purge of FAILED: the ids come back as new tasks when enqueued again. */
class Forget extends Step {
  constructor(
    readonly how: "trim" | "purge",
    lost: boolean,
  ) {
    super(0, lost);
  }
  async run(world: World, real: Real) {
    count(this.how);
    if (this.how === "trim") {
      const got = await this.queue(real).trim({ now: world.now, doneRetentionMs: 0, failedRetentionMs: 0 });
      let done = 0;
      let failed = 0;
      // trim reads the done and failed sets alone: a record made unreadable there goes with the rest.
      for (const [id, task] of world.tasks) {
        if (task.at >= world.now) continue;
        if (task.state === "D") done++;
        else if (task.state === "F") failed++;
        else continue;
        world.tasks.delete(id);
        if (task.unreadable) world.tainted.add(laneOf(task));
      }
      if (!this.lost) expect(got).toEqual({ done, failed });
    } else {
      await this.queue(real).admin.purge("failed", { now: world.now });
      // A record made unreadable keeps its first letter: purge deletes it with the other FAILED ones.
      for (const [id, task] of world.tasks) {
        if (task.state !== "F") continue;
        world.tasks.delete(id);
        if (task.unreadable) world.tainted.add(laneOf(task));
      }
    }
    await compare(world, real);
  }
  describe() {
    return this.how;
  }
}

/** A record made unreadable (an operator's edit, a bug elsewhere): its state text no longer parses. */
class Corrupt implements Command {
  constructor(readonly id: string) {}
  check(world: Readonly<World>) {
    const task = world.tasks.get(this.id);
    return task !== undefined && !task.unreadable && task.state !== "C";
  }
  async run(world: World, real: Real) {
    count("corrupt");
    const task = world.tasks.get(this.id);
    if (!task) return;
    const letter = (await real.redis.hget(real.queue.keys.task, `${this.id}:s`))?.[0] ?? "R";
    await real.redis.hset(real.queue.keys.task, `${this.id}:s`, `${letter}|not a state`);
    task.unreadable = true;
    task.bodyless = task.state === "D";
    world.stale.add(this.id);
    world.tainted.add(laneOf(task));
    world.tainted.add(`@${task.type}`);
    world.held = world.held.filter((lease) => lease.id !== this.id);
    await compare(world, real);
  }
  toString() {
    return `corrupt(${this.id})`;
  }
}

class Repair extends Step {
  constructor(
    readonly id: string,
    lost: boolean,
  ) {
    super(0, lost);
  }
  override check(world: Readonly<World>) {
    return world.tasks.get(this.id)?.state === "C";
  }
  async run(world: World, real: Real) {
    count("repair");
    const [got] = await this.queue(real).admin.repair([this.id], { now: world.now });
    const task = world.tasks.get(this.id);
    this.expectStatuses([got], [task?.bodyless ? "unrepairable" : "ok"]);
    if (task && !task.bodyless) {
      // Its state could not be read: READY again with a new rank, at priority 0.
      task.state = "R";
      task.unreadable = false;
      task.attempts = 0;
      task.ran = 0;
      task.stalls = 0;
      task.confirmed = false;
      task.solo = false;
      task.held = false;
      task.rank = rankOf(0, ++world.seq);
      if (ordered(task)) chooseHead(world, laneOf(task));
    }
    await compare(world, real);
  }
  describe() {
    return `repair(${this.id})`;
  }
}

const skew = fc.constantFrom(...SKEWS);
const lost = fc.nat(9).map((n) => n < 2); // one call in five loses its reply
const ids = fc.array(fc.constantFrom(...IDS), { minLength: 1, maxLength: 3 });
const item = fc.record({
  id: fc.constantFrom(...IDS),
  type: fc.constantFrom(...TYPES),
  group: fc.constantFrom(...GROUPS),
  priority: fc.constantFrom(-1, 0, 0, 1),
  delayMs: fc.constantFrom(0, 0, 0, 300),
});
const commands = [
  fc.tuple(fc.array(item, { minLength: 1, maxLength: 5 }), skew, lost).map(([items, s, l]) => new Enqueue(items, s, l)),
  fc
    .tuple(
      fc.integer({ min: 0, max: 2 }),
      fc.integer({ min: 1, max: 4 }),
      fc.constantFrom(undefined, undefined, 0, 1),
      skew,
      lost,
    )
    .map(([w, n, room, s, l]) => new Claim(w, n, room, s, l)),
  fc.tuple(fc.integer({ min: 0, max: 2 }), skew, lost).map(([w, s, l]) => new Heartbeat(w, s, l)),
  fc
    .tuple(fc.nat(), fc.constantFrom("ack", "ack", "retry-now", "retry-later", "fail"), skew, lost)
    .map(([pick, outcome, s, l]) => new Settle(pick, outcome as Settle["outcome"], s, l)),
  fc.tuple(fc.nat(), skew, lost).map(([pick, s, l]) => new Release(pick, s, l)),
  fc.integer({ min: 0, max: 2 }).map((worker) => new Crash(worker)),
  fc.tuple(fc.constantFrom(200, 600, 1_500), lost).map(([ms, l]) => new Tick(ms, l)),
  fc.tuple(ids, skew, lost).map(([list, s, l]) => new Cancel(list, s, l)),
  fc.tuple(ids, skew, lost).map(([list, s, l]) => new Delete(list, s, l)),
  fc.tuple(ids, skew, lost).map(([list, s, l]) => new Requeue(list, s, l)),
  fc
    .tuple(fc.constantFrom("pause", "resume"), fc.constantFrom(undefined, undefined, "rt", "any", "ord"), skew, lost)
    .map(([action, type, s, l]) => new Pause(action as "pause" | "resume", type, s, l)),
  fc.tuple(fc.constantFrom("trim", "purge"), lost).map(([how, l]) => new Forget(how as "trim" | "purge", l)),
  fc.constantFrom(...IDS).map((id) => new Corrupt(id)),
  fc.tuple(fc.constantFrom(...IDS), lost).map(([id, l]) => new Repair(id, l)),
];

describe.each(adapters)("groups, rates and controls, model-based over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);
  const runs = adapter.name === "tcp" ? scale(25, 1_000) : scale(8, 150);
  const maxCommands = scale(40, 100);
  it(
    `keeps every guarantee over ${runs} random sequences of up to ${maxCommands} operations`,
    async () => {
      const run = await checkSequences(commands, { runs, maxCommands }, async (sequence) => {
        const policy = { leaseMs: LEASE_MS, maxAttempts: MAX_ATTEMPTS };
        const store = await open();
        // Each deployment's cold start writes its own types' policies and accepts the other's.
        const typeGroups = {
          ord: { ordered: true },
          two: { concurrency: 2 },
          rt: { rate: { max: 2, perMs: 1_000 }, typeRate: { max: 3, perMs: 1_000 } },
        } as const;
        const declaration = (runs: string[], accepts: string[]) => ({
          policies: Object.fromEntries(runs.map((type) => [type, policy])),
          typeGroups: Object.fromEntries(Object.entries(typeGroups).filter(([type]) => runs.includes(type))),
          acceptTypes: accepts,
          clockSkewMs: 0,
          trustCallerClock: true,
        });
        const queue = await configuredQueue(store, {
          name: uniqueQueueName(),
          ...declaration(DEPLOYMENTS.a, DEPLOYMENTS.b),
        });
        await new Queue(store, { name: queue.name, settings: declaration(DEPLOYMENTS.b, DEPLOYMENTS.a) }).configure();
        const lossy = new Queue(lossyStore(store), { name: queue.name });
        const world: World = {
          now: START,
          seq: 0,
          tasks: new Map(),
          held: [],
          heads: new Map(),
          pending: new Set(),
          paused: false,
          pausedTypes: new Set(),
          windows: new Map(),
          tainted: new Set(),
          stale: new Set(),
        };
        await fc.asyncModelRun(() => ({ model: world, real: { queue, lossy, redis } }), sequence);
      });
      reportModelRun(`guarantees-model-${adapter.name}`, run, tally.take());
    },
    scale(120_000, 3_600_000),
  );
});

// The same guarantees where the unpack limit and every page bound are crossed: 20,000 groups and
// 10,000 leases, each control at its largest batch, a lost reply at that size, the invariants and
// the check after each phase.
describe.each(adapters.filter((adapter) => adapter.name === "tcp"))("at scale, over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);

  it(
    "20,000 groups and 10,000 leases: nothing lost, no group over its limits, the check clean",
    async () => {
      const groups = 10_000; // of each type: 20,000 in all
      const store = await open();
      const queue = await configuredQueue(store, {
        name: uniqueQueueName(),
        policies: { conc: { leaseMs: 120_000, maxAttempts: 3 }, rt: { leaseMs: 120_000, maxAttempts: 3 } },
        typeGroups: { conc: { concurrency: 1 }, rt: { rate: { max: 1, perMs: 60_000 } } },
      });
      const lossy = new Queue(lossyStore(store), { name: queue.name });
      let now = START;
      const clean = async () => {
        const records = await assertConsistent(redis, queue);
        expect(await queue.admin.checkAll({ now }), "leaseq check").toEqual([]);
        return records;
      };
      const claimAll = async (): Promise<ClaimedTask[]> => {
        const all: ClaimedTask[] = [];
        for (;;) {
          const batch = await queue.claim({ count: 1_000, now });
          if (batch.length === 0) return all;
          all.push(...batch);
        }
      };
      const ackAll = async (tasks: ClaimedTask[]) => {
        for (let i = 0; i < tasks.length; i += 1_000) {
          const results = await queue.ack(tasks.slice(i, i + 1_000), { now });
          expect(results.filter((result) => result.status !== "ok")).toEqual([]);
        }
      };
      const tasks = [];
      for (let g = 0; g < groups; g++) {
        for (const type of ["conc", "rt"]) {
          tasks.push({ id: `${type}-${g}-a`, type, group: `${type}-${g}` });
          tasks.push({ id: `${type}-${g}-b`, type, group: `${type}-${g}` });
        }
      }
      for (let i = 0; i < tasks.length; i += 1_000) await queue.enqueue(tasks.slice(i, i + 1_000), { now });

      // Every group's first task runs, no group's second: 20,000 leases, then the rated ones acked.
      const first = await claimAll();
      expect(first).toHaveLength(2 * groups);
      expect(first.every((task) => task.id.endsWith("-a"))).toBe(true);
      await ackAll(first.filter((task) => task.id.startsWith("rt-")));
      const leases = first.filter((task) => task.id.startsWith("conc-"));
      expect(leases).toHaveLength(groups);
      // A claim whose reply is lost, sent again at this size: nothing may run, nothing changes.
      expect(await lossy.claim({ count: 1_000, now })).toEqual([]);
      expect(await redis.zcount(queue.keys.leased, "-inf", "(+inf")).toBe(groups); // the anchor (+inf) aside
      // Claims that meet the rated groups' second tasks (a bounded number each) set them aside.
      for (let i = 0; i < 60 && (await redis.zcard(queue.keys.ready)) > 0; i++) {
        expect(await queue.claim({ count: 1_000, now })).toEqual([]);
      }
      expect(await redis.zcard(queue.keys.groupwait)).toBe(groups); // each rated group waits for its window
      await clean();

      // The rated groups' window opens for all 10,000 at once.
      now += 60_000;
      await queue.tick({ now, limit: 10_000 });
      const second = await claimAll();
      expect(second).toHaveLength(groups);
      expect(second.every((task) => task.id.startsWith("rt-") && task.id.endsWith("-b"))).toBe(true);
      await ackAll(second);
      await clean();

      // The controls at their largest batch over the leases: cancel 1,000 (their groups run their
      // next), delete 1,000 of those next ones while parked or let out, requeue the cancelled.
      const cancelled = leases.slice(0, 1_000).map((task) => task.id);
      expect(
        (await lossy.admin.cancel(cancelled, { now })).filter(
          (r) => r.status !== "ok" && r.status !== "already_failed",
        ),
      ).toEqual([]);
      const deleted = cancelled.map((id) => id.replace(/-a$/, "-b"));
      expect((await queue.admin.delete(deleted, { now })).filter((r) => r.status !== "ok")).toEqual([]);
      expect((await queue.admin.requeue(cancelled, { now })).filter((r) => r.status !== "ok")).toEqual([]);
      await clean();
      // A cancelled holder's ack is refused: its token died with the cancel.
      expect((await queue.ack(leases.slice(0, 1_000), { now })).every((r) => r.status === "stale_token")).toBe(true);

      // The workers crash: one tick reclaims the 9,000 leases left (its largest limit), every group
      // runs again one at a time, and everything ends DONE but the deleted.
      now += 120_000;
      expect((await queue.tick({ now, limit: 10_000 })).reclaimed).toBe(groups - 1_000);
      for (;;) {
        const batch = await claimAll();
        if (batch.length === 0) break;
        const perGroup = new Map<string, number>();
        for (const task of batch)
          perGroup.set(task.id.replace(/-[ab]$/, ""), (perGroup.get(task.id.replace(/-[ab]$/, "")) ?? 0) + 1);
        expect(Math.max(...perGroup.values()), "a group of concurrency 1 ran two at once").toBe(1);
        now += 1;
        await ackAll(batch);
      }
      const stats = await queue.stats({ now });
      expect({
        done: stats.done,
        ready: stats.ready,
        leased: stats.leased,
        failed: stats.failed,
        corrupt: stats.corrupt,
      }).toEqual({
        done: 4 * groups - 1_000,
        ready: 0,
        leased: 0,
        failed: 0,
        corrupt: 0,
      });
      const records = await clean();
      expect([...records.values()].filter((task) => task.state !== "D")).toEqual([]);
    },
    scale(300_000, 600_000),
  );
});
