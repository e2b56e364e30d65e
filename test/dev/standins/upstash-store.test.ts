// The Upstash adapter (shared/stores/upstash.ts) over the local endpoint, in front of a private
// redis-server: SCRIPT FLUSH and INFO commandstats must not touch the shared test server.
import { inspect } from "node:util";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../../dev/standins/upstash/index.js";
import { ScriptArgumentError, StoreError, toQueueError } from "../../../shared/errors.js";
import { scriptKeys } from "../../../shared/keys.js";
import { Queue } from "../../../shared/queue.js";
import { SCRIPTS } from "../../../shared/scripts.js";
import { UPSTASH_LIBRARY, UpstashStore, upstashScript } from "../../../shared/stores/upstash.js";
import { configProblems } from "../../helpers/config-errors.js";
import { type StartedRedis, startRedisServer } from "../../helpers/redis-server.js";
import { uniqueQueueName } from "../../helpers/stores.js";

const NOW = 1_800_000_000_000;
const NO_BACKOFF = { retries: 2, backoffMs: () => 0 };

let server: StartedRedis;
let redis: Redis;
let endpoint: UpstashEndpoint;
const stores: UpstashStore[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url);
  endpoint = await startUpstashEndpoint({ redisUrl: server.url });
});
afterAll(async () => {
  await endpoint.close();
  redis.disconnect();
  await server.stop();
});
afterEach(async () => {
  endpoint.faults.clear();
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

function openQueue(options: { timeoutMs?: number } = {}) {
  const store = new UpstashStore({ url: endpoint.url, token: endpoint.token, retry: NO_BACKOFF, ...options });
  stores.push(store);
  return { store, queue: new Queue(store, { name: uniqueQueueName("upstash") }) };
}

/** Calls of `command` since the server started, from INFO commandstats. */
async function calls(command: string): Promise<number> {
  const info = await redis.info("commandstats");
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, "m").exec(info)?.[1] ?? 0);
}

/** A request running script `name`: by its function (FCALL) or, without Functions, by its SHA. */
const isScript = (name: keyof typeof SCRIPTS) => (command: readonly string[]) =>
  command[1] === UPSTASH_LIBRARY.functions.get(name) || command[1] === upstashScript(SCRIPTS[name]).sha;
/** Answers FCALL as a database without Functions does. */
const NO_FCALL = { kind: "status", status: 400, error: "ERR unknown command 'FCALL'" } as const;

