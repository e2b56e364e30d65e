// Groups under crashes: ten worker processes running the real worker code over the
// Upstash path drain groups of four kinds while a supervisor SIGKILLs them and the reclaimer, and
// tasks are retried. Afterwards: nothing lost; in an ordered group no task started before the one
// before it was DONE or FAILED; no group ever had more tasks leased than its concurrency; a group
// whose card is declined (retried with backoff, then FAILED) did not stop the others; a group's
// rate held within one interval of slack.
import { afterAll, expect, it } from "vitest";
import type { TaskInput } from "../../shared/types.js";
import { expectClean, isDrained } from "../helpers/check.js";
import { functionEnv, sqsEvent, sqsRecord } from "../helpers/events.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, configuredQueue, rawClient, uniqueQueueName } from "../helpers/stores.js";
import { chaosSeed, random, report, scale, sleep } from "./helpers/chaos.js";
import { type Execution, Supervisor } from "./helpers/supervisor.js";

const ORDERED_GROUPS = scale(10, 40);
const ORDERED_TASKS = scale(6, 25);
const PAIR_GROUPS = scale(3, 10);
const PAIR_TASKS = scale(8, 30);
const RATED_TASKS = scale(12, 40);
const WORKERS = 10;
const KILL_BUDGET = scale(8, 120);
const DEADLINE_MS = scale(150_000, 900_000);
const RATE = { max: 5, perMs: 1_000 }; // the "rated" type's group rate (test/chaos/fixtures/chaos-child.ts)

const upstash = adapters.find((adapter) => adapter.name === "upstash");
const redis = rawClient();
afterAll(() => redis.disconnect());

