// What the Upstash store sends: leaseq's function library with every function flagged
// `allow-key-locking` (and `no-writes`, called by FCALL_RO, for the read-only ones), loaded once and
// called by name; where the database has no Functions, every script with `#!lua
// flags=allow-key-locking` in its shebang, by the SHA of that body. The TCP store loads its library
// and sends its bodies without the flag, which Redis itself refuses. A recording proxy between the
// store and the local endpoint sees each request as Upstash would; the endpoint runs them on a
// redis-server of this file's own, whose script cache and function libraries start empty.
import { createHash } from "node:crypto";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../../dev/standins/upstash/index.js";
import { Queue } from "../../../shared/queue.js";
import { LIBRARY, SCRIPTS } from "../../../shared/scripts.js";
import { TcpStore } from "../../../shared/stores/tcp.js";
import { UPSTASH_LIBRARY, UpstashStore, upstashScript } from "../../../shared/stores/upstash.js";
import { type StartedRedis, startRedisServer } from "../../helpers/redis-server.js";

const NOW = 1_800_000_000_000;
const sha1 = (body: string) => createHash("sha1").update(body, "utf8").digest("hex");

let server: StartedRedis;
let redis: Redis;
let endpoint: UpstashEndpoint;
let proxy: Server;
let proxyUrl: string;
const sent: unknown[][] = [];

beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url);
  endpoint = await startUpstashEndpoint({ redisUrl: server.url });
  const target = new URL(endpoint.url);
  proxy = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const body = Buffer.concat(chunks);
      if (body.length > 0) sent.push(JSON.parse(body.toString("utf8")) as unknown[]);
      const forward = request(
        {
          host: target.hostname,
          port: target.port,
          path: incoming.url,
          method: incoming.method,
          headers: incoming.headers,
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
  await endpoint.close();
  redis.disconnect();
  await server.stop();
});

/** Runs every operation script once, each doing its work, through the recording proxy. */
async function everyScript(name: string): Promise<void> {
  const store = new UpstashStore({ url: proxyUrl, token: endpoint.token });
  const queue = new Queue(store, {
    name,
    settings: { policies: { job: { leaseMs: 10_000, maxAttempts: 2 } }, trustCallerClock: true },
  });
  try {
    // Every script once, each doing its work through the endpoint.
    expect(await queue.configure()).toBe(true);
    await queue.enqueue(
      ["a", "b", "c", "d"].map((id) => ({ id, type: "job", payload: { id } })),
      { now: NOW },
    );
    // The worker the enqueue's wake-up started: its claim answers that wake-up.
    const claimed = await queue.claim({ count: 4, now: NOW, woken: true });
    expect(claimed.map((task) => task.id)).toEqual(["a", "b", "c", "d"]);
    const [a, b, c, d] = claimed;
    expect((await queue.extend([{ id: a.id, token: a.token, leaseMs: 20_000 }], { now: NOW }))[0].status).toBe("ok");
    expect((await queue.ack([a], { now: NOW }))[0].status).toBe("ok");
    expect((await queue.release([b], { now: NOW }))[0].status).toBe("ok");
    await queue.settle([{ id: c.id, token: c.token, outcome: "fail", error: "no" }], { now: NOW });
    expect(await queue.admin.amend("c", { id: "c", fixed: true }, { now: NOW })).toEqual({ id: "c", status: "ok" });
    // READY again with no attempts and its error: what a requeue leaves, so a requeue answers ok.
    expect((await queue.admin.requeue(["c"], { now: NOW }))[0].status).toBe("ok");
    expect(await queue.reclaim({ now: NOW + 60_000 })).toMatchObject({ reclaimed: [d.id] });
    expect(await queue.promote({ now: NOW })).toBe(0);
    expect(await queue.handOff({ now: NOW, cutOff: true })).toBe(NOW); // ready work left: wake now
    expect(await queue.trim({ now: NOW + 86_400_000 * 2 })).toEqual({ done: 1, failed: 0 });
    expect(await queue.tick({ now: NOW + 1 })).toMatchObject({ ready: 3 });
    expect(await queue.stats({ now: NOW })).toMatchObject({ ready: 3, corrupt: 0 });
    expect(await queue.admin.inspect("b")).toMatchObject({ state: "ready" });
    expect((await queue.admin.list("ready")).map((task) => task.id)).toEqual(["b", "c", "d"]);
    await redis.hset(queue.keys.task, "b:s", "broken");
    expect(await queue.claim({ count: 1, now: NOW })).toMatchObject([{ id: "c" }]); // b is set aside
    expect((await queue.admin.repair(["b"], { now: NOW }))[0].status).toBe("ok");
    expect((await queue.admin.delete(["b"]))[0].status).toBe("ok");
    expect(await queue.admin.pause({ now: NOW })).toBe(true);
    expect((await queue.admin.resume({ now: NOW })).changed).toBe(true);
    expect((await queue.admin.cancel(["c"], { now: NOW }))[0].status).toBe("ok");
    expect((await queue.admin.skip(["c"], { now: NOW }))[0].status).toBe("not_holding"); // a cancel holds nothing
    expect((await queue.admin.history({ now: NOW, minutes: 5 })).failed).toHaveLength(5);
    await queue.enqueue([{ id: "g", type: "job", group: "acme" }], { now: NOW });
    expect((await queue.admin.groups()).groups).toEqual([
      { type: "job", group: "acme", leased: 0, ready: 1, parked: 0 },
    ]);
    await queue.schedules.set("hourly", { cron: "0 * * * *", type: "job" }, { now: NOW }); // schedule
    expect(await queue.schedules.plan({ now: NOW, horizonMs: 3_600_000 })).toMatchObject({ made: 1 }); // schedules, plan
    expect(await queue.admin.checkAll({ now: NOW })).toEqual([]);
    expect(await queue.admin.drop({ confirm: name })).toBeGreaterThan(0);
  } finally {
    await store.close();
  }
}

