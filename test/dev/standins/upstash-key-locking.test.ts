// Upstash's `#!lua flags=allow-key-locking` through the local endpoint. Upstash runs a script
// under a global lock unless its shebang carries that flag; redis-server 7 refuses the flag, so the
// endpoint strips it (keeping the flags Redis knows) and maps the client's SHA1 of the flagged body
// to Redis's SHA1 of the stripped one.
import { createHash, randomBytes } from "node:crypto";
import { Redis as UpstashRedis } from "@upstash/redis";
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../../dev/standins/upstash/index.js";
import { rawClient, redisUrl } from "../../helpers/stores.js";
import { keyMaker, poster } from "./upstash-endpoint-http.js";

let endpoint: UpstashEndpoint;
let redis: Redis;
let client: UpstashRedis;
const keys = keyMaker("key-locking");
const post = poster(() => endpoint);

beforeAll(async () => {
  endpoint = await startUpstashEndpoint({ redisUrl: redisUrl() });
  redis = rawClient();
  client = new UpstashRedis({
    url: endpoint.url,
    token: endpoint.token,
    automaticDeserialization: false,
    enableAutoPipelining: false,
    retry: { retries: 0 },
  });
});
afterAll(async () => {
  await endpoint.close();
  redis.disconnect();
});
afterEach(() => keys.cleanup(redis));

const sha1 = (body: string) => createHash("sha1").update(body, "utf8").digest("hex");
/** A script body no other test sends (so its SHA is unknown until a test loads it). */
function script(flags: string, lua: string): string {
  return `#!lua flags=${flags}\n-- ${randomBytes(8).toString("hex")}\n${lua}`;
}
const ECHO = "return {KEYS[1], ARGV[1]}";
const WRITE = "return redis.call('SET', KEYS[1], ARGV[1])";

