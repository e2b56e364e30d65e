// Flow control's cost at enqueue (docs/flow-control.md): the same batch of 100 tasks enqueued on
// fresh queues of a redis-server of its own, plain, with a dedupe key per task and with a debounce
// key per task (each a new key: the common case, one task per key per window). Per batch: the
// server time of the EVALSHA (INFO commandstats usec, the commands inside included) and the
// commands run (commandstats calls, the EVALSHA included). Prints the ratios to plain and, with
// --write, records them in bench/results.json under `flowControl`.
// Usage: node --import tsx bench/flow-control.ts [rounds] [--write]
import { readFileSync, writeFileSync } from "node:fs";
import { Queue } from "../shared/queue.js";
import { TcpStore } from "../shared/stores/tcp.js";
import type { TaskInput } from "../shared/types.js";
import { commandCalls, commandDelta, startBenchRedis } from "./redis.js";
import { median } from "./stats.js";

const rounds = Number(process.argv[2] ?? 200);
const write = process.argv.includes("--write");
const BATCH = 100;
const WARMUP = 20;
const redis = await startBenchRedis();
const store = TcpStore.fromUrl(redis.url);
const usecOf = (info: string) => Number(/^cmdstat_evalsha:calls=\d+,usec=(\d+)/m.exec(info)?.[1] ?? 0);
const payload = { to: "someone@example.com", doc: 42 };
const VARIANTS: Record<string, (i: number) => Partial<TaskInput>> = {
  plain: () => ({}),
  dedupe: (i) => ({ dedupe: { key: `user:${i}`, ttlMs: 60_000 } }),
  debounce: (i) => ({ debounce: { key: `doc:${i}`, delayMs: 1_000, maxWaitMs: 10_000 } }),
};
try {
  const usec: Record<string, number[]> = {};
  const commands: Record<string, number[]> = {};
  for (let round = 0; round < rounds + WARMUP; round++) {
    for (const [variant, flow] of Object.entries(VARIANTS)) {
      const queue = new Queue(store, { name: `flow-${variant}-${round}` });
      await queue.stats({ now: Date.now() });
      const tasks = Array.from({ length: BATCH }, (_, i) => ({ id: `t${i}`, type: "email", payload, ...flow(i) }));
      const beforeInfo = await redis.admin.info("commandstats");
      const before = await commandCalls(redis.admin);
      await queue.enqueue(tasks, { now: Date.now() });
      const after = await commandCalls(redis.admin);
      const afterInfo = await redis.admin.info("commandstats");
      if (round >= WARMUP) {
        (usec[variant] ??= []).push(usecOf(afterInfo) - usecOf(beforeInfo));
        // Two INFO calls of ours fall between the two snapshots (the second commandCalls and afterInfo aside).
        (commands[variant] ??= []).push(commandDelta(before, after, 1).total);
      }
      await queue.drop({ confirm: queue.name });
    }
  }
  const result: Record<string, unknown> = { batch: BATCH, rounds };
  for (const variant of Object.keys(VARIANTS)) {
    result[variant] = { usecPerBatch: median(usec[variant]), commandsPerBatch: median(commands[variant]) };
  }
  const plain = result.plain as { usecPerBatch: number; commandsPerBatch: number };
  for (const variant of ["dedupe", "debounce"]) {
    const own = result[variant] as { usecPerBatch: number; commandsPerBatch: number };
    result[`${variant}CpuRatio`] = Number((own.usecPerBatch / plain.usecPerBatch).toFixed(2));
    result[`${variant}CommandRatio`] = Number((own.commandsPerBatch / plain.commandsPerBatch).toFixed(2));
  }
  result.target = "<= 1.3x of plain (Redis CPU)";
  console.log(JSON.stringify(result, null, 2));
  if (write) {
    const path = new URL("./results.json", import.meta.url);
    const results = JSON.parse(readFileSync(path, "utf8"));
    results.flowControl = { enqueue: result };
    writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
  }
} finally {
  await store.close();
  await redis.stop();
}
