// leaseq's scripts as one Redis Functions library (shared/scripts.ts), over the TCP store, on a
// redis-server of this file's own (it restarts it, flushes its functions and counts its commands):
// loaded on the first call and called by name after; loaded again after a restart or FUNCTION
// FLUSH; run by EVALSHA where the server refuses Functions; side by side with another release's.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkLibraryState, perCallBlocks } from "../../bin/generate-lua.js";
import { queueKeys, scriptKeys } from "../../shared/keys.js";
import { Queue } from "../../shared/queue.js";
import { LIBRARY, luaLibrary, SCRIPTS } from "../../shared/scripts.js";
import { FunctionCalls, isFunctionsMissing } from "../../shared/store.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { type StartedRedis, startRedisServer } from "../helpers/redis-server.js";

const NOW = 1_800_000_000_000;

let server: StartedRedis;
let admin: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
});
afterAll(async () => {
  admin.disconnect();
  await server.stop();
});

/** Calls of each command since the last CONFIG RESETSTAT, from INFO commandstats. */
async function counts(): Promise<Record<string, number>> {
  const info = await admin.info("commandstats");
  return Object.fromEntries([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1], Number(m[2])]));
}

/** A queue's round trip: three tasks in, claimed, acknowledged; returns what stats says after. */
async function roundTrip(queue: Queue) {
  await queue.enqueue(
    ["a", "b", "c"].map((id) => ({ id, type: "t" })),
    { now: NOW },
  );
  const tasks = await queue.claim({ count: 3, now: NOW });
  expect(tasks.map((task) => task.id)).toEqual(["a", "b", "c"]);
  expect((await queue.ack(tasks, { now: NOW })).map((r) => r.status)).toEqual(["ok", "ok", "ok"]);
  return queue.stats({ now: NOW });
}

