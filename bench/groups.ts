// The groups section: the throughput of 10,000 tasks spread over 1,000 groups of
// concurrency 1 against the same tasks without groups, in interleaved rounds of one run; the
// commands each costs per task; and how many claims a tenant's single task waits while another
// tenant of the same priority has 100,000 waiting.
import { Queue } from "../shared/queue.js";
import { TcpStore } from "../shared/stores/tcp.js";
import { LOAD_BATCH } from "./contender.js";
import { leaseqContender } from "./leaseq.js";
import { type BenchRedis, flush } from "./redis.js";
import { HEADLINE_BATCH } from "./settings.js";
import { type Spread, spread } from "./stats.js";
import { num, table, withSpread } from "./table.js";
import { runThroughput, type ThroughputResult } from "./throughput.js";

export const GROUPED_TASKS = 10_000;
export const GROUP_COUNT = 1_000;

export interface GroupsResult {
  tasks: number;
  groups: number;
  batchSize: number;
  consumers: number;
  ungrouped: ThroughputResult;
  grouped: ThroughputResult;
  /** Grouped tasks/s over ungrouped, round by round. */
  throughputRatio: Spread;
  commandsRatio: Spread;
  heavyTasks: number;
  /** Claims (of HEADLINE_BATCH) that ran between the light tenant's enqueue and the claim that took it. */
  lightTenantClaimsWaited: number;
  /** The same without groups: the light task waits behind the heavy tenant's backlog. */
  lightTenantClaimsWaitedWithoutGroups: number;
}

/** How many claims run before the one that returns the light tenant's task. */
async function lightTenantWait(url: string, heavyTasks: number, withGroups: boolean): Promise<number> {
  const store = TcpStore.fromUrl(url);
  const queue = new Queue(store, { name: `bench-light-${process.pid}-${withGroups ? "g" : "u"}` });
  try {
    for (let from = 0; from < heavyTasks; from += LOAD_BATCH) {
      const batch = Array.from({ length: Math.min(LOAD_BATCH, heavyTasks - from) }, (_, i) => ({
        id: `heavy-${from + i}`,
        type: "sync",
        ...(withGroups ? { group: "heavy-tenant" } : {}),
      }));
      await queue.enqueue(batch, { now: Date.now() });
    }
    await queue.enqueue([{ id: "light", type: "sync", ...(withGroups ? { group: "light-tenant" } : {}) }], {
      now: Date.now(),
    });
    for (let claims = 0; ; claims++) {
      const claimed = await queue.claim({ count: HEADLINE_BATCH, now: Date.now() });
      if (claimed.length === 0) throw new Error("the light tenant's task was never claimed");
      if (claimed.some((task) => task.id === "light")) return claims;
      await queue.ack(claimed, { now: Date.now() });
    }
  } finally {
    await queue.admin.drop({ confirm: queue.name });
    await store.close();
  }
}

export async function runGroups(
  redis: BenchRedis,
  options: { rounds: number; warmupTasks: number; consumers: number; heavyTasks: number; log: (line: string) => void },
): Promise<GroupsResult> {
  const open = (groups: number | undefined) => (queueName: string) =>
    leaseqContender({
      openStore: () => TcpStore.fromUrl(redis.url),
      queueName,
      batchSize: HEADLINE_BATCH,
      consumers: options.consumers,
      groups,
    });
  const [ungrouped, grouped] = await runThroughput(
    redis,
    [
      {
        key: `leaseq b${HEADLINE_BATCH} no groups`,
        system: "leaseq",
        batchSize: HEADLINE_BATCH,
        consumers: options.consumers,
        open: open(undefined),
      },
      {
        key: `leaseq b${HEADLINE_BATCH} ${GROUP_COUNT} groups`,
        system: "leaseq",
        batchSize: HEADLINE_BATCH,
        consumers: options.consumers,
        open: open(GROUP_COUNT),
      },
    ],
    { tasks: GROUPED_TASKS, warmupTasks: options.warmupTasks, rounds: options.rounds, log: options.log },
  );
  await flush(redis);
  options.log(`  light tenant: one task behind another tenant's ${options.heavyTasks} (with groups, then without)`);
  const waited = await lightTenantWait(redis.url, options.heavyTasks, true);
  const waitedWithout = await lightTenantWait(redis.url, options.heavyTasks, false);
  const paired = (a: Spread, b: Spread) => spread(a.rounds.map((value, i) => value / b.rounds[i]));
  return {
    tasks: GROUPED_TASKS,
    groups: GROUP_COUNT,
    batchSize: HEADLINE_BATCH,
    consumers: options.consumers,
    ungrouped,
    grouped,
    throughputRatio: paired(grouped.tasksPerSec, ungrouped.tasksPerSec),
    commandsRatio: paired(grouped.commandsPerTask, ungrouped.commandsPerTask),
    heavyTasks: options.heavyTasks,
    lightTenantClaimsWaited: waited,
    lightTenantClaimsWaitedWithoutGroups: waitedWithout,
  };
}

