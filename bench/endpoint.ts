// The local Upstash endpoint with one large reply: LRANGE of a 300k-element list through the
// endpoint against redis-cli on the same server, and how long a PING waits meanwhile.
// `node --import tsx bench/endpoint.ts` (REDIS_URL, default redis://127.0.0.1:6379; the list
// goes under a unique key that is deleted at the end).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis as UpstashRedis } from "@upstash/redis";
import { Redis } from "ioredis";
import { type LocalUpstash, startLocalUpstash } from "./upstash.js";

const ELEMENTS = 300_000;
const RUNS = 3;
/**
 * What the endpoint must meet with one large reply: the LRANGE within 3 × redis-cli's time, and a
 * PING sent meanwhile answered within 100 ms (one large reply must not stall the other clients).
 */
const TARGET_RATIO = 3;
const TARGET_PING_MS = 100;

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const key = `bench:endpoint:${randomBytes(6).toString("hex")}`;

/** Fills the list in batches, so no single RPUSH is itself a large request. */
async function fill(redis: Redis): Promise<void> {
  const batch = 10_000;
  for (let start = 0; start < ELEMENTS; start += batch) {
    const values = Array.from({ length: Math.min(batch, ELEMENTS - start) }, (_, i) => `element-${start + i}`);
    await redis.rpush(key, ...values);
  }
}

/** Wall time of `redis-cli --no-raw LRANGE key 0 -1`, its output read and discarded. */
function timeRedisCli(): Promise<number> {
  const { hostname, port } = new URL(redisUrl);
  const started = performance.now();
  const child = spawn("redis-cli", ["-h", hostname, "-p", port || "6379", "--no-raw", "LRANGE", key, "0", "-1"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let lines = 0;
  child.stdout.on("data", (chunk: Buffer) => {
    for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, at + 1)) lines++;
  });
  return new Promise((done, fail) => {
    child.once("error", fail);
    child.once("exit", (code) => {
      if (code !== 0) fail(new Error(`redis-cli exited with code ${code}`));
      else if (lines !== ELEMENTS) fail(new Error(`redis-cli printed ${lines} lines, expected ${ELEMENTS}`));
      else done(performance.now() - started);
    });
  });
}

/** Plain fetch of one command; resolves to the raw body (not parsed, so the client costs little). */
async function post(endpoint: LocalUpstash, command: string[]): Promise<string> {
  const response = await fetch(endpoint.url, {
    method: "POST",
    headers: { Authorization: `Bearer ${endpoint.token}` },
    body: JSON.stringify(command),
  });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`${command[0]} answered HTTP ${response.status}: ${body.slice(0, 200)}`);
  return body;
}

/** PINGs one after another while `busy` runs; resolves to each PING's latency in ms. */
async function pingsDuring(endpoint: LocalUpstash, busy: Promise<unknown>): Promise<number[]> {
  let done = false;
  busy.finally(() => {
    done = true;
  });
  const latencies: number[] = [];
  while (!done) {
    const started = performance.now();
    await post(endpoint, ["PING"]);
    latencies.push(performance.now() - started);
  }
  await busy;
  return latencies;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ms = (value: number) => `${value.toFixed(1)} ms`;

const redis = new Redis(redisUrl);
let endpoint: LocalUpstash | undefined;
try {
  await fill(redis);
  // The endpoint in a process of its own, as bench/run.ts runs it: the measuring client's JSON
  // parsing must not count as the endpoint stalling, nor the endpoint's work as the client's.
  const local = await startLocalUpstash(root, redisUrl);
  if ("unavailable" in local) throw new Error(local.unavailable);
  endpoint = local;
  const client = new UpstashRedis({
    url: local.url,
    token: local.token,
    automaticDeserialization: false,
    enableAutoPipelining: false,
    retry: { retries: 0 },
  });
  await client.ping(); // opens the endpoint's first Redis connection before anything is timed

  const cli: number[] = [];
  const ioredis: number[] = [];
  const upstash: number[] = [];
  const fetched: number[] = [];
  const pingMax: number[] = [];
  const pingCounts: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    cli.push(await timeRedisCli());

    let begun = performance.now();
    const direct = await redis.lrange(key, 0, -1);
    ioredis.push(performance.now() - begun);
    if (direct.length !== ELEMENTS) throw new Error(`ioredis got ${direct.length} elements`);

    begun = performance.now();
    const values = await client.lrange(key, 0, -1);
    upstash.push(performance.now() - begun);
    if (values.length !== ELEMENTS) throw new Error(`@upstash/redis got ${values.length} elements`);

    begun = performance.now();
    const lrange = post(local, ["LRANGE", key, "0", "-1"]).then(() => performance.now() - begun);
    const pings = await pingsDuring(local, lrange);
    fetched.push(await lrange);
    pingMax.push(Math.max(...pings));
    pingCounts.push(pings.length);
  }

  const ratio = median(upstash) / median(cli);
  const ioredisRatio = median(upstash) / median(ioredis);
  const ping = median(pingMax);
  console.log(`Local Upstash endpoint: LRANGE of ${ELEMENTS} elements, median of ${RUNS} runs (${redisUrl})`);
  console.log(`  redis-cli --no-raw LRANGE          ${ms(median(cli))}   runs: ${cli.map(ms).join(", ")}`);
  console.log(`  ioredis lrange (direct, reference) ${ms(median(ioredis))}   runs: ${ioredis.map(ms).join(", ")}`);
  console.log(`  endpoint, @upstash/redis lrange    ${ms(median(upstash))}   runs: ${upstash.map(ms).join(", ")}`);
  console.log(`  endpoint, fetch (body not parsed)  ${ms(median(fetched))}   runs: ${fetched.map(ms).join(", ")}`);
  console.log(
    `  slowest PING during the LRANGE     ${ms(ping)}   runs: ${pingMax.map(ms).join(", ")} (${pingCounts.join(", ")} PINGs)`,
  );
  console.log(
    `  target: LRANGE within ${TARGET_RATIO} x redis-cli: ${ratio.toFixed(2)} x -> ${ratio <= TARGET_RATIO ? "met" : "MISSED"} (${ioredisRatio.toFixed(2)} x ioredis)`,
  );
  console.log(
    `  target: concurrent PING within ${TARGET_PING_MS} ms: ${ms(ping)} -> ${ping <= TARGET_PING_MS ? "met" : "MISSED"}`,
  );
} finally {
  await redis.del(key);
  redis.disconnect();
  await endpoint?.close();
}
