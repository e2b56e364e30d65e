// The endpoint's Redis connections: blocking commands are refused without taking one, and a
// request whose HTTP client went away gives its connection back (closed and replaced) or leaves
// the queue. The abort tests pause writes with CLIENT PAUSE, which would stall every other test
// on the shared server: they run against a private redis-server.
import type { Redis } from "ioredis";
import { Redis as IORedis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../../dev/standins/upstash/index.js";
import { type StartedRedis, startRedisServer } from "../../helpers/redis-server.js";
import { endpointFixture, keyMaker, poster } from "./upstash-endpoint-http.js";

describe("local Upstash endpoint: blocking commands", () => {
  const { redis, key, post } = endpointFixture("endpoint-pool", { poolSize: 2 });

  it("refuses every blocking command with 400 {error} naming it, in commands, pipelines and transactions", async () => {
    const k = key("list");
    const blocking = [
      ["BLPOP", k, "0"],
      ["brpop", k, "0.1"],
      ["BRPOPLPUSH", k, k, "0"],
      ["BLMOVE", k, k, "LEFT", "RIGHT", "0"],
      ["BLMPOP", "0", "1", k, "LEFT"],
      ["BZPOPMIN", k, "0"],
      ["BZPOPMAX", k, "0"],
      ["BZMPOP", "0", "1", k, "MIN"],
      ["WAIT", "1", "0"],
      ["WAITAOF", "0", "1", "0"],
      ["XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", k, "$"],
      ["XREADGROUP", "GROUP", "g", "c", "block", "0", "STREAMS", k, ">"],
    ];
    for (const command of blocking) {
      const name = command[0].toUpperCase();
      const single = await post("/", command);
      expect(single.status, name).toBe(400);
      expect(JSON.parse(single.text).error, name).toMatch(
        new RegExp(`^ERR ${name}( with BLOCK)? is a blocking command`),
      );

      const pipeline = await post("/pipeline", [["PING"], command]);
      expect(JSON.parse(pipeline.text), name).toEqual([{ result: "PONG" }, { error: expect.stringContaining(name) }]);

      const transaction = await post("/multi-exec", [["SET", k, "v"], command]);
      expect(transaction.status, name).toBe(400);
      expect(JSON.parse(transaction.text).error, name).toContain(name);
    }
    expect(await redis.exists(k)).toBe(0); // the refused transactions wrote nothing
  });

  it("runs XREAD without BLOCK, even on a stream named BLOCK", async () => {
    const stream = key("BLOCK");
    await redis.xadd(stream, "1-1", "f", "v");
    const { status, text } = await post("/", ["XREAD", "COUNT", "1", "STREAMS", stream, "0"]);
    expect(status).toBe(200);
    expect(JSON.parse(text).result).toEqual([[stream, [["1-1", ["f", "v"]]]]]);
  });

  it("answers 20 BLPOP k 0 at once without taking a connection: a PING still answers and a push stays", async () => {
    const k = key("blpop");
    const refused = await Promise.all(Array.from({ length: 20 }, () => post("/", ["BLPOP", k, "0"])));
    expect(refused.map(({ status }) => status)).toEqual(Array(20).fill(400));
    expect(await post("/", ["PING"])).toEqual({ status: 200, text: '{"result":"PONG"}' });
    expect((await post("/", ["RPUSH", k, "job"])).text).toBe('{"result":1}');
    expect(await redis.lrange(k, 0, -1)).toEqual(["job"]); // no hidden BLPOP took it
  });
});

describe("local Upstash endpoint: clients that go away", () => {
  let server: StartedRedis;
  let admin: Redis;
  let endpoint: UpstashEndpoint;
  const post = poster(() => endpoint);
  const keys = keyMaker("endpoint-pool");
  const key = keys.key;

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new IORedis(server.url);
    // One connection: a request holding it would hold up every later one.
    endpoint = await startUpstashEndpoint({ redisUrl: server.url, poolSize: 1 });
  });
  afterAll(async () => {
    await endpoint.close();
    admin.disconnect();
    await server.stop();
  });
  afterEach(async () => {
    await admin.client("UNPAUSE");
    await keys.cleanup(admin);
  });

  /** Ids of Redis clients whose last command is `command` and that wait (flag b), as CLIENT LIST shows them. */
  async function waitingClients(command: string): Promise<string[]> {
    const list = (await admin.client("LIST")) as string;
    return list
      .split("\n")
      .filter((line) => line.includes(` cmd=${command} `) && / flags=\S*b/.test(line))
      .map((line) => /^id=(\d+)/.exec(line)?.[1] ?? "");
  }

  async function until(condition: () => Promise<boolean>): Promise<void> {
    for (let i = 0; i < 200; i++) {
      if (await condition()) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error("the condition did not hold within 4 s");
  }

  it("closes the Redis connection of an aborted request and answers the next request on a fresh one", async () => {
    const k = key("aborted");
    await admin.client("PAUSE", "60000", "WRITE"); // a SET now waits inside Redis; reads still run
    const aborter = new AbortController();
    const write = post("/", ["SET", k, "late"], {}, aborter.signal);
    await until(async () => (await waitingClients("set")).length === 1);
    const [held] = await waitingClients("set");

    aborter.abort();
    await expect(write).rejects.toThrow();
    // With the only connection still waiting for the SET's reply, this would wait out the pause.
    expect(await post("/", ["PING"])).toEqual({ status: 200, text: '{"result":"PONG"}' });
    expect(await admin.client("LIST")).not.toMatch(new RegExp(`^id=${held} `, "m"));

    await admin.client("UNPAUSE");
    expect(await admin.get(k)).toBeNull(); // Redis dropped the closed client's waiting SET
    expect((await post("/", ["SET", k, "v"])).text).toBe('{"result":"OK"}');
  });

  it("drops a queued request whose client left: it never runs, and the queue moves on", async () => {
    const holding = key("holding");
    const queued = key("queued");
    await admin.client("PAUSE", "60000", "WRITE");
    const holder = new AbortController();
    const first = post("/", ["SET", holding, "1"], {}, holder.signal);
    await until(async () => (await waitingClients("set")).length === 1);
    const waiter = new AbortController();
    const second = post("/", ["SET", queued, "2"], {}, waiter.signal); // queued behind the only connection
    await new Promise((resolve) => setTimeout(resolve, 100));

    waiter.abort();
    await expect(second).rejects.toThrow();
    holder.abort();
    await expect(first).rejects.toThrow();
    expect(await post("/", ["GET", queued])).toEqual({ status: 200, text: '{"result":null}' });

    await admin.client("UNPAUSE");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await admin.exists(holding, queued)).toBe(0);
    expect((await post("/", ["SET", queued, "3"])).text).toBe('{"result":"OK"}');
  });
});
