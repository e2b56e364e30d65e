// Crash injection: worker processes running the real worker code over the
// Upstash path (the local endpoint) drain a queue fed directly and through SQS batches, while a
// supervisor SIGKILLs them at chosen moments and restarts them, with a reclaimer process running
// (and killed too). Afterwards, a Jepsen-style total-queue check: what went in came out.
import { randomUUID } from "node:crypto";
import { afterAll, expect, it } from "vitest";
import type { TaskInput } from "../../shared/types.js";
import { expectClean, isDrained } from "../helpers/check.js";
import { functionEnv, sqsEvent, sqsRecord } from "../helpers/events.js";
import { assertConsistent } from "../helpers/invariants.js";
import { adapters, configuredQueue, rawClient, uniqueQueueName } from "../helpers/stores.js";
import { chaosSeed, random, report, scale, sleep } from "./helpers/chaos.js";
import { type KillPoint, type SqsMessage, Supervisor } from "./helpers/supervisor.js";

const TASKS = scale(240, 5_000);
const WORKERS = scale(3, 4);
const KILL_BUDGET = scale(10, 200);
const DEADLINE_MS = scale(120_000, 1_200_000);

const upstash = adapters.find((adapter) => adapter.name === "upstash");
const redis = rawClient();
afterAll(() => redis.disconnect());

type Wave = { kind: "direct"; tasks: TaskInput[] } | { kind: "sqs"; message: SqsMessage };

