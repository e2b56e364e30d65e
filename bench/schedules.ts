// The reclaimer's schedule planning with 10,000 schedules (docs/schedules.md): the Redis time of one
// reclaimer run (its tick, then the plan calls when a schedule is due), in all and per call, on a
// redis-server of the benchmark's own. Each call's time is FCALL's (or EVALSHA's) usec in INFO commandstats read
// just before and after it (the commands inside the script included; Redis runs nothing else while
// a script runs, so the longest call is the longest stall any other client sees).
// Cases: no slot due (10,000 daily schedules), the steady state of 10,000 hourly schedules spread
// over the hour (one run plans the ~2/60 of them due within its 70 s), and the worst case of all
// 10,000 due in one run (every one at the same minute), which makes 10,000 tasks.
import type { Redis } from "ioredis";
import { Queue } from "../shared/queue.js";
import type { Store } from "../shared/store.js";
import { TcpStore } from "../shared/stores/tcp.js";
import type { BenchRedis } from "./redis.js";

const SCHEDULES = 10_000;
const HORIZON_MS = 70_000; // the construct's default: a 1-minute period + 10 s
const T0 = Date.parse("2026-12-02T10:00:30.000Z");

export interface ScheduleTickCase {
  case: string;
  schedules: number;
  slotsMade: number;
  calls: number;
  totalMs: number;
  maxCallMs: number;
  /** Each call: its script and ms. */
  perCall: string;
}

async function evalshaMicros(admin: Redis): Promise<number> {
  const info = await admin.info("commandstats");
  const usec = (command: string) =>
    Number(new RegExp(`^cmdstat_${command}:calls=\\d+,usec=(\\d+)`, "m").exec(info)?.[1] ?? 0);
  return usec("fcall") + usec("evalsha");
}

/** A store that times each script call by the server's own count (INFO before and after). */
function timedStore(inner: Store, admin: Redis, calls: number[], names: string[]): Store {
  return {
    async evalScript(script, keys, args) {
      const before = await evalshaMicros(admin);
      const reply = await inner.evalScript(script, keys, args);
      calls.push((await evalshaMicros(admin)) - before);
      names.push(script.name);
      return reply;
    },
    close: () => inner.close(),
  };
}

async function oneCase(
  redis: BenchRedis,
  name: string,
  define: (i: number) => { cron: string } | { every: number },
): Promise<ScheduleTickCase> {
  const store = TcpStore.fromUrl(redis.url);
  const queue = new Queue(store, { name: `bench-sched-${name.replace(/[^A-Za-z0-9]+/g, "-")}` });
  await queue.configure({ policies: { report: { leaseMs: 60_000, maxAttempts: 3 } } });
  for (let i = 0; i < SCHEDULES; i++) {
    await queue.schedules.set(`s${i}`, { ...define(i), type: "report", payload: { n: i } }, { now: T0 - 120_000 });
  }
  // The steady state: the run a minute before planned up to its horizon.
  await queue.schedules.plan({ now: T0 - 60_000, horizonMs: HORIZON_MS });
  const calls: number[] = [];
  const names: string[] = [];
  const timed = new Queue(timedStore(store, redis.admin, calls, names), { name: queue.name });
  // One reclaimer run: the tick, then planning when the tick says a schedule is due.
  const tick = await timed.tick({ now: T0, limit: 500, wakeHorizonMs: HORIZON_MS }); // the reclaimer's step
  let made = 0;
  if (tick.planAtMs !== undefined && tick.planAtMs <= T0 + HORIZON_MS) {
    made = (await timed.schedules.plan({ now: T0, horizonMs: HORIZON_MS })).made;
  }
  await queue.admin.drop({ confirm: queue.name });
  await store.close();
  return {
    case: name,
    schedules: SCHEDULES,
    slotsMade: made,
    calls: calls.length,
    totalMs: calls.reduce((sum, micros) => sum + micros, 0) / 1000,
    maxCallMs: Math.max(...calls) / 1000,
    perCall: calls.map((micros, i) => `${names[i]} ${(micros / 1000).toFixed(2)}`).join(", "),
  };
}

export async function runScheduleTicks(redis: BenchRedis, log: (line: string) => void): Promise<ScheduleTickCase[]> {
  const cases: ScheduleTickCase[] = [];
  // Daily at 03:00 in Berlin: nothing due in a 10:00 run.
  cases.push(await oneCase(redis, "none due (daily)", () => ({ cron: "0 3 * * *" })));
  log(`  ${JSON.stringify(cases.at(-1))}`);
  // Hourly, at minute i % 60: a run plans those of the next 70 s.
  cases.push(await oneCase(redis, "hourly, spread over the hour", (i) => ({ cron: `${i % 60} * * * *` })));
  log(`  ${JSON.stringify(cases.at(-1))}`);
  // Every minute, all at the same second: every run makes one slot of each, 10,000 tasks.
  cases.push(await oneCase(redis, "all due in one run (every minute)", () => ({ every: 60_000 })));
  log(`  ${JSON.stringify(cases.at(-1))}`);
  return cases;
}
