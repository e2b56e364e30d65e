// Model-based testing of flow control (docs/flow-control.md): fast-check generates sequences of
// enqueues with dedupe, debounce, throttle (drop and defer) and singleton on a few keys with windows
// of a few seconds, plain enqueues, claims, acks, fails, ticks and time passing by an explicit
// `now`; any enqueue through a store that loses the reply and sends the call again. A small model says what each key allows: each enqueue's answer (ok, duplicate, throttled,
// the task it replaced), each task's state after every step, that a singleton key never has two
// tasks running, and that a claim takes every task that may run (up to its count). After every
// step the real states agree with the model, the storage invariants hold and `leaseq check` is clean.
// Two deployments share the queue, each claiming only its own type.
import fc from "fast-check";
import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import type { ClaimedTask, EnqueueResult, TaskInput, TaskState } from "../../shared/types.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, configuredQueue, lossyStore, storeFixture, uniqueQueueName } from "../helpers/stores.js";
import { checkSequences, operationTally, reportModelRun, scale } from "./helpers/chaos.js";

const START = 1_800_000_000_000;
const TTL_MS = 3_000;
const DELAY_MS = 1_000;
const MAX_WAIT_MS = 4_000;
const PER_MS = 2_000;
const KEYS = ["k1", "k2", "p1"];
/**
 * Two deployments share the queue, each running its own type and accepting the other's: "sync"
 * (deployment a) and "push" (deployment b). A key's tasks are of one type (the keys "p..." push's),
 * and a claim takes only its deployment's type.
 */
const TYPE_OF_DEPLOYMENT = { a: "sync", b: "push" } as const;
const typeOfKey = (key: string) => (key.startsWith("p") ? "push" : "sync");
const MODES = ["dedupe", "debounce", "throttle", "defer", "singleton", "plain"] as const;
type Mode = (typeof MODES)[number];

type Letter = "R" | "S" | "L" | "D" | "F";
interface ModelTask {
  state: Letter;
  type: "sync" | "push";
  /** S: when it falls due. */
  at: number;
  attempts: number;
  /** The singleton key it runs under, if any. */
  singleton?: string;
}
interface World {
  now: number;
  seq: number;
  tasks: Map<string, ModelTask>;
  /** Replaced tasks: gone for good. */
  gone: Set<string>;
  dedupe: Map<string, { id: string; until: number }>;
  debounce: Map<string, { id: string; start: number; end: number }>;
  throttle: Map<string, number>;
  singleton: Map<string, string>;
  leases: Map<string, ClaimedTask>;
}
interface Real {
  queue: Queue;
  /** The same queue through a store that loses every reply and sends the call again. */
  lossy: Queue;
  redis: Redis;
}

type Command = fc.AsyncCommand<World, Real>;

const STATE_NAME: Record<Letter, TaskState> = { R: "ready", S: "scheduled", L: "leased", D: "done", F: "failed" };
const tally = operationTally();
const count = tally.count;

/** Due scheduled tasks are READY once a claim or a tick promotes them. */
function promote(world: World): void {
  for (const task of world.tasks.values()) if (task.state === "S" && task.at <= world.now) task.state = "R";
}

/** Whether a task waits, never claimed: what debounce (SCHEDULED only) and singleton replace. */
function waiting(task: ModelTask | undefined): boolean {
  return task !== undefined && task.attempts === 0 && (task.state === "R" || task.state === "S");
}

/** After every step: every task's state as the model says, the invariants, the check clean. */
async function agree(world: World, real: Real): Promise<void> {
  for (const [id, task] of world.tasks) {
    const info = await real.queue.admin.inspect(id);
    expect(info?.state, `task ${id}`).toBe(STATE_NAME[task.state]);
  }
  for (const id of world.gone) expect(await real.queue.admin.inspect(id), `replaced ${id}`).toBeUndefined();
  await assertConsistent(real.redis, real.queue);
  expect(await real.queue.admin.checkAll({ now: world.now }), "leaseq check").toEqual([]);
}

/**
 * One task of an enqueue call, as the model decides it (a later task of a call sees what an earlier
 * one did, as a later call would): its input and the answer it must get.
 */
