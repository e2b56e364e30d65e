// The endpoint's HTTP protocol, spoken with plain fetch: status codes, body shapes, base64,
// exact integers, transactions, and fault injection.
import { networkInterfaces } from "node:os";
import { describe, expect, it } from "vitest";
import { startUpstashEndpoint } from "../../../dev/standins/upstash/index.js";
import { freePort } from "../../helpers/redis-server.js";
import { endpointFixture } from "./upstash-endpoint-http.js";

const MAX_BODY_BYTES = 4096;
/** `post` POSTs `body` (JSON-encoded unless already a string); resolves to status and raw text. */
const { endpoint, key, post } = endpointFixture("endpoint", { maxBodyBytes: MAX_BODY_BYTES, poolSize: 3 });

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

describe("local Upstash endpoint: requests", () => {
  it("answers 401 {error} without the right bearer token, and runs nothing", async () => {
    const k = key("auth");
    for (const authorization of [
      undefined,
      "Bearer wrong",
      `Basic ${endpoint().token}`,
      `Bearer ${endpoint().token}x`,
    ]) {
      const response = await fetch(endpoint().url, {
        method: "POST",
        headers: authorization ? { Authorization: authorization } : {},
        body: JSON.stringify(["SET", k, "v"]),
      });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ error: expect.stringMatching(/^Unauthorized/) });
    }
    expect(await post("/", ["GET", k])).toEqual({ status: 200, text: '{"result":null}' });
  });

  it("answers 400 {error} to bodies that are not a JSON array of scalars", async () => {
    for (const body of ["not json", '{"cmd":"GET"}', "[]", '["SET", {"a":1}]', '["GET", null]', "[[]]"]) {
      const { status, text } = await post("/", body);
      expect(status, body).toBe(400);
      expect(JSON.parse(text), body).toEqual({ error: expect.any(String) });
    }
    for (const body of ['["GET","k"]', "[]", "[[]]", '[["GET","k"], "x"]']) {
      expect((await post("/pipeline", body)).status, body).toBe(400);
    }
  });

  it("answers 404 for unknown paths and 405 for methods other than POST", async () => {
    expect((await post("/get/foo", ["GET", "foo"])).status).toBe(404);
    const response = await fetch(endpoint().url, { headers: { Authorization: `Bearer ${endpoint().token}` } });
    expect(response.status).toBe(405);
  });

  it("answers 413 to a body over maxBodyBytes, then keeps serving", async () => {
    const { status, text } = await post("/", ["SET", key("big"), "x".repeat(MAX_BODY_BYTES)]);
    expect(status).toBe(413);
    expect(JSON.parse(text).error).toMatch(/larger than 4096 bytes/);
    expect((await post("/", ["PING"])).text).toBe('{"result":"PONG"}');
  });

  it("always writes the result key, null for nil; a failed single command is 400 {error}", async () => {
    const k = key("single");
    expect(await post("/", ["GET", k])).toEqual({ status: 200, text: '{"result":null}' });
    expect(await post("/", ["SET", k, "text"])).toEqual({ status: 200, text: '{"result":"OK"}' });
    expect(await post("/", ["INCR", k])).toEqual({
      status: 400,
      text: '{"error":"ERR value is not an integer or out of range"}',
    });
  });

  it("keeps 64-bit integers exact, in replies and in number arguments", async () => {
    const k = key("int64");
    expect((await post("/", `["INCRBY", "${k}", 9007199254740993]`)).text).toBe('{"result":9007199254740993}');
    expect((await post("/", ["INCRBY", k, "9223372036854775807"])).status).toBe(400); // overflow
    await post("/", ["SET", k, "9223372036854775806"]);
    expect((await post("/", ["INCR", k])).text).toBe('{"result":9223372036854775807}');
    expect(
      (await post("/", ["EVAL", "return {redis.call('DECRBY', KEYS[1], '18446744073709551615')}", 1, k])).status,
    ).toBe(400);
    expect((await post("/", ["EVAL", "return {-9007199254740993, 'x'}", 0])).text).toBe(
      '{"result":[-9007199254740992,"x"]}', // Lua numbers are doubles: Redis itself rounds this one
    );
  });

  it("base64-encodes every string at every depth with Upstash-Encoding: base64, never numbers, nulls or errors", async () => {
    const k = key("b64");
    const script = "return {'a', {'é', 7, {'🚀'}}, false, 12}";
    const { status, text } = await post(
      "/pipeline",
      [
        ["SET", k, "héllo"],
        ["GET", k],
        ["HGET", k, "f"],
        ["GET", `${k}:none`],
        ["EVAL", script, 0],
        ["STRLEN", k],
      ],
      { "Upstash-Encoding": "base64" },
    );
    expect(status).toBe(200);
    expect(JSON.parse(text)).toEqual([
      { result: b64("OK") },
      { result: b64("héllo") },
      { error: "WRONGTYPE Operation against a key holding the wrong kind of value" },
      { result: null },
      { result: [b64("a"), [b64("é"), 7, [b64("🚀")]], null, 12] },
      { result: 6 },
    ]);
    expect((await post("/", ["GET", k], { "Upstash-Encoding": "base64" })).text).toBe(`{"result":"${b64("héllo")}"}`);
  });

  it("runs a pipeline in order past failing items, each with its own {result} or {error}", async () => {
    const k = key("pipe");
    const { status, text } = await post("/pipeline", [
      ["SET", k, "a"],
      ["INCR", k],
      ["SELECT", "1"],
      ["APPEND", k, "b"],
    ]);
    expect(status).toBe(200);
    expect(JSON.parse(text)).toEqual([
      { result: "OK" },
      { error: "ERR value is not an integer or out of range" },
      { error: expect.stringMatching(/^ERR SELECT is not supported/) },
      { result: 2 },
    ]);
  });

  it("runs /multi-exec atomically on its own connection while other requests write the same key", async () => {
    const k = key("multi");
    const transaction = [
      ["SET", k, "a"],
      ["APPEND", k, "b"],
      ["GET", k],
    ];
    const requests = Array.from({ length: 30 }, (_, i) =>
      i % 2 === 0 ? post("/multi-exec", transaction) : post("/", ["SET", k, "zzz"]),
    );
    for (const [i, { status, text }] of (await Promise.all(requests)).entries()) {
      expect(status).toBe(200);
      if (i % 2 === 0) expect(JSON.parse(text)).toEqual([{ result: "OK" }, { result: 2 }, { result: "ab" }]);
    }
  });

  it("discards a whole transaction with 400 {error} when Redis cannot queue a command", async () => {
    const k = key("abort");
    const { status, text } = await post("/multi-exec", [["SET", k, "v"], ["NOSUCHCOMMAND"]]);
    expect(status).toBe(400);
    expect(JSON.parse(text).error).toMatch(/^EXECABORT .*command 1: ERR unknown command 'NOSUCHCOMMAND'/);
    expect((await post("/", ["GET", k])).text).toBe('{"result":null}');
    expect(
      (
        await post("/multi-exec", [
          ["SET", k, "v"],
          ["WATCH", k],
        ])
      ).status,
    ).toBe(400);
  });

  it("serves more concurrent requests than it has connections", async () => {
    const k = key("pool");
    const increments = await Promise.all(Array.from({ length: 40 }, () => post("/", ["INCR", k])));
    expect(increments.every(({ status }) => status === 200)).toBe(true);
    expect((await post("/", ["GET", k])).text).toBe('{"result":"40"}');
  });

  it("answers 500 {error} when Redis cannot be reached", async () => {
    const dead = await startUpstashEndpoint({ redisUrl: `redis://127.0.0.1:${await freePort()}` });
    try {
      const response = await fetch(dead.url, {
        method: "POST",
        headers: { Authorization: `Bearer ${dead.token}` },
        body: JSON.stringify(["PING"]),
      });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: expect.stringMatching(/ECONNREFUSED/) });
    } finally {
      await dead.close();
    }
  });

  it("listens on 127.0.0.1 only", async () => {
    expect(new URL(endpoint().url).hostname).toBe("127.0.0.1");
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && address.family === "IPv4" && !address.internal);
    if (external === undefined) return; // no other interface to try on this machine
    const port = new URL(endpoint().url).port;
    await expect(fetch(`http://${external.address}:${port}/`, { method: "POST" })).rejects.toThrow();
  });
});

