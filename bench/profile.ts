// Where leaseq's Redis time goes: runs the batch-20 workload on a redis-server of its own with
// SLOWLOG recording every command (threshold 0), then splits server time by script and by the
// commands run inside them. Usage: node --import tsx bench/profile.ts [tasks] [groups]: with groups, the
// tasks are spread over that many groups of concurrency 1 (the groups section's workload).
import { LIBRARY, SCRIPTS } from "../shared/scripts.js";
import { TcpStore } from "../shared/stores/tcp.js";
import { leaseqContender } from "./leaseq.js";
import { flush, startBenchRedis } from "./redis.js";
import { median, percentile } from "./stats.js";
import { table } from "./table.js";
import { makeTasks } from "./workload.js";

/** A script is told apart by its function's name (FCALL's first argument) or its SHA (EVALSHA's). */
const SCRIPT_BY_SHA = new Map([
  ...Object.values(SCRIPTS).map((script): [string, string] => [script.sha, script.name]),
  ...[...LIBRARY.functions].map(([script, name]): [string, string] => [name, script]),
]);
const SCRIPT_CALLS = new Set(["evalsha", "eval", "fcall", "fcall_ro"]);

const tasks = Number(process.argv[2] ?? 20_000);
const groups = process.argv[3] ? Number(process.argv[3]) : undefined;
const redis = await startBenchRedis();
try {
  const open = (queueName: string) =>
    leaseqContender({ openStore: () => TcpStore.fromUrl(redis.url), queueName, batchSize: 20, consumers: 4, groups });
  for (const [round, count] of [2_000, tasks].entries()) {
    await flush(redis);
    const contender = await open(`profile-${round}`);
    await redis.admin.config("SET", "slowlog-max-len", String(tasks * 4));
    await redis.admin.config("SET", "slowlog-log-slower-than", "0");
    await redis.admin.slowlog("RESET");
    await contender.enqueue(makeTasks(0, count));
    await contender.drain();
    await redis.admin.config("SET", "slowlog-log-slower-than", "-1");
    await contender.close();
    if (round === 0) continue; // warm-up
    const entries = (await redis.admin.call("SLOWLOG", "GET", "-1")) as Array<[number, number, number, string[]]>;
    const byScript = new Map<string, number[]>();
    for (const [, , micros, args] of entries) {
      const name = args[0].toLowerCase();
      if (!SCRIPT_CALLS.has(name)) continue;
      const script = SCRIPT_BY_SHA.get(args[1]) ?? (name === "eval" ? "eval (first run)" : args[1]);
      byScript.set(script, [...(byScript.get(script) ?? []), micros]);
    }
    const rows = [...byScript].map(([script, micros]) => {
      const total = micros.reduce((a, b) => a + b, 0);
      return [
        script,
        String(micros.length),
        median(micros).toFixed(0),
        percentile(micros, 99).toFixed(0),
        (total / count).toFixed(1),
      ];
    });
    console.log(
      `${count} tasks${groups ? ` over ${groups} groups` : ""}, batch 20, 4 consumers; server time from SLOWLOG (µs):\n`,
    );
    console.log(table(["script", "calls", "p50 µs/call", "p99 µs/call", "µs per task"], rows));
    const stats = await redis.admin.info("commandstats");
    const inner: string[][] = [];
    for (const match of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
      if (
        SCRIPT_CALLS.has(match[1]) ||
        ["function|load", "info", "config|set", "slowlog|reset", "slowlog|get", "flushall", "ping"].includes(match[1])
      )
        continue;
      inner.push([match[1], match[2], (Number(match[3]) / count).toFixed(2)]);
    }
    console.log("\nCommands inside the scripts (whole run incl. warm-up, µs per task of this round):\n");
    console.log(table(["command", "calls", "µs per task"], inner));
  }
} finally {
  await redis.stop();
}