function decide(world: World, mode: Mode, key: string, now: number): { input: TaskInput; want: EnqueueResult } {
  const id = `t${++world.seq}`;
  const type = typeOfKey(key);
  const input: TaskInput = { id, type, payload: { n: world.seq } };
  if (mode === "dedupe") input.dedupe = { key, ttlMs: TTL_MS };
  if (mode === "debounce") input.debounce = { key, delayMs: DELAY_MS, maxWaitMs: MAX_WAIT_MS };
  if (mode === "throttle") input.throttle = { key, perMs: PER_MS };
  if (mode === "defer") input.throttle = { key, perMs: PER_MS, onLimit: "defer" };
  if (mode === "singleton") input.singleton = { key };
  const want: EnqueueResult = { id, status: "ok", state: "ready" };
  let added: ModelTask | undefined = { state: "R", type, at: now, attempts: 0 };
  let replaced: string | undefined;
  if (mode === "dedupe") {
    const held = world.dedupe.get(key);
    if (held && held.until > now) {
      want.status = "duplicate";
      want.existingId = held.id;
      const first = world.tasks.get(held.id);
      want.state = first && STATE_NAME[first.state];
      added = undefined;
    } else {
      world.dedupe.set(key, { id, until: now + TTL_MS });
    }
  } else if (mode === "debounce") {
    const held = world.debounce.get(key);
    let start = now;
    let end = now + MAX_WAIT_MS;
    if (held && held.end > now) {
      const task = world.tasks.get(held.id);
      if (task && waiting(task) && task.state === "S") {
        replaced = held.id;
        start = held.start;
        end = held.end;
      }
    }
    const at = Math.min(now + DELAY_MS, end);
    added = { state: "S", type, at, attempts: 0 };
    want.state = "scheduled";
    world.debounce.set(key, { id, start, end });
  } else if (mode === "throttle" || mode === "defer") {
    const free = world.throttle.get(key) ?? 0;
    if (now < free && mode === "throttle") {
      want.status = "throttled";
      want.state = undefined;
      added = undefined;
    } else {
      const at = Math.max(now, free);
      if (at > now) {
        added = { state: "S", type, at, attempts: 0 };
        want.state = "scheduled";
      }
      world.throttle.set(key, at + PER_MS);
    }
  } else if (mode === "singleton") {
    const last = world.singleton.get(key);
    if (last && waiting(world.tasks.get(last))) replaced = last;
    added = { state: "R", type, at: now, attempts: 0, singleton: key };
    world.singleton.set(key, id);
  }
  if (replaced) {
    want.replaced = replaced;
    world.tasks.delete(replaced);
    world.gone.add(replaced);
  }
  if (added) world.tasks.set(id, added);
  return { input, want };
}

/**
 * An enqueue call of 1-3 tasks, each with its mode and key (the flows reach the script as runs: a
 * call mixing modes, numbers and plain tasks takes several). A lost call's tasks have keys of their
 * own: a repeat re-decides a task a later one of its call replaced (docs/flow-control.md).
 */
class Enqueue implements Command {
  constructor(
    readonly entries: ReadonlyArray<readonly [Mode, string]>,
    readonly lost: boolean,
  ) {}
  check = () => true;
  async run(world: World, real: Real): Promise<void> {
    const now = world.now;
    const decided = this.entries.map(([mode, key]) => {
      count(`enqueue-${mode}${this.lost ? "-lost" : ""}`);
      return decide(world, mode, key, now);
    });
    if (this.entries.length > 1) count(`enqueue-batch-of-${this.entries.length}`);
    // A call repeated after a lost reply: what it enqueued is a known id now (a duplicate, as every
    // repeated enqueue answers), and what it refused it refuses again; nothing changes twice.
    const answers = decided.map(({ want }) =>
      this.lost && want.status === "ok" ? { id: want.id, status: "duplicate", state: want.state } : want,
    );
    const inputs = decided.map(({ input }) => input);
    expect(await (this.lost ? real.lossy : real.queue).enqueue(inputs, { now })).toEqual(answers);
    await agree(world, real);
  }
  toString = () =>
    `enqueue(${this.entries.map(([mode, key]) => `${mode} ${key}`).join(", ")}${this.lost ? " lost" : ""})`;
}

class Claim implements Command {
  constructor(
    readonly count: number,
    readonly deployment: keyof typeof TYPE_OF_DEPLOYMENT,
  ) {}
  check = () => true;
  async run(world: World, real: Real): Promise<void> {
    count("claim");
    promote(world);
    // What may run: every READY task, but one per singleton key and none of a key already running.
    const running = new Set(
      [...world.tasks.values()].filter((task) => task.state === "L").map((task) => task.singleton),
    );
    const keys = new Set<string>();
    let eligible = 0;
    const type = TYPE_OF_DEPLOYMENT[this.deployment];
    for (const task of world.tasks.values()) {
      if (task.state !== "R" || task.type !== type) continue;
      if (task.singleton !== undefined) {
        if (running.has(task.singleton) || keys.has(task.singleton)) continue;
        keys.add(task.singleton);
      }
      eligible++;
    }
    const claimed = await real.queue.claim({ count: this.count, now: world.now, types: [type] });
    expect(claimed.length, "a claim takes what may run, up to its count").toBe(Math.min(this.count, eligible));
    for (const task of claimed) {
      const model = world.tasks.get(task.id);
      expect(model?.state, `claimed ${task.id}`).toBe("R");
      expect(model?.type, `deployment ${this.deployment} claimed ${task.id}`).toBe(type);
      if (model?.singleton !== undefined) {
        expect(running.has(model.singleton), `a second task of singleton ${model.singleton}`).toBe(false);
        running.add(model.singleton);
      }
      if (model) {
        model.state = "L";
        model.attempts++;
      }
      world.leases.set(task.id, task);
    }
    await agree(world, real);
  }
  toString = () => `claim(${this.count}, deployment ${this.deployment})`;
}