describe("the function library", () => {
  it("is loaded by the first call that finds it missing, once, and every call after goes by name", async () => {
    await admin.call("FUNCTION", "FLUSH");
    await admin.config("RESETSTAT");
    const store = TcpStore.fromUrl(server.url);
    try {
      const queue = new Queue(store, { name: "library-first" });
      // Calls that find it missing together load it once.
      await Promise.all([queue.stats({ now: NOW }), queue.stats({ now: NOW }), queue.stats({ now: NOW })]);
      expect(await roundTrip(queue)).toMatchObject({ ready: 0, done: 3 });
      const calls = await counts();
      expect(calls["function|load"]).toBe(1);
      expect(calls.evalsha ?? 0).toBe(0);
      expect(calls.eval ?? 0).toBe(0);
      expect((calls.fcall ?? 0) + (calls.fcall_ro ?? 0)).toBeGreaterThanOrEqual(6);
      expect(store.functions).toBe("yes");
      const [library] = (await admin.call("FUNCTION", "LIST", "LIBRARYNAME", LIBRARY.name)) as unknown[][];
      expect(library[1]).toBe(LIBRARY.name);
      expect((library[5] as unknown[]).length).toBe(Object.keys(SCRIPTS).length);
      await queue.admin.drop({ confirm: "library-first" });
    } finally {
      await store.close();
    }
  });

  it("is loaded again, unseen by the caller, after FUNCTION FLUSH and after a restart without persistence", async () => {
    const store = TcpStore.fromUrl(server.url);
    try {
      const queue = new Queue(store, { name: "library-again" });
      expect(await roundTrip(queue)).toMatchObject({ done: 3 });
      await admin.call("FUNCTION", "FLUSH");
      await queue.admin.drop({ confirm: "library-again" });
      expect(await roundTrip(queue)).toMatchObject({ done: 3 });

      // A restart on the same port, with no RDB or AOF: the library is gone with the data.
      admin.disconnect();
      const port = server.port;
      await server.stop();
      server = await startRedisServer([], port);
      admin = new Redis(server.url);
      expect(await admin.call("FUNCTION", "LIST")).toEqual([]);
      expect(await roundTrip(queue)).toMatchObject({ done: 3 });
      expect(await admin.call("FUNCTION", "LIST", "LIBRARYNAME", LIBRARY.name)).toHaveLength(1);
      await queue.admin.drop({ confirm: "library-again" });
    } finally {
      await store.close();
    }
  });

  it("is loaded again when it goes between a load and the call (another process's FUNCTION DELETE), up to 3 loads", async () => {
    const keys = scriptKeys(queueKeys("library-race"));
    const stats = () => admin.call("FCALL_RO", `${LIBRARY.name}_stats`, keys.length, ...keys, String(Date.now()));
    let loads = 0;
    // Another process deletes the library right after this one loads it: once, then every time.
    const loadThenDeleted = (times: number) => async () => {
      loads++;
      await admin.call("FUNCTION", "LOAD", "REPLACE", LIBRARY.code);
      if (loads <= times) await admin.call("FUNCTION", "DELETE", LIBRARY.name);
    };
    await admin.call("FUNCTION", "FLUSH");
    expect(await new FunctionCalls().run(stats, loadThenDeleted(1))).toHaveLength(12);
    expect(loads).toBe(2);
    await admin.call("FUNCTION", "FLUSH");
    loads = 0;
    await expect(new FunctionCalls().run(stats, loadThenDeleted(Number.POSITIVE_INFINITY))).rejects.toThrow(
      /Function not found/,
    );
    expect(loads).toBe(3);
  });

  it("where the server refuses Functions (an ACL here; a Redis before 7), every script goes by EVALSHA, with the same results", async () => {
    await admin.call(
      "ACL",
      "SETUSER",
      "no-functions",
      "on",
      "nopass",
      "~*",
      "&*",
      "+@all",
      "-fcall",
      "-fcall_ro",
      "-function",
    );
    await admin.config("RESETSTAT");
    const store = TcpStore.fromUrl(`redis://no-functions@127.0.0.1:${server.port}`);
    try {
      const queue = new Queue(store, { name: "library-refused" });
      expect(await roundTrip(queue)).toMatchObject({ ready: 0, done: 3 });
      expect(store.functions).toBe("no");
      const calls = await counts();
      expect(calls.fcall ?? 0).toBe(0); // NOPERM is refused before it runs: no call counted
      expect(calls.evalsha).toBeGreaterThanOrEqual(4);
      await queue.admin.drop({ confirm: "library-refused" });
    } finally {
      await store.close();
      await admin.call("ACL", "DELUSER", "no-functions");
    }
  });

  it("is named by its digest, so another release's library loads beside it and each runs its own", async () => {
    const other = luaLibrary(["allow-stale"]); // any other text: another digest, other function names
    expect(other.name).not.toBe(LIBRARY.name);
    expect(other.name).toMatch(/^leaseq_[0-9a-f]{16}$/);
    await admin.call("FUNCTION", "LOAD", "REPLACE", other.code);
    const store = TcpStore.fromUrl(server.url);
    try {
      const queue = new Queue(store, { name: "library-beside" });
      expect(await roundTrip(queue)).toMatchObject({ done: 3 });
      const names = ((await admin.call("FUNCTION", "LIST")) as unknown[][]).map((library) => library[1]);
      expect(names).toEqual(expect.arrayContaining([LIBRARY.name, other.name]));
      await queue.admin.drop({ confirm: "library-beside" });
    } finally {
      await store.close();
      await admin.call("FUNCTION", "DELETE", other.name);
    }
  });

  it("gives up on Functions only when the server refuses those commands, not for an error a function raised", () => {
    const refused = [
      "ERR unknown command 'FCALL', with args beginning with: ", // Redis 7's words
      "ERR unknown command `FCALL`, with args beginning with: `x`", // Redis 6's
      "ERR unknown subcommand 'LOAD'. Try FUNCTION HELP.",
      "NOPERM this user has no permissions to run the 'fcall' command",
      "NOPERM this user has no permissions to run the 'function|load' command",
    ];
    for (const text of refused) expect(isFunctionsMissing(new Error(text)), text).toBe(true);
    const answered = [
      "ERR Unknown Redis command called from script",
      "NOPERM this user has no permissions to access one of the keys used as arguments",
      "WRONGTYPE Operation against a key holding the wrong kind of value",
    ];
    for (const text of answered) expect(isFunctionsMissing(new Error(text)), text).toBe(false);
  });

  it("generation refuses a helper that would carry state from one call to the next", () => {
    const blocks = [
      { names: ["H"], text: "local H = {}" },
      { names: ["seen"], text: "H.seen={}" },
      { names: ["LIMITS"], text: "H.LIMITS={a=1}" },
      { names: ["f"], text: "function H.f()\nH.seen[1]=1\nend" },
    ];
    const perCall = perCallBlocks(blocks);
    expect(perCall).toEqual([1]);
    expect(() => checkLibraryState(blocks, perCall, [["ok.lua", "H.seen={}\nreturn 1"]])).not.toThrow();
    const refused = (script: string) => () => checkLibraryState(blocks, perCall, [["bad.lua", script]]);
    expect(refused("H.total=1")).toThrow(/lua\/bad\.lua assigns H\.total, which is no per-call field/);
    expect(refused("H.LIMITS.a=2")).toThrow(/writes into the constant H\.LIMITS/);
    expect(refused("H.LIMITS['b']=2")).toThrow(/writes into the constant H\.LIMITS/);
    expect(refused("table.insert(H.LIMITS,3)")).toThrow(/changes the constant H\.LIMITS/);
    expect(refused("H.LIMITS={}")).toThrow(/assigns H\.LIMITS/);
  });
});