it(
  `keeps order, concurrency and rate per group while ${WORKERS} workers are SIGKILLed and tasks retried`,
  async () => {
    if (!upstash) throw new Error("the upstash adapter is missing from test/helpers/stores.ts");
    const seed = chaosSeed();
    const rng = random(seed);
    const name = uniqueQueueName("groups");
    const store = await upstash.open();
    // The group policies the workers declare (test/chaos/fixtures/chaos-child.ts), written before
    // the first task as a deployed worker's cold start would.
    const queue = await configuredQueue(store, {
      name,
      clockSkewMs: 0,
      typeGroups: {
        "in-order": { ordered: true },
        pair: { concurrency: 2 },
        rated: { rate: RATE },
        declined: { ordered: true },
      },
    });

    // The plan. The declined group goes first: its first task fails all its attempts, with backoff.
    const groupOf = new Map<string, string>();
    const orderOf = new Map<string, string[]>(); // ordered groups: their tasks in enqueue order
    const add = (tasks: TaskInput[], task: TaskInput) => {
      tasks.push(task);
      const key = `${task.type}/${task.group}`;
      groupOf.set(task.id, key);
      orderOf.set(key, [...(orderOf.get(key) ?? []), task.id]);
    };
    const plan: TaskInput[] = [];
    add(plan, { id: "declined-0", type: "declined", group: "acme", payload: { decline: true } });
    add(plan, { id: "declined-1", type: "declined", group: "acme", payload: {} });
    const rest: TaskInput[] = [];
    for (let i = 0; i < Math.max(ORDERED_TASKS, PAIR_TASKS, RATED_TASKS); i++) {
      for (let g = 0; g < ORDERED_GROUPS && i < ORDERED_TASKS; g++) {
        add(rest, { id: `o${g}-${i}`, type: "in-order", group: `c${g}`, payload: { flaky: rng() < 0.25 } });
      }
      for (let g = 0; g < PAIR_GROUPS && i < PAIR_TASKS; g++) {
        add(rest, { id: `p${g}-${i}`, type: "pair", group: `p${g}`, payload: {} });
      }
      if (i < RATED_TASKS) add(rest, { id: `r-${i}`, type: "rated", group: "api", payload: {} });
    }
    const waves = [plan];
    for (let i = 0; i < rest.length; i += 20) waves.push(rest.slice(i, i + 20));

    const supervisor = new Supervisor({
      env: functionEnv(upstash, name, { LEASEQ_CLOCK_SKEW_MS: "500" }),
      workers: WORKERS,
      killBudget: KILL_BUDGET,
      killRate: KILL_BUDGET / (1.5 * groupOf.size),
      maxWorkMs: 8,
      rng,
      sqsEvent: (message) => sqsEvent(sqsRecord(message.body, message.messageId)),
    });

    // Sampled all along: the most tasks each group had leased at once.
    const mostLeased = new Map<string, number>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        let cursor: string | undefined = "0";
        while (cursor !== undefined) {
          const page: Awaited<ReturnType<typeof queue.admin.groups>> = await queue.admin.groups({
            cursor,
            count: 1000,
          });
          for (const group of page.groups) {
            const key = `${group.type}/${group.group}`;
            mostLeased.set(key, Math.max(mostLeased.get(key) ?? 0, group.leased));
          }
          cursor = page.next;
        }
        await sleep(20);
      }
    })();

    const startedAt = Date.now();
    let drained = false;
    supervisor.start();
    try {
      for (let next = 0; Date.now() - startedAt < DEADLINE_MS; ) {
        if (next < waves.length) {
          if (await queue.enqueue(waves[next], { now: Date.now() }).catch(() => undefined)) next++;
          await sleep(20);
          continue;
        }
        if (await isDrained(queue, Date.now())) {
          drained = true;
          break;
        }
        await sleep(200);
      }
    } finally {
      sampling = false;
      await sampler;
      supervisor.stopKilling();
      await supervisor.stop();
      await store.close();
    }
    expect(supervisor.unexpectedExits).toEqual([]);
    expect(drained, `drained within ${DEADLINE_MS} ms (seed ${seed})`).toBe(true);

    const records = await assertConsistent(redis, queue);
    await expectClean(queue, Date.now());
    const lost = [...groupOf.keys()].filter((id) => !["D", "F"].includes(records.get(id)?.state ?? ""));
    expect(lost, `lost (seed ${seed})`).toEqual([]);
    // Declined on every attempt (or its third lease lost to a kill): FAILED after its 3 attempts.
    expect(records.get("declined-0")).toMatchObject({ state: "F", attempts: 3 });
    expect(records.get("declined-0")?.error).toMatch(/^(Error: card declined|lease expired after attempt 3 of 3)$/);
    const notDone = [...groupOf.keys()].filter((id) => id !== "declined-0" && records.get(id)?.state !== "D");
    expect(
      notDone,
      `tasks that should be DONE (seed ${seed}): ${notDone.map((id) => JSON.stringify({ id, ...records.get(id) })).join(", ")}`,
    ).toEqual([]);

    // Order: in an ordered group, every start of a task came after the task before it finished.
    const startsOf = new Map<string, Execution[]>();
    for (const start of supervisor.startLog) startsOf.set(start.id, [...(startsOf.get(start.id) ?? []), start]);
    const outOfOrder: string[] = [];
    for (const [key, ids] of orderOf) {
      if (!key.startsWith("in-order/") && !key.startsWith("declined/")) continue;
      for (let i = 1; i < ids.length; i++) {
        const finishedAt = records.get(ids[i - 1])?.at ?? Number.POSITIVE_INFINITY;
        for (const start of startsOf.get(ids[i]) ?? []) {
          if (start.at < finishedAt)
            outOfOrder.push(`${ids[i]} started ${finishedAt - start.at} ms before ${ids[i - 1]} finished`);
        }
      }
    }
    expect(outOfOrder, `order per group (seed ${seed})`).toEqual([]);
    const retried = [...records].filter(([id, task]) => groupOf.get(id)?.startsWith("in-order/") && task.attempts > 1);
    expect(retried.length, "ordered tasks that were retried").toBeGreaterThan(0);

    // Concurrency: what the sampler saw leased, and the handlers that ran at once in a pair group.
    const over = [...mostLeased].filter(
      ([key, most]) => most > (key.startsWith("pair/") ? 2 : key.startsWith("rated/") ? Infinity : 1),
    );
    expect(over, "groups seen with more tasks leased than their concurrency").toEqual([]);
    const executedAt = new Map<string, number>();
    for (const runs of supervisor.executions.values()) {
      for (const run of runs) executedAt.set(`${run.id}.${run.attempt}.${run.incarnation}`, run.at);
    }
    let mostRunning = 0;
    for (let g = 0; g < PAIR_GROUPS; g++) {
      const spans = supervisor.startLog
        .filter((start) => groupOf.get(start.id) === `pair/p${g}`)
        .map((start) => ({
          from: start.at,
          to:
            executedAt.get(`${start.id}.${start.attempt}.${start.incarnation}`) ??
            supervisor.killedAt.get(start.incarnation) ??
            Number.POSITIVE_INFINITY,
        }));
      for (const span of spans) {
        const running = spans.filter((other) => other.from <= span.from && other.to > span.from).length;
        mostRunning = Math.max(mostRunning, running);
      }
    }
    expect(mostRunning, "handlers of one pair group running at once").toBeLessThanOrEqual(2);

    // A declined card does not stall the others: while its first task was being retried (from its
    // first start to the start of the task after it), other groups' tasks kept starting.
    const declinedFrom = Math.min(...(startsOf.get("declined-0") ?? []).map((start) => start.at));
    const declinedTo = Math.min(...(startsOf.get("declined-1") ?? []).map((start) => start.at));
    // (How many depends on the machine's pace, and the others may run out of work before the wait
    // ends: a stall would start none, and none from its start.)
    const othersBetween = (from: number, to: number) =>
      supervisor.startLog.filter(
        (start) => !groupOf.get(start.id)?.startsWith("declined/") && start.at > from && start.at < to,
      ).length;
    const middle = (declinedFrom + declinedTo) / 2;
    expect(declinedTo - declinedFrom, "the declined task's retries took their backoff").toBeGreaterThan(600);
    expect(othersBetween(declinedFrom, middle), "other groups' starts in the wait's first half").toBeGreaterThan(0);
    expect(othersBetween(declinedFrom, declinedTo), "other groups' starts in the wait").toBeGreaterThanOrEqual(5);

    // Rate: in any span of one interval, at most twice the rate's max claims (fixed windows). The
    // rate counts claims, by the claim's `now`; each started attempt was one claim (the handlers of
    // a batch start one after another, so starts alone may bunch later than their claims).
    const ratedStarts = supervisor.startLog.filter((start) => groupOf.get(start.id) === "rated/api");
    for (const start of ratedStarts) expect(start.claimedAt, `claim time of ${start.id}`).toBeTypeOf("number");
    const rated = ratedStarts.map((start) => start.claimedAt ?? 0);
    let mostInInterval = 0;
    for (const at of rated) {
      mostInInterval = Math.max(mostInInterval, rated.filter((other) => other >= at && other < at + RATE.perMs).length);
    }
    expect(mostInInterval, `rated claims within ${RATE.perMs} ms`).toBeLessThanOrEqual(2 * RATE.max);
    const ratedSpan = Math.max(...rated) - Math.min(...rated);
    expect(rated.length, "rated claims over their span").toBeLessThanOrEqual(RATE.max * (ratedSpan / RATE.perMs + 2));

    report("groups", {
      seed,
      tasks: groupOf.size,
      workers: WORKERS,
      kills: supervisor.kills.length,
      handlerStarts: supervisor.starts,
      retriedOrdered: retried.length,
      mostPairRunning: mostRunning,
      declinedRetryMs: declinedTo - declinedFrom,
      othersWhileDeclined: othersBetween(declinedFrom, declinedTo),
      ratedMostPerInterval: mostInInterval,
      ratedStarts: rated.length,
      ratedSpanMs: ratedSpan,
      durationMs: Date.now() - startedAt,
    });
    expect(supervisor.kills.length).toBeGreaterThan(0);
  },
  DEADLINE_MS + 60_000,
);