class Settle implements Command {
  constructor(
    readonly pick: number,
    readonly outcome: "ack" | "fail",
  ) {}
  check = (world: Readonly<World>) => world.leases.size > 0;
  async run(world: World, real: Real): Promise<void> {
    count(this.outcome);
    const leases = [...world.leases.values()];
    const lease = leases[this.pick % leases.length];
    const item =
      this.outcome === "ack"
        ? { id: lease.id, token: lease.token, outcome: "ack" as const }
        : { id: lease.id, token: lease.token, outcome: "fail" as const, error: "no" };
    const [result] = await real.queue.settle([item], { now: world.now });
    expect(result.status).toBe("ok");
    world.leases.delete(lease.id);
    const task = world.tasks.get(lease.id);
    if (task) task.state = this.outcome === "ack" ? "D" : "F";
    await agree(world, real);
  }
  toString = () => `${this.outcome}(${this.pick})`;
}

class Pass implements Command {
  constructor(
    readonly ms: number,
    readonly tick: boolean,
  ) {}
  check = () => true;
  async run(world: World, real: Real): Promise<void> {
    count(this.tick ? "tick" : "time");
    world.now += this.ms;
    if (this.tick) {
      await real.queue.tick({ now: world.now });
      promote(world);
    }
    await agree(world, real);
  }
  toString = () => `${this.tick ? "tick" : "pass"}(${this.ms})`;
}

const commands: fc.Arbitrary<Command>[] = [
  fc
    .tuple(
      fc.array(fc.tuple(fc.constantFrom(...MODES), fc.constantFrom(...KEYS)), { minLength: 1, maxLength: 3 }),
      fc.boolean(),
    )
    .map(([entries, lost]) => {
      // A lost call's tasks each have a key of their own (see Enqueue).
      const own = lost
        ? entries.filter(([, key], i) => entries.findIndex(([, other]) => other === key) === i)
        : entries;
      return new Enqueue(own, lost) as Command;
    }),
  fc
    .tuple(fc.integer({ min: 1, max: 3 }), fc.constantFrom("a" as const, "b" as const))
    .map(([n, deployment]) => new Claim(n, deployment) as Command),
  fc
    .tuple(fc.nat(), fc.constantFrom("ack" as const, "ack" as const, "fail" as const))
    .map(([pick, outcome]) => new Settle(pick, outcome) as Command),
  fc.tuple(fc.integer({ min: 100, max: 2_500 }), fc.boolean()).map(([ms, tick]) => new Pass(ms, tick) as Command),
];

describe.each(adapters)("flow control, model-based over $name", (adapter) => {
  const { redis, open } = storeFixture(adapter);
  const runs = scale(adapter.name === "tcp" ? 25 : 8, 300);
  const maxCommands = scale(40, 80);

  it(
    `answers and moves as the model of each key says over ${runs} random sequences of up to ${maxCommands} operations`,
    async () => {
      const run = await checkSequences(commands, { runs, maxCommands }, async (sequence) => {
        const store = await open();
        // Each deployment's cold start writes its own type's policy and accepts the other's.
        const policy = { leaseMs: 3_600_000, maxAttempts: 3 };
        const queue = await configuredQueue(store, {
          name: uniqueQueueName(),
          policies: { sync: policy },
          acceptTypes: ["push"],
          clockSkewMs: 0,
        });
        await new Queue(store, {
          name: queue.name,
          settings: { policies: { push: policy }, acceptTypes: ["sync"], clockSkewMs: 0, trustCallerClock: true },
        }).configure();
        const world: World = {
          now: START,
          seq: 0,
          tasks: new Map(),
          gone: new Set(),
          dedupe: new Map(),
          debounce: new Map(),
          throttle: new Map(),
          singleton: new Map(),
          leases: new Map(),
        };
        const lossy = new Queue(lossyStore(store), { name: queue.name });
        await fc.asyncModelRun(() => ({ model: world, real: { queue, lossy, redis } }), sequence);
      });
      reportModelRun(`flow-model-${adapter.name}`, run, tally.take());
    },
    scale(120_000, 3_600_000),
  );
});