describe("local Upstash endpoint: allow-key-locking", () => {
  it("is refused by redis-server itself, which is why the endpoint strips it", async () => {
    await expect(redis.eval(script("allow-key-locking", "return 1"), 0)).rejects.toThrow(
      "Unexpected flag in script shebang: allow-key-locking",
    );
  });

  it("runs EVAL of a flagged script through @upstash/redis", async () => {
    const k = keys.key("eval");
    expect(await client.eval(script("allow-key-locking", ECHO), [k], ["a"])).toEqual([k, "a"]);
    expect(await client.eval(script("allow-key-locking", WRITE), [k], ["v"])).toBe("OK");
    expect(await redis.get(k)).toBe("v");
  });

  it("answers SCRIPT LOAD with the SHA1 of the body the client sent, and runs EVALSHA of it", async () => {
    const k = keys.key("load");
    const body = script("allow-key-locking", ECHO);
    const sha = await client.scriptLoad(body);
    expect(sha).toBe(sha1(body));
    expect(await client.evalsha(sha, [k], ["b"])).toEqual([k, "b"]);
    expect(await client.scriptExists(sha, sha1(`${body} `))).toEqual([1, 0]);
  });

  it("maps the SHA on EVAL too, so a later EVALSHA of the flagged body's SHA runs", async () => {
    const k = keys.key("eval-then-evalsha");
    const body = script("allow-key-locking", ECHO);
    await client.eval(body, [k], ["c"]);
    expect(await client.evalsha(sha1(body), [k], ["d"])).toEqual([k, "d"]);
  });

  it("answers EVALSHA of an unknown SHA with Redis's NOSCRIPT, so the client's fallback to EVAL works", async () => {
    const k = keys.key("noscript");
    const body = script("allow-key-locking", ECHO);
    const { status, text } = await post("/", ["EVALSHA", sha1(body), "1", k, "e"]);
    expect(status).toBe(400);
    expect(JSON.parse(text)).toEqual({ error: "NOSCRIPT No matching script. Please use EVAL." });
    // createScript().exec: EVALSHA, NOSCRIPT, EVAL, as the Upstash store does it.
    expect(await client.createScript(body).exec([k], ["f"])).toEqual([k, "f"]);
    expect(await client.evalsha(sha1(body), [k], ["g"])).toEqual([k, "g"]);
  });

  it("keeps no-writes: a no-writes,allow-key-locking script that writes is refused by Redis, one that reads runs", async () => {
    const k = keys.key("no-writes");
    await expect(client.eval(script("no-writes,allow-key-locking", WRITE), [k], ["v"])).rejects.toThrow(
      "Write commands are not allowed from read-only scripts",
    );
    expect(await redis.exists(k)).toBe(0);
    const reader = script("allow-key-locking,no-writes", "return redis.call('EXISTS', KEYS[1])");
    expect(await client.evalRo(reader, [k], [])).toBe(0);
    expect(await client.evalshaRo(sha1(reader), [k], [])).toBe(0);
  });

  it("still refuses a flag neither Upstash nor Redis knows, naming it as Redis does", async () => {
    const { status, text } = await post("/", ["EVAL", script("allow-key-locking,bogus-flag", "return 1"), "0"]);
    expect(status).toBe(400);
    expect(JSON.parse(text)).toEqual({ error: "ERR Unexpected flag in script shebang: bogus-flag" });
  });

  it("keeps the script's line numbers in Redis's error messages", async () => {
    const body = script("allow-key-locking", "local x = 1\nreturn redis.call('NOSUCHCOMMAND')");
    await expect(client.eval(body, [], [])).rejects.toThrow("@user_script:4");
  });

  it("accepts the flag alone, first or last, with extra spaces and a CRLF line end", async () => {
    const shebangs = [
      "#!lua flags=allow-key-locking",
      "#!lua   flags=allow-key-locking  ",
      "#!lua flags=allow-key-locking,no-writes",
      "#!lua flags=no-writes,allow-key-locking\r",
      "#!lua flags=allow-stale,allow-key-locking,allow-oom",
    ];
    for (const shebang of shebangs) {
      const { status, text } = await post("/", ["EVAL", `${shebang}\nreturn 'ran'`, "0"]);
      expect({ shebang, status, text }).toEqual({ shebang, status: 200, text: '{"result":"ran"}' });
    }
  });

  it("passes a script without the flag unchanged: its SHA is Redis's own", async () => {
    const k = keys.key("plain");
    const plain = `-- ${randomBytes(8).toString("hex")}\n${ECHO}`;
    expect(await client.scriptLoad(plain)).toBe(sha1(plain));
    expect(await client.evalsha(sha1(plain), [k], ["h"])).toEqual([k, "h"]);
    const flaggedForRedis = script("no-writes", "return 1");
    expect(await client.scriptLoad(flaggedForRedis)).toBe(await redis.script("LOAD", flaggedForRedis));
  });

  it("works in pipelines and transactions, with base64-encoded replies", async () => {
    const k = keys.key("pipeline");
    const body = script("allow-key-locking", ECHO);
    const sha = sha1(body);
    const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
    const pipeline = await post(
      "/pipeline",
      [
        ["SCRIPT", "LOAD", body],
        ["EVALSHA", sha, "1", k, "i"],
        ["SCRIPT", "EXISTS", sha],
      ],
      { "Upstash-Encoding": "base64" },
    );
    expect(JSON.parse(pipeline.text)).toEqual([{ result: b64(sha) }, { result: [b64(k), b64("i")] }, { result: [1] }]);

    const other = script("allow-key-locking", WRITE);
    const transaction = await post("/multi-exec", [
      ["SCRIPT", "LOAD", other],
      ["EVALSHA", sha1(other), "1", k, "j"],
      ["EVAL", other, "1", k, "k"],
      ["GET", k],
    ]);
    expect(transaction.status).toBe(200);
    expect(JSON.parse(transaction.text)).toEqual([
      { result: sha1(other) },
      { result: "OK" },
      { result: "OK" },
      { result: "k" },
    ]);
  });
});
