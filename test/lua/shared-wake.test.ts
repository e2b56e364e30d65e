// Two deployments sharing one queue (each runs its types and accepts the other's): a task's
// wake-up reaches the wake queue of the deployment that runs its type, and one deployment's
// workers (their claims, hand-offs, ticks) neither cover nor consume the other's need
// (docs/wake-ups.md, "Deployments sharing a queue").
import { describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { expectClean } from "../helpers/check.js";
import { adapters, configuredQueue, lossyStore, queueFixture, uniqueQueueName } from "../helpers/stores.js";

const NOW = 1_800_000_000_000;
const A_WAKE = "http://127.0.0.1:4566/000000000000/imports-wake";
const B_WAKE = "http://127.0.0.1:4566/000000000000/reports-wake";

describe.each(adapters)("a queue two deployments share, over $name", (adapter) => {
  const { open } = queueFixture(adapter);

  /** Deployment A runs `alpha`, B runs `beta`; each accepts the other's. Both cold-started. */
  async function deployments(): Promise<{ a: Queue; b: Queue }> {
    const name = uniqueQueueName("shared-wake");
    const store = await open();
    const deploy = (deployment: string, wakeQueueUrl: string, runs: string, accepts: string) =>
      configuredQueue(store, {
        name,
        deployment,
        wakeQueueUrl,
        strictTypes: true,
        policies: { [runs]: { leaseMs: 30_000, maxAttempts: 3 } },
        acceptTypes: [accepts],
      });
    const a = await deploy("imports", A_WAKE, "alpha", "beta");
    const b = await deploy("reports", B_WAKE, "beta", "alpha");
    return { a, b };
  }

  it("2: a task of B's type enqueued while A's worker drains gets a wake-up on B's wake queue", async () => {
    const { a } = await deployments();
    await a.enqueue([{ id: "a-1", type: "alpha" }], { now: NOW });
    // A's worker drains, with room for more: its mark covers A's work...
    expect(await a.claim({ count: 5, now: NOW + 1, types: ["alpha"] })).toHaveLength(1);
    expect((await a.enqueueAndWake([{ id: "a-2", type: "alpha" }], { now: NOW + 2 })).wakeAtMs).toBeUndefined();
    // ...not B's: a producer (of either deployment) is told to wake B's workers, on B's queue.
    const sent = await a.enqueueAndWake([{ id: "b-1", type: "beta" }], { now: NOW + 3 });
    expect(sent).toMatchObject({ wakeAtMs: undefined, wakeTo: [{ atMs: NOW + 3, queueUrl: B_WAKE }] });
    // A's next claim takes A's task, leaves B's, and consumes nothing of B's: A's hand-off arranges
    // nothing for it, and B's wake-up stays arranged (another beta task needs no second one).
    const [next] = await a.claim({ count: 5, now: NOW + 4, types: ["alpha"], woken: true });
    expect(next.id).toBe("a-2");
    expect(await a.handOff({ now: NOW + 5, cutOff: true })).toBeUndefined();
    expect((await a.enqueueAndWake([{ id: "b-2", type: "beta" }], { now: NOW + 6 })).wakeTo).toEqual([]);
    await expectClean(a, NOW + 7);
  });

  it("2: B's worker answers B's wake-up; what B's claims leave is B's to arrange, on B's marks", async () => {
    const { a, b } = await deployments();
    expect((await a.enqueueAndWake([{ id: "b-1", type: "beta" }], { now: NOW })).wakeTo).toEqual([
      { atMs: NOW, queueUrl: B_WAKE },
    ]);
    // The worker that wake-up starts answers it with its first claim, and drains.
    const tasks = await b.claim({ count: 5, now: NOW + 1_000, types: ["beta"], woken: true });
    expect(tasks.map((task) => task.id)).toEqual(["b-1"]);
    // While it drains, more of B's work is covered by B's worker; A's is not (no worker of A runs).
    expect((await a.enqueueAndWake([{ id: "b-2", type: "beta" }], { now: NOW + 1_001 })).wakeTo).toEqual([]);
    expect(await a.enqueueAndWake([{ id: "a-1", type: "alpha" }], { now: NOW + 1_002 })).toMatchObject({
      wakeTo: [{ atMs: NOW + 1_002, queueUrl: A_WAKE }],
    });
    // B's worker settles a retry and stops: it arranges its own wake-up, for its retry's time.
    await b.settle([{ ...tasks[0], outcome: "retry", retryAtMs: NOW + 20_000, error: "later" }], { now: NOW + 1_100 });
    expect(await b.handOff({ now: NOW + 1_200 })).toBe(NOW + 1_200); // b-2 came while it drained
    await expectClean(b, NOW + 1_300);
  });

  it("2: each deployment's hand-off and tick arrange a wake-up for its own next due work, not the other's", async () => {
    const { a, b } = await deployments();
    // A's imports are due first (in 10 s: the enqueue arranged A's wake-up).
    await a.enqueue(
      Array.from({ length: 20 }, (_, i) => ({ id: `a-${i}`, type: "alpha", delayMs: 10_000 + i })),
      { now: NOW },
    );
    // B's worker retries its report in 20 s, behind A's imports in the scheduled set, and stops:
    // its hand-off arranges B's wake-up for then (A's wake-up at 10 s would not start B's worker).
    await a.enqueue([{ id: "b-1", type: "beta" }], { now: NOW });
    const [task] = await b.claim({ count: 5, now: NOW + 1, types: ["beta"], woken: true });
    await b.settle([{ ...task, outcome: "retry", retryAtMs: NOW + 20_000, error: "later" }], { now: NOW + 2 });
    expect(await b.handOff({ now: NOW + 3, horizonMs: 900_000 })).toBe(NOW + 20_000);
    // A's own is arranged already; with A's worker gone, A's hand-off leaves it as it is.
    expect(await a.handOff({ now: NOW + 4, horizonMs: 900_000 })).toBeUndefined();
    // Each reclaimer's tick (trusting no mark but a tick's) arranges its deployment's next work.
    expect((await a.tick({ now: NOW + 5, wakeHorizonMs: 70_000 })).wakeAtMs).toBe(NOW + 10_000);
    expect((await b.tick({ now: NOW + 5, wakeHorizonMs: 70_000 })).wakeAtMs).toBe(NOW + 20_000);
  });

  it("2: a deployment's next work behind more than 32 of the other's: a wake-up no later than it, then the rest of the way", async () => {
    const { a, b } = await deployments();
    await a.enqueue(
      Array.from({ length: 40 }, (_, i) => ({ id: `a-${i}`, type: "alpha", delayMs: 10_000 + i })),
      { now: NOW },
    );
    await a.enqueue([{ id: "b-1", type: "beta", delayMs: 20_000 }], { now: NOW });
    // B's tick reads 32 of the scheduled set: none B's, so B's work comes no sooner than the 32nd.
    expect((await b.tick({ now: NOW + 1, wakeHorizonMs: 70_000 })).wakeAtMs).toBe(NOW + 10_031);
    // The worker that wakes then finds none of its work due; reading on, the next tick finds B's.
    await a.claim({ count: 100, now: NOW + 10_031, types: ["alpha"] });
    expect(await b.claim({ count: 5, now: NOW + 10_032, types: ["beta"], woken: true })).toEqual([]);
    await b.handOff({ now: NOW + 10_033 });
    expect((await b.tick({ now: NOW + 10_034, wakeHorizonMs: 70_000 })).wakeAtMs).toBe(NOW + 20_000);
  });

  it("2: a resume of the queue wakes each deployment with work, each on its own wake queue, when its work is due", async () => {
    const { a } = await deployments();
    await a.admin.pause({ now: NOW });
    await a.enqueue(
      [
        { id: "a-1", type: "alpha" },
        { id: "b-1", type: "beta", delayMs: 30_000 },
      ],
      { now: NOW },
    );
    const resumed = await a.admin.resume({ now: NOW + 1 });
    expect(resumed.wakeAtMs).toBeUndefined();
    expect([...resumed.wakeTo].sort((x, y) => x.queueUrl.localeCompare(y.queueUrl))).toEqual([
      { atMs: NOW + 1, queueUrl: A_WAKE },
      { atMs: NOW + 30_000, queueUrl: B_WAKE },
    ]);
  });

  it("2: a call repeated after a lost reply is told the other deployment's wake-up its first run arranged", async () => {
    const { a } = await deployments();
    const repeated = new Queue(lossyStore(await open()), { name: a.name });
    expect(await repeated.enqueueAndWake([{ id: "b-1", type: "beta" }], { now: NOW })).toMatchObject({
      results: [{ id: "b-1", status: "duplicate" }],
      wakeTo: [{ atMs: NOW, queueUrl: B_WAKE }],
    });
    await repeated.admin.pause({ now: NOW + 1 });
    expect((await repeated.admin.resume({ now: NOW + 2 })).wakeTo).toEqual([{ atMs: NOW + 2, queueUrl: B_WAKE }]);
  });

  it("a deployment alone on its queue keeps the queue's own marks: wake-ups for its own wake queue, as before", async () => {
    const store = await open();
    const a = await configuredQueue(store, {
      name: uniqueQueueName("alone"),
      deployment: "imports",
      wakeQueueUrl: A_WAKE,
      policies: { alpha: { leaseMs: 30_000, maxAttempts: 3 } },
    });
    expect(await a.enqueueAndWake([{ id: "a-1", type: "alpha" }], { now: NOW })).toMatchObject({
      wakeAtMs: NOW,
      wakeTo: [],
    });
  });
});