/** results.json → groups: the groups figures, with their targets. */
export function groupsJson(g: GroupsResult) {
  const ratio = g.throughputRatio.median;
  const commands = g.commandsRatio.median;
  return {
    tasks: g.tasks,
    groups: g.groups,
    concurrencyPerGroup: 1,
    batchSize: g.batchSize,
    consumers: g.consumers,
    tasksPerSec1000Groups: Math.round(g.grouped.tasksPerSec.median),
    ungroupedTasksPerSec: Math.round(g.ungrouped.tasksPerSec.median),
    throughputRatio: Number(ratio.toFixed(3)),
    commandsPerTaskGrouped: Number(g.grouped.commandsPerTask.median.toFixed(3)),
    commandsPerTaskUngrouped: Number(g.ungrouped.commandsPerTask.median.toFixed(3)),
    commandsRatio: Number(commands.toFixed(3)),
    heavyTasks: g.heavyTasks,
    lightTenantClaimsWaited: g.lightTenantClaimsWaited,
    lightTenantClaimsWaitedWithoutGroups: g.lightTenantClaimsWaitedWithoutGroups,
    targets: [
      { name: "tasksPerSec1000Groups / ungrouped", target: "≥ 0.7", measured: ratio, met: ratio >= 0.7 },
      { name: "commandsPerTaskGrouped / ungrouped", target: "≤ 1.5", measured: commands, met: commands <= 1.5 },
      {
        name: "lightTenantClaimsWaited",
        target: "≤ 1",
        measured: g.lightTenantClaimsWaited,
        met: g.lightTenantClaimsWaited <= 1,
      },
    ],
    rounds: {
      groupedTasksPerSec: g.grouped.tasksPerSec.rounds.map(Math.round),
      ungroupedTasksPerSec: g.ungrouped.tasksPerSec.rounds.map(Math.round),
    },
  };
}

/** The groups table, as printed and pasted into docs/benchmarks.md. */
export function renderGroups(g: GroupsResult): string {
  const json = groupsJson(g);
  return [
    `Groups: ${g.tasks} tasks, claim batch ${g.batchSize}, ${g.consumers} consumers (median (min–max) of rounds):`,
    "",
    table(
      ["case", "tasks/s", "commands/task", "Redis CPU µs/task"],
      [g.ungrouped, g.grouped].map((t) => [
        t.key,
        withSpread(t.tasksPerSec),
        num(t.commandsPerTask.median),
        num(t.redisCpuUsPerTask.median),
      ]),
    ),
    "",
    table(
      ["target", "wanted", "measured", "met"],
      json.targets.map((t) => [t.name, t.target, num(Number(t.measured)), t.met ? "yes" : "NO"]),
    ),
    "",
    `Light tenant: ${g.lightTenantClaimsWaited} claims waited with groups, ` +
      `${g.lightTenantClaimsWaitedWithoutGroups} without (behind ${g.heavyTasks} tasks of one other tenant).`,
  ].join("\n");
}