describe("UpstashStore", () => {
  it("validates its options, reporting every problem at once", () => {
    expect(configProblems(() => new UpstashStore({ url: "redis://x", token: "", timeoutMs: 0 }))).toHaveLength(3);
  });

  it("loads the library when the database lacks it (here after FUNCTION FLUSH), then calls by name", async () => {
    const { queue, store } = openQueue();
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    await redis.call("FUNCTION", "FLUSH");
    const [loadBefore, fcallBefore] = [await calls("function\\|load"), await calls("fcall")];
    await queue.enqueue([{ id: "b", type: "t" }], { now: NOW }); // not found, loaded, called again
    await queue.enqueue([{ id: "c", type: "t" }], { now: NOW }); // by name
    expect((await calls("function\\|load")) - loadBefore).toBe(1);
    expect((await calls("fcall")) - fcallBefore).toBe(3); // the one that found no function, its resend, the next
    expect(store.functions).toBe("yes");
    expect((await queue.stats({ now: NOW })).ready).toBe(3);
  });

  it("without Functions on the database, falls back to EVAL on NOSCRIPT, then runs by SHA again", async () => {
    const { queue, store } = openQueue();
    endpoint.faults.add({ command: "FCALL", action: NO_FCALL });
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    await redis.script("FLUSH");
    const [evalBefore, evalshaBefore] = [await calls("eval"), await calls("evalsha")];
    await queue.enqueue([{ id: "b", type: "t" }], { now: NOW }); // NOSCRIPT, then EVAL loads it
    await queue.enqueue([{ id: "c", type: "t" }], { now: NOW }); // by SHA again
    expect((await calls("eval")) - evalBefore).toBe(1);
    expect((await calls("evalsha")) - evalshaBefore).toBe(2);
    expect((await queue.stats({ now: NOW })).ready).toBe(3);
    expect(store.functions).toBe("no");
  });

  it("keeps the Redis error code and never echoes the token, the script body or a payload", async () => {
    const { queue } = openQueue();
    const payload = { secret: "PAYLOAD-4f1c-do-not-leak" };
    await queue.enqueue([{ id: "w", type: "t" }], { now: NOW }); // a queue of this format
    await redis.del(queue.keys.task);
    await redis.set(queue.keys.task, "not a hash"); // every script then fails inside Redis
    await redis.call("FUNCTION", "FLUSH"); // so the failing call follows a load carrying the whole library
    const error = await queue.enqueue([{ id: "x", type: "t", payload }], { now: NOW }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    // The script's guard answers Redis's own error, so its code survives (over TCP too).
    expect((error as StoreError).redisCode).toBe("WRONGTYPE");
    expect((error as StoreError).message).toMatch(/^enqueue: WRONGTYPE Operation against a key/);
    const everything = `${inspect(error, { depth: 10 })} ${JSON.stringify(error)} ${String(error)}`;
    expect(everything).not.toContain(payload.secret);
    expect(everything).not.toContain(endpoint.token);
    expect(everything).not.toContain("RANK_SEQ_SPAN"); // a line of the Lua prelude
    expect(everything).not.toContain("command was");
  });

  it("turns a script's LEASEQ_BAD_ARGUMENT into ScriptArgumentError", async () => {
    const { store, queue } = openQueue();
    const keys = scriptKeys(queue.keys);
    const error = await store.evalScript(SCRIPTS.claim, keys, ["soon", "1", "1000", "c1", "0", "10"]).catch((e) => e);
    const mapped = toQueueError("claim", error);
    expect(mapped).toBeInstanceOf(ScriptArgumentError);
    expect(mapped.message).toMatch(/^claim: now must be an integer/);
  });

  it("retries a claim answered with a 5xx before it ran: a fresh claim, one lease", async () => {
    const { queue } = openQueue();
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    const fault = endpoint.faults.add({ match: isScript("claim"), action: { kind: "status", status: 503 } });
    const [task] = await queue.claim({ count: 1, now: NOW });
    expect(fault).toMatchObject({ seen: 2, fired: 1 });
    expect(task).toMatchObject({ id: "a", attempt: 1 });
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "leased", attempts: 1 });
  });

  it("repeats a claim whose reply was lost: the repeat returns the first run's lease, token and attempt", async () => {
    const { queue } = openQueue();
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    const fault = endpoint.faults.add({ match: isScript("claim"), action: { kind: "drop" } });
    const [task] = await queue.claim({ count: 1, now: NOW });
    expect(fault).toMatchObject({ seen: 2, fired: 1 });
    expect(task).toMatchObject({ id: "a", attempt: 1 });
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "leased", attempts: 1 });
    expect(await queue.ack([task], { now: NOW + 1 })).toEqual([{ id: "a", status: "ok", state: "done" }]);
  });

  it("repeats a claim that timed out, and gives up after its retries with a clear error", async () => {
    const { queue } = openQueue({ timeoutMs: 200 });
    await queue.enqueue([{ id: "a", type: "t" }], { now: NOW });
    const once = endpoint.faults.add({ match: isScript("claim"), action: { kind: "delay", ms: 500 } });
    const [task] = await queue.claim({ count: 1, now: NOW });
    expect(once.seen).toBeGreaterThanOrEqual(2); // a third when a loaded machine also timed the second out
    expect(task).toMatchObject({ id: "a", attempt: 1 });
    const always = endpoint.faults.add({ match: isScript("claim"), times: 10, action: { kind: "delay", ms: 500 } });
    await expect(queue.claim({ count: 1, now: NOW })).rejects.toThrow(
      /^claim: no answer from Upstash at 127\.0\.0\.1:\d+ \(from the url given to UpstashStore\) within 200 ms/,
    );
    expect(always.seen).toBe(3); // the first try and two retries
  });

  it("retries the other scripts after a 5xx, a lost reply or a timeout", async () => {
    const { queue } = openQueue({ timeoutMs: 200 });
    const enqueue5xx = endpoint.faults.add({ match: isScript("enqueue"), action: { kind: "status", status: 502 } });
    expect(await queue.enqueue([{ id: "a", type: "t" }], { now: NOW })).toEqual([
      { id: "a", status: "ok", state: "ready" },
    ]);
    expect(enqueue5xx).toMatchObject({ seen: 2, fired: 1 });

    // The first enqueue ran and its reply was lost: the retry finds the id and says so.
    const enqueueDrop = endpoint.faults.add({ match: isScript("enqueue"), action: { kind: "drop" } });
    expect(await queue.enqueue([{ id: "b", type: "t" }], { now: NOW })).toEqual([
      { id: "b", status: "duplicate", state: "ready" },
    ]);
    expect(enqueueDrop.seen).toBe(2);

    const statsSlow = endpoint.faults.add({ match: isScript("stats"), action: { kind: "delay", ms: 500 } });
    expect((await queue.stats({ now: NOW })).ready).toBe(2);
    expect(statsSlow.seen).toBe(2);
  });

  it("gives up on a retry-safe script after the policy's retries", async () => {
    const { queue } = openQueue();
    const fault = endpoint.faults.add({ match: isScript("stats"), times: 10, action: { kind: "status", status: 503 } });
    await expect(queue.stats({ now: NOW })).rejects.toThrow(
      /^stats: the Upstash REST API failed the request \(injected fault: HTTP 503\)$/,
    );
    expect(fault.seen).toBe(1 + NO_BACKOFF.retries);
  });

  it("never retries an error Redis answered", async () => {
    const { queue } = openQueue();
    await redis.set(queue.keys.ready, "not a sorted set");
    const fault = endpoint.faults.add({ match: isScript("stats"), times: 10, action: { kind: "delay", ms: 0 } });
    await expect(queue.stats({ now: NOW })).rejects.toThrow(/WRONGTYPE/);
    expect(fault.seen).toBe(1);
  });
});
