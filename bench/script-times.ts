// Server time of each leaseq script on one batch: 20 tasks enqueued, claimed and acked, repeated on
// fresh queues of a redis-server of its own. Each script runs alone between two reads of INFO
// commandstats (the usec of FCALL and EVALSHA, the commands inside included; SLOWLOG would add its own cost to
// every command inside a script). Where a change to lua/ moves the cost per task, this says which
// script it moved. Usage: node --import tsx bench/script-times.ts [rounds] [payloadBytes]
import { Queue } from "../shared/queue.js";
import { TcpStore } from "../shared/stores/tcp.js";
import { startBenchRedis } from "./redis.js";
import { median } from "./stats.js";
import { table } from "./table.js";

const rounds = Number(process.argv[2] ?? 100);
const payloadBytes = Number(process.argv[3] ?? 54);
const BATCH = 20;
const redis = await startBenchRedis();
const store = TcpStore.fromUrl(redis.url);
try {
  const times = new Map<string, number[]>();
  const evalshaMicros = async () => {
    const info = await redis.admin.info("commandstats");
    const usec = (command: string) =>
      Number(new RegExp(`^cmdstat_${command}:calls=\\d+,usec=(\\d+)`, "m").exec(info)?.[1] ?? 0);
    return usec("fcall") + usec("evalsha");
  };
  const timed = async (name: string, work: () => Promise<unknown>, keep: boolean) => {
    const before = await evalshaMicros();
    await work();
    const micros = (await evalshaMicros()) - before;
    if (keep) times.set(name, [...(times.get(name) ?? []), micros]);
  };
  const payload = { to: "someone@example.com", pad: "x".repeat(Math.max(0, payloadBytes - 36)) };
  for (let round = 0; round < rounds + 10; round++) {
    const queue = new Queue(store, { name: `times-${round}` });
    await queue.stats({ now: Date.now() }); // loads the scripts' connection
    const now = Date.now();
    const tasks = Array.from({ length: BATCH }, (_, i) => ({ id: `t${i}`, type: "email", payload }));
    const keep = round >= 10;
    let batch: Awaited<ReturnType<Queue["claim"]>> = [];
    await timed("enqueue", () => queue.enqueue(tasks, { now }), keep);
    await timed("claim", async () => (batch = await queue.claim({ count: BATCH, now })), keep);
    await timed("settle (ack)", () => queue.ack(batch, { now }), keep);
    await queue.admin.drop({ confirm: queue.name });
  }
  // The commands inside the scripts, over every measured round.
  const inner: string[][] = [];
  for (const match of (await redis.admin.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (
      ["evalsha", "eval", "info", "config|set", "config|resetstat", "ping", "unlink", "script|load"].includes(match[1])
    )
      continue;
    inner.push([match[1], match[2], (Number(match[3]) / ((rounds + 10) * BATCH)).toFixed(2)]);
  }
  const rows = [...times].map(([name, micros]) => [
    name,
    median(micros).toFixed(0),
    (median(micros) / BATCH).toFixed(1),
  ]);
  const total = [...times.values()].reduce((sum, micros) => sum + median(micros) / BATCH, 0);
  console.log(`server time per call (median of ${rounds}), batches of ${BATCH}, ${payloadBytes}-byte payloads:\n`);
  console.log(table(["script", "µs per call", "µs per task"], [...rows, ["all three", "", total.toFixed(1)]]));
  console.log("\nthe commands inside them (every round):\n");
  console.log(table(["command", "calls", "µs per task"], inner));
} finally {
  await store.close();
  await redis.stop();
}
