// The real @upstash/redis client against the local endpoint (the one global-setup starts in front
// of the test Redis). Each test asserts what the client returns, so a protocol difference from
// Upstash shows up here rather than as a strange queue failure.
import { createHash } from "node:crypto";
import { errors, Redis } from "@upstash/redis";
import { describe, expect, inject, it } from "vitest";
import { uniqueQueueName } from "../../helpers/stores.js";

const url = inject("upstashUrl");
const token = inject("upstashToken");
/** As leaseq builds it: replies untouched. */
const raw = new Redis({ url, token, automaticDeserialization: false, enableAutoPipelining: false, retry: false });
/** The client's defaults, which parse every reply as JSON. */
const parsing = new Redis({ url, token, enableAutoPipelining: false, retry: false });

const key = (name: string) => `compat:${uniqueQueueName(name)}`;

describe("@upstash/redis through the local endpoint", () => {
  it("round-trips UTF-8, emoji, empty and number-looking strings exactly without deserialization", async () => {
    const values = ["héllo wörld ✓", "🚀👩‍💻 emoji", "", "123", "1.50", "007", "-0", "1e3", '{"a":1}', "OK", "null"];
    for (const value of values) {
      const k = key("str");
      expect(await raw.set(k, value)).toBe("OK");
      expect(await raw.get(k)).toBe(value);
    }
  });

  it("turns number-looking strings into numbers under the client's default deserialization", async () => {
    const k = key("num");
    await raw.mset({ [`${k}:a`]: "123", [`${k}:b`]: "1.50", [`${k}:c`]: "007", [`${k}:d`]: '{"a":1}' });
    // Why leaseq sets automaticDeserialization: false: "123" would come back as a number.
    expect(await parsing.mget(`${k}:a`, `${k}:b`, `${k}:c`, `${k}:d`)).toEqual([123, "1.50", "007", { a: 1 }]);
    expect(await raw.mget(`${k}:a`, `${k}:b`, `${k}:c`, `${k}:d`)).toEqual(["123", "1.50", "007", '{"a":1}']);
  });

  it("returns hashes as a flat field/value array, or an object when deserializing", async () => {
    const k = key("hash");
    expect(await raw.hset(k, { name: "zoë", count: "42", empty: "" })).toBe(3);
    expect(await raw.hget(k, "name")).toBe("zoë");
    expect(await raw.hget(k, "missing")).toBeNull();
    expect(await raw.hmget(k, "count", "missing")).toEqual(["42", null]);
    expect(await raw.hgetall(k)).toEqual(["name", "zoë", "count", "42", "empty", ""]);
    expect(await parsing.hgetall(k)).toEqual({ name: "zoë", count: 42, empty: "" });
    expect(await raw.hincrby(k, "count", 8)).toBe(50);
  });

  it("returns sorted-set members with scores as strings, in rank order", async () => {
    const k = key("zset");
    expect(
      await raw.zadd(k, { score: 1.5, member: "b" }, { score: -2, member: "a" }, { score: 1e20, member: "123" }),
    ).toBe(3);
    expect(await raw.zrange(k, 0, -1, { withScores: true })).toEqual(["a", "-2", "b", "1.5", "123", "1e+20"]);
    expect(await raw.zscore(k, "b")).toBe("1.5");
    expect(await raw.zscore(k, "nobody")).toBeNull();
    expect(await raw.zrank(k, "123")).toBe(2);
    // Deserializing turns the member "123" into the number 123 (DESIGN §5).
    expect(await parsing.zrange(k, 0, -1)).toEqual(["a", "b", 123]);
  });

  it("returns null for nil replies, in single commands and inside arrays", async () => {
    const k = key("nil");
    expect(await raw.get(k)).toBeNull();
    expect(await raw.lpop(k)).toBeNull();
    await raw.set(k, "v");
    expect(await raw.mget(k, `${k}:missing`)).toEqual(["v", null]);
    // Lua false is nil inside a script's reply array.
    expect(await raw.eval("return {1, false, 'x'}", [], [])).toEqual([1, null, "x"]);
  });

  it("keeps integers above 2^53 exact as strings via exec; integer replies become JS numbers", async () => {
    const k = key("big");
    expect(await raw.exec(["SET", k, "9007199254740992"])).toBe("OK");
    // The endpoint sends 9007199254740993 exactly (see upstash-endpoint.test.ts); JSON.parse in the
    // client rounds it to the nearest double.
    expect(await raw.exec(["INCR", k])).toBe(9007199254740992);
    expect(await raw.exec(["GET", k])).toBe("9007199254740993");
    expect(await raw.exec(["SET", k, "9223372036854775806"])).toBe("OK");
    await raw.exec(["INCR", k]);
    expect(await raw.exec(["GET", k])).toBe("9223372036854775807");
    await expect(raw.exec(["INCR", k])).rejects.toThrow(/^ERR increment or decrement would overflow/);
  });

  it("throws an UpstashError with the Redis text and the whole command for a failed single command", async () => {
    const k = key("err");
    await raw.set(k, "not a number");
    const error = await raw.incr(k).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(errors.UpstashError);
    expect((error as Error).message).toBe(`ERR value is not an integer or out of range, command was: ["incr","${k}"]`);
    await expect(raw.hget(k, "f")).rejects.toThrow(
      /^WRONGTYPE Operation against a key holding the wrong kind of value/,
    );
    await expect(raw.exec(["NOSUCHCOMMAND", k])).rejects.toThrow(/^ERR unknown command 'NOSUCHCOMMAND'/);
  });

  it("runs a pipeline past a failing item: exec throws naming it, keepErrors returns every outcome", async () => {
    const k = key("pipe");
    const build = () => raw.pipeline().set(k, "a").incr(k).append(k, "b").get(k);
    await expect(build().exec()).rejects.toThrow(
      "Command 2 [ incr ] failed: ERR value is not an integer or out of range",
    );
    // The items after the failure ran: APPEND made "ab", so a second run makes "ab" again after SET.
    expect(await build().exec({ keepErrors: true })).toEqual([
      { result: "OK", error: undefined },
      { result: undefined, error: "ERR value is not an integer or out of range" },
      { result: 2, error: undefined },
      { result: "ab", error: undefined },
    ]);
  });

  it("runs multi transactions atomically, with runtime errors reported per command", async () => {
    const k = key("multi");
    expect(await raw.multi().set(k, "1").incr(k).get(k).exec()).toEqual(["OK", 2, "2"]);
    const outcomes = await raw.multi().set(k, "x").incr(k).get(k).exec({ keepErrors: true });
    expect(outcomes).toEqual([
      { result: "OK", error: undefined },
      { result: undefined, error: "ERR value is not an integer or out of range" },
      { result: "x", error: undefined },
    ]);
  });

  it("loads scripts and runs them with EVAL and EVALSHA; an unknown SHA is NOSCRIPT", async () => {
    const k = key("lua");
    const body = "redis.call('SET', KEYS[1], ARGV[1]); return {KEYS[1], ARGV[1], 42, redis.call('GET', KEYS[1])}";
    const sha = await raw.scriptLoad(body);
    expect(sha).toBe(createHash("sha1").update(body).digest("hex"));
    expect(await raw.evalsha(sha, [k], ["🚀"])).toEqual([k, "🚀", 42, "🚀"]);
    expect(await raw.eval("return {ARGV[1], {tonumber(ARGV[1]) * 2}}", [], ["21"])).toEqual(["21", [42]]);
    expect(await raw.scriptExists(sha, "0".repeat(40))).toEqual([1, 0]);
    await expect(raw.evalsha("0".repeat(40), [], [])).rejects.toThrow(/^NOSCRIPT No matching script/);
    await expect(raw.eval("return redis.error_reply('LEASEQ_BAD_ARGUMENT x: y')", [], [])).rejects.toThrow(
      /^LEASEQ_BAD_ARGUMENT x: y, command was: /,
    );
  });

  it("refuses a wrong token with an UpstashError and runs nothing", async () => {
    const k = key("token");
    const intruder = new Redis({ url, token: "wrong", automaticDeserialization: false, retry: false });
    await expect(intruder.set(k, "v")).rejects.toThrow(/^Unauthorized/);
    expect(await raw.get(k)).toBeNull();
  });
});