describe("script flags per store", () => {
  it("gives every script the Upstash store sends allow-key-locking, and no-writes to the read-only ones", () => {
    for (const script of Object.values(SCRIPTS)) {
      const flagged = upstashScript(script);
      const firstLine = flagged.body.slice(0, flagged.body.indexOf("\n"));
      expect(firstLine, script.name).toBe(
        script.readOnly ? "#!lua flags=allow-key-locking,no-writes" : "#!lua flags=allow-key-locking",
      );
      expect(flagged.body.slice(firstLine.length + 1)).toBe(script.body);
      expect(flagged.sha).toBe(sha1(flagged.body));
      // The TCP store's body: no shebang (Redis refuses the flag).
      expect(script.body.startsWith("#!")).toBe(false);
      expect(script.sha).toBe(sha1(script.body));
    }
    expect(
      Object.values(SCRIPTS)
        .filter((script) => script.readOnly)
        .map((script) => script.name)
        .sort(),
    ).toEqual(["groups", "history", "inspect", "list", "schedules", "stats"]);
  });

  it("loads the flagged library once through the endpoint, and calls every script by its function", async () => {
    sent.length = 0;
    await everyScript("flags");
    // One FUNCTION LOAD, of the flagged library; then each script by name, FCALL_RO for the readers.
    const loads = sent.filter((command) => String(command[0]).toLowerCase() === "function");
    expect(loads).toEqual([["function", "load", UPSTASH_LIBRARY.code]]);
    const names = new Set<string>();
    for (const script of Object.values(SCRIPTS)) {
      const name = UPSTASH_LIBRARY.functions.get(script.name);
      const mine = sent.filter((command) => command[1] === name);
      if (mine.length === 0) continue;
      names.add(script.name);
      for (const command of mine) expect(command[0], script.name).toBe(script.readOnly ? "fcall_ro" : "fcall");
    }
    expect([...names].sort()).toEqual(Object.keys(SCRIPTS).sort());
    expect(sent.filter((command) => /^eval/.test(String(command[0])))).toEqual([]);
    // Redis holds the library without the Upstash-only flag (the endpoint strips it; `no-writes` stays).
    const [library] = (await redis.call("FUNCTION", "LIST", "LIBRARYNAME", UPSTASH_LIBRARY.name)) as unknown[][];
    const functions = library[5] as unknown[][];
    expect(functions).toHaveLength(Object.keys(SCRIPTS).length);
    for (const entry of functions) {
      const name = String(entry[1]).slice(UPSTASH_LIBRARY.name.length + 1);
      expect(entry[5], name).toEqual(SCRIPTS[name as keyof typeof SCRIPTS].readOnly ? ["no-writes"] : []);
    }
  });

  it("where the database has no Functions, sends each script flagged, by SHA then by body, and every one runs", async () => {
    sent.length = 0;
    const fault = endpoint.faults.add({
      command: "FCALL",
      action: { kind: "status", status: 400, error: "ERR unknown command 'FCALL', with args beginning with: " },
    });
    await everyScript("flags-eval");
    expect(fault.fired).toBe(1); // told once, the store sends no FCALL again
    expect(sent.filter((command) => /^(fcall|function)/.test(String(command[0]))).length).toBe(1);
    const names = new Set<string>();
    for (const script of Object.values(SCRIPTS)) {
      const flagged = upstashScript(script);
      const mine = sent.filter(
        (command) => command[1] === flagged.sha || (typeof command[1] === "string" && command[1] === flagged.body),
      );
      if (mine.length === 0) continue;
      names.add(script.name);
      const [byHash, ...rest] = mine;
      // First by the SHA of the flagged body; the cache was empty, so NOSCRIPT, then the body itself.
      expect(byHash[0], script.name).toBe(script.readOnly ? "evalsha_ro" : "evalsha");
      expect(rest[0]?.[0], script.name).toBe(script.readOnly ? "eval_ro" : "eval");
      expect(rest[0]?.[1], script.name).toBe(flagged.body);
    }
    expect([...names].sort()).toEqual(Object.keys(SCRIPTS).sort());
    // No script reached the endpoint any other way: every script request names a flagged body or its SHA.
    const flaggedIds = new Set(Object.values(SCRIPTS).flatMap((s) => [upstashScript(s).sha, upstashScript(s).body]));
    const scriptCommands = sent.filter((command) => /^eval/.test(String(command[0])));
    expect(scriptCommands.every((command) => flaggedIds.has(String(command[1])))).toBe(true);
    // Redis holds them without the Upstash-only flag (the endpoint strips it; `no-writes` stays).
    const stored = Object.values(SCRIPTS).map((script) =>
      sha1(`${script.readOnly ? "#!lua flags=no-writes" : "#!lua"}\n${script.body}`),
    );
    expect(await redis.script("EXISTS", ...stored)).toEqual(stored.map(() => 1));
  });

  it("loads the TCP store's library without the Upstash flag, which Redis refuses", async () => {
    const store = TcpStore.fromUrl(server.url);
    try {
      const queue = new Queue(store, { name: "tcp-flags" });
      await queue.enqueue([{ id: "x", type: "job" }], { now: NOW });
      expect(await queue.stats({ now: NOW })).toMatchObject({ ready: 1 });
      expect(store.functions).toBe("yes");
      expect(LIBRARY.code).not.toContain("allow-key-locking");
      expect(await redis.call("FUNCTION", "LIST", "LIBRARYNAME", LIBRARY.name)).toHaveLength(1);
      await expect(redis.call("FUNCTION", "LOAD", "REPLACE", UPSTASH_LIBRARY.code)).rejects.toThrow(/unknown flag/);
      // Its script bodies, for a server without Functions, have no shebang either.
      expect(SCRIPTS.stats.body.startsWith("#!")).toBe(false);
      await expect(redis.eval(upstashScript(SCRIPTS.stats).body, 0)).rejects.toThrow(
        "Unexpected flag in script shebang: allow-key-locking",
      );
      await queue.admin.drop({ confirm: "tcp-flags" });
    } finally {
      await store.close();
    }
  });
});
