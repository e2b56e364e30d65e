// Flow control's cost at enqueue (docs/flow-control.md): the same batch of 100 tasks enqueued on
// fresh queues of a redis-server of its own, plain, with a dedupe key per task and with a debounce
// key per task (each a new key: the common case, one task per key per window). A debounced task is
// SCHEDULED (it runs delayMs later), so debounce is compared with a plain enqueue of the same tasks
// delayed by the same delayMs, dedupe with a plain enqueue of READY tasks. Per batch: the server
// time of the FCALL or EVALSHA (INFO commandstats usec, the commands inside included) and the commands run
// (commandstats calls, the FCALL included). Prints the ratios and, with --write, records them in
// bench/results.json under `flowControl.enqueue` (the rest of `flowControl` kept).
// With --callgrind, the same batches on a redis-server under valgrind's callgrind: the instructions
// Redis executes per batch (bench/valgrind-redis.ts), which do not move with the machine's pace as
// its microseconds do (2-3x between runs on a shared machine); fewer rounds (default 5).
// Usage: node --import tsx bench/flow-control.ts [rounds] [--write] [--callgrind], or
// npm run bench -- --flow-control [--write] [--callgrind]
import { Queue } from "../shared/queue.js";
import { TcpStore } from "../shared/stores/tcp.js";
import type { TaskInput } from "../shared/types.js";
import { commandCalls, commandDelta, startBenchRedis } from "./redis.js";
import { mergeResults, readResults } from "./results-file.js";
import { median } from "./stats.js";
import { startCallgrindRedis } from "./valgrind-redis.js";

const callgrind = process.argv.includes("--callgrind");
const rounds = Number(/^\d+$/.test(process.argv[2] ?? "") ? process.argv[2] : callgrind ? 5 : 200);
const write = process.argv.includes("--write");
const BATCH = 100;
const DELAY_MS = 1_000;
const TARGET = 1.3;
const WARMUP_ROUNDS = callgrind ? 1 : 20;
const IN_USE_BATCHES = 5;
const counted = callgrind ? await startCallgrindRedis() : undefined;
const redis = counted ?? (await startBenchRedis());
const store = TcpStore.fromUrl(redis.url);
const usecOf = (info: string) =>
  ["fcall", "evalsha"]
    .map((command) => Number(new RegExp(`^cmdstat_${command}:calls=\\d+,usec=(\\d+)`, "m").exec(info)?.[1] ?? 0))
    .reduce((a, b) => a + b, 0);
const payload = { to: "someone@example.com", doc: 42 };
const VARIANTS: Record<string, (i: number) => Partial<TaskInput>> = {
  plain: () => ({}),
  plainDelayed: () => ({ delayMs: DELAY_MS }),
  dedupe: (i) => ({ dedupe: { key: `user:${i}`, ttlMs: 60_000 } }),
  debounce: (i) => ({ debounce: { key: `doc:${i}`, delayMs: DELAY_MS, maxWaitMs: 10_000 } }),
};
// Each flow-controlled variant against the plain enqueue of the same tasks in the same state.
const BASELINE: Record<string, string> = { dedupe: "plain", debounce: "plainDelayed" };

/** One sample list per variant. */
function samples(): Record<string, number[]> {
  return Object.fromEntries(Object.keys(VARIANTS).map((variant) => [variant, []]));
}

/**
 * The batch on a fresh queue (its first), or on one with `backlog` tasks waiting (a queue in use):
 * there the mean of `batches` batches in a row, so the Lua garbage collector's steps, which fall on
 * some calls and not others, weigh on each as they do over time.
 */
async function measure(backlog: number, batches: number) {
  const usec = samples();
  const commands = samples();
  for (let round = 0; round < rounds + WARMUP_ROUNDS; round++) {
    for (const [variant, flow] of Object.entries(VARIANTS)) {
      const queue = new Queue(store, { name: `flow-${variant}-${round}` });
      await queue.stats({ now: Date.now() });
      for (let from = 0; from < backlog; from += 1000) {
        const waiting = Array.from({ length: Math.min(1000, backlog - from) }, (_, i) => ({
          id: `w${from + i}`,
          type: "email",
          payload,
        }));
        await queue.enqueue(waiting, { now: Date.now() });
      }
      // `batches` batches one after another, each of new ids and keys: their mean.
      const enqueueAll = async () => {
        for (let b = 0; b < batches; b++) {
          const tasks = Array.from({ length: BATCH }, (_, i) => ({
            id: `t${b}-${i}`,
            type: "email",
            payload,
            ...flow(b * BATCH + i),
          }));
          await queue.enqueue(tasks, { now: Date.now() });
        }
      };
      const beforeInfo = await redis.admin.info("commandstats");
      const before = await commandCalls(redis.admin);
      const instructions = counted ? await counted.count(enqueueAll) : await enqueueAll().then(() => 0);
      const after = await commandCalls(redis.admin);
      const afterInfo = await redis.admin.info("commandstats");
      if (round >= WARMUP_ROUNDS) {
        usec[variant].push((counted ? instructions : usecOf(afterInfo) - usecOf(beforeInfo)) / batches);
        // Two INFO calls of ours fall between the two snapshots (the second commandCalls and afterInfo aside).
        commands[variant].push(commandDelta(before, after, 1).total / batches);
      }
      await queue.admin.drop({ confirm: queue.name });
    }
  }
  const result: Record<string, unknown> = {
    batch: BATCH,
    batchesPerRound: batches,
    rounds,
    debounceDelayMs: DELAY_MS,
    backlog,
  };
  const unit = counted ? "instructionsPerBatch" : "usecPerBatch";
  for (const variant of Object.keys(VARIANTS)) {
    result[variant] = { [unit]: median(usec[variant]), commandsPerBatch: median(commands[variant]) };
  }
  let met = true;
  for (const [variant, baseline] of Object.entries(BASELINE)) {
    const own = result[variant] as Record<string, number>;
    const base = result[baseline] as Record<string, number>;
    const cpu = Number((own[unit] / base[unit]).toFixed(2));
    const commandRatio = Number((own.commandsPerBatch / base.commandsPerBatch).toFixed(2));
    result[`${variant}CpuRatio`] = cpu;
    result[`${variant}CommandRatio`] = commandRatio;
    met &&= cpu <= TARGET && commandRatio <= TARGET;
  }
  result.comparedWith =
    "dedupe: plain (READY tasks); debounce: plainDelayed (the same tasks with delayMs, SCHEDULED as debounced ones are)";
  result.target = `<= ${TARGET}x of the plain enqueue of the same batch (Redis CPU and commands)`;
  result.met = met;
  return result;
}

try {
  // A queue in use, then a fresh one (its first batch: the format mark written first makes its task
  // hash a hash table before the batch's fields go in).
  const inUse = await measure(1_000, IN_USE_BATCHES);
  console.log(JSON.stringify(inUse, null, 2));
  const fresh = await measure(0, 1);
  console.log(JSON.stringify(fresh, null, 2));
  if (write) {
    const measured = { inUse, fresh, measuredBy: counted ? "callgrind instructions" : "INFO commandstats usec" };
    const flowControl = readResults().flowControl as Record<string, unknown> | undefined;
    mergeResults({ flowControl: { ...flowControl, [counted ? "enqueueInstructions" : "enqueue"]: measured } });
  }
} finally {
  await store.close();
  await redis.stop();
}