describe("local Upstash endpoint: fault injection", () => {
  it("is off by default", async () => {
    expect((await post("/", ["PING"])).text).toBe('{"result":"PONG"}');
  });

  it("delays a reply after Redis applied the command", async () => {
    const k = key("delay");
    const fault = endpoint().faults.add({ command: "set", action: { kind: "delay", ms: 300 } });
    const started = Date.now();
    const request = post("/", ["SET", k, "v"]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await post("/", ["GET", k])).text).toBe('{"result":"v"}'); // applied before the reply came
    expect((await request).text).toBe('{"result":"OK"}');
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(fault).toMatchObject({ seen: 1, fired: 1 });
  });

  it("drops a reply after Redis applied the command", async () => {
    const k = key("drop");
    const fault = endpoint().faults.add({ command: "INCR", action: { kind: "drop" } });
    await expect(post("/", ["INCR", k])).rejects.toThrow(); // the socket closes without an answer
    expect((await post("/", ["INCR", k])).text).toBe('{"result":2}'); // the lost INCR did happen
    expect(fault).toMatchObject({ seen: 2, fired: 1 });
  });

  it("answers 5xx without running the command, for the first `times` matches only", async () => {
    const k = key("5xx");
    const fault = endpoint().faults.add({
      command: "SET",
      match: (command) => command[2] === "first",
      times: 2,
      action: { kind: "status", status: 503 },
    });
    for (let i = 0; i < 2; i++) {
      const { status, text } = await post("/", ["SET", k, "first"]);
      expect(status).toBe(503);
      expect(JSON.parse(text)).toEqual({ error: expect.any(String) });
    }
    expect((await post("/", ["GET", k])).text).toBe('{"result":null}');
    expect((await post("/", ["SET", k, "first"])).status).toBe(200);
    expect((await post("/", ["SET", k, "second"])).status).toBe(200); // not matched
    expect(fault).toMatchObject({ seen: 3, fired: 2 });
  });

  it("answers 5xx after running the command when asked to, and matches pipelines by any command", async () => {
    const k = key("5xx-applied");
    endpoint().faults.add({ command: "incr", action: { kind: "status", status: 500, apply: true } });
    expect(
      (
        await post("/pipeline", [
          ["SET", k, "1"],
          ["INCR", k],
        ])
      ).status,
    ).toBe(500);
    expect((await post("/", ["GET", k])).text).toBe('{"result":"2"}');
  });
});