it(
  `loses nothing while ${WORKERS} worker processes and the reclaimer are SIGKILLed and restarted (${TASKS} tasks)`,
  async () => {
    if (!upstash) throw new Error("the upstash adapter is missing from test/helpers/stores.ts");
    const seed = chaosSeed();
    const rng = random(seed);
    const name = uniqueQueueName("crash");
    const store = await upstash.open();
    const queue = await configuredQueue(store, { name, clockSkewMs: 0 });

    // The plan: waves of 20 tasks enqueued directly, or 10 tasks in one SQS message (ids derived
    // from the message id, as the worker does). Types: 80% echo, 10% flaky (fails its first
    // attempt), 10% poison (PermanentError: must end FAILED).
    const typeOf = new Map<string, string>();
    const pickType = () => {
      const roll = rng();
      return roll < 0.8 ? "echo" : roll < 0.9 ? "flaky" : "poison";
    };
    const waves: Wave[] = [];
    for (let planned = 0; planned < TASKS; ) {
      if (waves.length % 2 === 0) {
        const tasks = Array.from({ length: Math.min(20, TASKS - planned) }, (_, i) => ({
          id: `d-${planned + i}`,
          type: pickType(),
          payload: { n: planned + i },
        }));
        for (const task of tasks) typeOf.set(task.id, task.type);
        waves.push({ kind: "direct", tasks });
        planned += tasks.length;
      } else {
        const messageId = randomUUID();
        const tasks = Array.from({ length: Math.min(10, TASKS - planned) }, () => ({ type: pickType() }));
        for (const [index, task] of tasks.entries()) typeOf.set(`${messageId}-${index}`, task.type);
        waves.push({ kind: "sqs", message: { messageId, body: JSON.stringify({ tasks }) } });
        planned += tasks.length;
      }
    }

    const supervisor = new Supervisor({
      // A skew margin on top of the 1 s leases: a worker starved of CPU for a moment (2 cores, the
      // rest of the suite running) keeps its lease, so every duplicate comes from a kill.
      env: functionEnv(upstash, name, { LEASEQ_CLOCK_SKEW_MS: "500" }),
      workers: WORKERS,
      killBudget: KILL_BUDGET,
      // About KILL_BUDGET kills over the run: each task asks two questions, plus the timer.
      killRate: KILL_BUDGET / (3.5 * TASKS),
      maxWorkMs: 8,
      rng,
      sqsEvent: (message) => sqsEvent(sqsRecord(message.body, message.messageId)),
    });
    const startedAt = Date.now();
    let enqueueErrors = 0;
    let drained = false;
    supervisor.start();
    try {
      for (let next = 0; Date.now() - startedAt < DEADLINE_MS; ) {
        if (next < waves.length) {
          const wave = waves[next];
          if (wave.kind === "sqs") supervisor.deliver(wave.message);
          else {
            const result = await queue.enqueue(wave.tasks, { now: Date.now() }).catch(() => undefined);
            if (!result) {
              enqueueErrors++;
              continue; // send the same wave again: enqueue is idempotent
            }
          }
          next++;
          await sleep(30);
          continue;
        }
        if (supervisor.messagesOutstanding === 0 && (await isDrained(queue, Date.now()))) {
          drained = true;
          break;
        }
        await sleep(200);
      }
    } finally {
      supervisor.stopKilling();
      await supervisor.stop();
      await store.close();
    }
    const durationMs = Date.now() - startedAt;
    expect(supervisor.unexpectedExits).toEqual([]);
    expect(drained, `drained within ${DEADLINE_MS} ms (seed ${seed})`).toBe(true);

    // The total-queue check.
    const records = await assertConsistent(redis, queue);
    await expectClean(queue, Date.now());
    const unexpected = [...records.keys()].filter((id) => !typeOf.has(id));
    const lost = [...typeOf.keys()].filter((id) => !["D", "F"].includes(records.get(id)?.state ?? ""));
    const wrongOutcome = [...typeOf].filter(([id, type]) => {
      const record = records.get(id);
      if (type === "poison") return record?.state !== "F" || record.error !== "PermanentError: poison";
      return record?.state !== "D";
    });
    const neverExecuted = [...records].filter(([id, r]) => r.state === "D" && !supervisor.executions.has(id));
    const executedPoison = [...typeOf].filter(([id, type]) => type === "poison" && supervisor.executions.has(id));

    // Every execution but the last of a task must come from a process killed after it ran, before
    // its batch was settled: that is the only way at-least-once may run a task twice here.
    const killPointOf = new Map(supervisor.kills.map((kill) => [kill.incarnation, kill.point]));
    const duplicatesBy: Partial<Record<KillPoint, number>> = {};
    const untraced: string[] = [];
    let executions = 0;
    for (const [id, runs] of supervisor.executions) {
      executions += runs.length;
      for (const run of runs.slice(0, -1)) {
        const killedAt = supervisor.killedAt.get(run.incarnation);
        const point = killPointOf.get(run.incarnation);
        if (killedAt === undefined || killedAt < run.at || point === undefined)
          untraced.push(`${id} by ${run.incarnation}`);
        else duplicatesBy[point] = (duplicatesBy[point] ?? 0) + 1;
      }
    }
    // An attempt is charged only to a started handler, and every handler started is charged or a
    // stall (its worker killed before a heartbeat confirmed the run).
    const startsOf = new Map<string, number>();
    for (const start of supervisor.startLog) startsOf.set(start.id, (startsOf.get(start.id) ?? 0) + 1);
    for (const [id, record] of records) {
      const starts = startsOf.get(id) ?? 0;
      expect(record.attempts, `attempts of ${id} (${starts} handler starts)`).toBeLessThanOrEqual(starts);
      expect(record.attempts + record.stalls, `attempts and stalls of ${id}`).toBeGreaterThanOrEqual(starts);
    }
    const duplicates = executions - supervisor.executions.size;
    const killsBy: Partial<Record<KillPoint, number>> = {};
    for (const kill of supervisor.kills) killsBy[kill.point] = (killsBy[kill.point] ?? 0) + 1;

    report("crash", {
      seed,
      tasks: typeOf.size,
      sqsMessages: waves.filter((wave) => wave.kind === "sqs").length,
      workers: WORKERS,
      kills: supervisor.kills.length,
      killsBy,
      processesStarted: supervisor.spawned,
      handlerStarts: supervisor.starts,
      executions,
      duplicates,
      duplicatesAfterKillAt: duplicatesBy,
      untracedDuplicates: untraced.length,
      lost: lost.length,
      unexpected: unexpected.length,
      done: [...records.values()].filter((r) => r.state === "D").length,
      failed: [...records.values()].filter((r) => r.state === "F").length,
      enqueueErrors,
      invocationErrors: supervisor.invocationErrors.length,
      durationMs,
    });
    expect(lost, `lost (seed ${seed})`).toEqual([]);
    expect(unexpected, "unexpected ids").toEqual([]);
    expect(wrongOutcome, "tasks in the wrong terminal state").toEqual([]);
    expect(neverExecuted, "DONE without an execution").toEqual([]);
    expect(executedPoison, "poison tasks reported as executed").toEqual([]);
    expect(untraced, `duplicates not traced to a kill (seed ${seed})`).toEqual([]);
    expect(supervisor.ackedMessages.size).toBe(waves.filter((wave) => wave.kind === "sqs").length);
    expect(supervisor.kills.length).toBeGreaterThan(0);
  },
  DEADLINE_MS + 60_000,
);
