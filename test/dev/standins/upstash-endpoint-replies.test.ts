// Large and deep replies through the local Upstash endpoint: a reply spanning hundreds of socket
// chunks must arrive exactly as Redis sent it, and a script reply nested thousands deep must be
// answered rather than overflow the endpoint's call stack.
import { randomBytes } from "node:crypto";
import { Redis as UpstashRedis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { endpointFixture } from "./upstash-endpoint-http.js";

const { endpoint, redis, key, post } = endpointFixture("endpoint-replies", { poolSize: 4 });

/** Elements that straddle chunk boundaries in every way: empty, short, 100 KB, quotes, controls, UTF-8. */
function element(i: number): string {
  if (i % 10_007 === 0) return "x".repeat(100_000 + i);
  if (i % 1_009 === 0) return "";
  if (i % 101 === 0) return `quote " backslash \\ tab \t newline \n é 🚀 ${i}`;
  return `element-${i}`;
}

/** A Lua script returning `levels` nested tables around the string "leaf". */
const NESTED = "local t = {'leaf'} for i = 2, tonumber(ARGV[1]) do t = {t} end return t";

/** The index of the first element that differs, -1 when the lists are equal (toEqual is slow on 200k items). */
function firstDifference<T>(actual: T[], expected: T[], same: (a: T, b: T) => boolean): number {
  if (actual.length !== expected.length) return Math.min(actual.length, expected.length);
  return actual.findIndex((item, i) => !same(item, expected[i]));
}

/** How many arrays wrap the innermost value, and that value. */
function unwrap(value: unknown): { levels: number; leaf: unknown } {
  let levels = 0;
  let inner = value;
  while (Array.isArray(inner)) {
    expect(inner).toHaveLength(1);
    inner = inner[0];
    levels++;
  }
  return { levels, leaf: inner };
}

describe("local Upstash endpoint: large replies", () => {
  it("relays a 200k-element LRANGE that spans many socket chunks exactly as ioredis reads it", async () => {
    const k = key("lrange");
    const expected = Array.from({ length: 200_000 }, (_, i) => element(i));
    for (let start = 0; start < expected.length; start += 10_000) {
      await redis.rpush(k, ...expected.slice(start, start + 10_000));
    }
    const direct = await redis.lrange(k, 0, -1);
    const equal = (a: string, b: string) => a === b;
    expect(firstDifference(direct, expected, equal)).toBe(-1);

    const { status, text } = await post("/", ["LRANGE", k, "0", "-1"]);
    expect(status).toBe(200);
    expect(firstDifference(JSON.parse(text).result, direct, equal)).toBe(-1);

    const base64 = await post("/", ["LRANGE", k, "0", "-1"], { "Upstash-Encoding": "base64" });
    const decoded = (JSON.parse(base64.text).result as string[]).map((item) => Buffer.from(item, "base64"));
    const sameBytes = (a: Buffer, b: Buffer) => a.equals(b);
    expect(firstDifference(decoded, await redis.lrangeBuffer(k, 0, -1), sameBytes)).toBe(-1);
  });

  it("relays a 20 MB value byte for byte, as text and as base64 of binary bytes", async () => {
    const text = key("big-text");
    const binary = key("big-binary");
    const value = randomBytes(15 * 1024 * 1024).toString("base64"); // 20 MB of text
    const bytes = randomBytes(20 * 1024 * 1024);
    await redis.set(text, value);
    await redis.set(binary, bytes);

    expect(JSON.parse((await post("/", ["GET", text])).text)).toEqual({ result: value });
    const answer = await post("/", ["GET", binary], { "Upstash-Encoding": "base64" });
    expect(Buffer.from(JSON.parse(answer.text).result, "base64").equals(bytes)).toBe(true);
  });

  it("relays HVALS of 100 values of 200 KB each, in a pipeline with other commands", async () => {
    const k = key("hvals");
    const fields = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${i}`, `${i}:${"v".repeat(200_000)}`]));
    await redis.hset(k, fields);
    const { status, text } = await post("/pipeline", [["HVALS", k], ["PING"], ["HLEN", k]]);
    expect(status).toBe(200);
    const [values, ping, length] = JSON.parse(text);
    expect((values.result as string[]).sort()).toEqual(Object.values(fields).sort());
    expect(ping).toEqual({ result: "PONG" });
    expect(length).toEqual({ result: 100 });
  });
});

describe("local Upstash endpoint: deep replies", () => {
  it("answers a script reply nested 3,000 deep, as text and as base64", async () => {
    const { status, text } = await post("/", ["EVAL", NESTED, "0", "3000"]);
    expect(status).toBe(200);
    expect(unwrap(JSON.parse(text).result)).toEqual({ levels: 3000, leaf: "leaf" });
    const base64 = await post("/", ["EVAL", NESTED, "0", "3000"], { "Upstash-Encoding": "base64" });
    expect(unwrap(JSON.parse(base64.text).result)).toEqual({
      levels: 3000,
      leaf: Buffer.from("leaf").toString("base64"),
    });
  });

  it("answers 3,000 deep through @upstash/redis too (with base64 off: its own base64 decoding recurses)", async () => {
    // With the default responseEncoding the client's decode() recurses per level and overflows
    // its own call stack near 3,000 levels (measured with 1.39), after the endpoint has answered.
    const client = new UpstashRedis({
      url: endpoint().url,
      token: endpoint().token,
      automaticDeserialization: false,
      enableAutoPipelining: false,
      retry: { retries: 0 },
      responseEncoding: false,
    });
    expect(unwrap(await client.eval(NESTED, [], ["3000"]))).toEqual({ levels: 3000, leaf: "leaf" });
  });

  it("carries the deepest reply Redis 7 builds (7,994 levels); past it Redis nests its own error", async () => {
    // Measured on redis-server 7.0.15: 7,994 nested tables convert; with more, Redis stops near
    // that depth and puts "ERR reached lua stack limit" where the next table would be.
    const deepest = await post("/", ["EVAL", NESTED, "0", "7994"]);
    expect(deepest.status).toBe(200);
    expect(unwrap(JSON.parse(deepest.text).result)).toEqual({ levels: 7994, leaf: "leaf" });

    const beyond = await post("/", ["EVAL", NESTED, "0", "20000"]);
    expect(beyond.status).toBe(200);
    const { levels, leaf } = unwrap(JSON.parse(beyond.text).result);
    expect(levels).toBeGreaterThan(7000);
    expect(leaf).toMatch(/reached lua stack limit/);
  });
});
