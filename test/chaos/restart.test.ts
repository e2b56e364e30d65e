// Redis restarted mid-run, on servers this file starts. Without persistence a
// restart loses every task (docs/reliability.md says so); with AOF and `appendfsync always` Redis writes
// each script's effects to disk before it answers, so nothing acknowledged is lost even to a
// SIGKILL. While Redis is down, calls fail fast with a clear StoreError; they work again once it
// is back, over TCP and through the Upstash endpoint alike.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Logger } from "@aws-lambda-powertools/logger";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { startUpstashEndpoint, type UpstashEndpoint } from "../../dev/standins/upstash/index.js";
import { createWorker } from "../../functions/worker.js";
import { StoreError } from "../../shared/errors.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { UpstashStore } from "../../shared/stores/upstash.js";
import { expectClean } from "../helpers/check.js";
import { captureStdout, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { assertConsistent } from "../helpers/invariants.js";
import { type StartedRedis, startRedisServer } from "../helpers/redis-server.js";
import { configuredQueue, uniqueQueueName } from "../helpers/stores.js";
import { chaosSeed, random, report, scale, sleep } from "./helpers/chaos.js";

const NOW = 1_800_000_000_000;
const LEASE_MS = 1_000;
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** SIGKILLs a server this file started (a crash, not a shutdown) and waits until it is gone. */
async function crash(server: StartedRedis): Promise<void> {
  server.process.kill("SIGKILL");
  await server.stop(); // waits for the exit; removes the server's own temp dir
}

/** Retries `call` until it succeeds (Redis is back and the client reconnected), at most `ms`. */
async function eventually<T>(call: () => Promise<T>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(100);
    }
  }
}

interface Side {
  name: string;
  store: Store;
  queue: Queue;
  /** Message a call must fail with while Redis is down. */
  downError: RegExp;
}

async function sides(server: StartedRedis, queueName: string): Promise<{ sides: Side[]; endpoint: UpstashEndpoint }> {
  const endpoint = await startUpstashEndpoint({ redisUrl: server.url });
  const options = { name: queueName, defaultPolicy: { leaseMs: LEASE_MS, maxAttempts: 5 }, clockSkewMs: 0 };
  const tcp = TcpStore.fromUrl(server.url);
  const upstash = new UpstashStore({ url: endpoint.url, token: endpoint.token, timeoutMs: 2_000 });
  cleanups.push(() => tcp.close());
  // Both sides declare the same settings; the first configure writes them, the second finds them.
  const tcpQueue = await configuredQueue(tcp, options);
  return {
    endpoint,
    sides: [
      {
        name: "tcp",
        store: tcp,
        queue: tcpQueue,
        downError: /Redis unreachable at 127\.0\.0\.1:\d+ \(from the URL given to TcpStore\.fromUrl\)/,
      },
      {
        name: "upstash",
        store: upstash,
        queue: await configuredQueue(upstash, options),
        downError: /the Upstash REST API failed the request/,
      },
    ],
  };
}

describe("Redis restart", () => {
  it("without persistence: clear errors while down, recovery after, and every task gone (as documented)", async () => {
    const server = await startRedisServer();
    const name = uniqueQueueName("restart");
    const { sides: both, endpoint } = await sides(server, name);
    cleanups.push(() => endpoint.close());
    const [tcp, upstash] = both;
    await tcp.queue.enqueue(
      Array.from({ length: 20 }, (_, i) => ({ id: `t${i}`, type: "t" })),
      { now: NOW },
    );
    await upstash.queue.ack(await upstash.queue.claim({ count: 5, now: NOW }), { now: NOW });
    expect(await tcp.queue.stats({ now: NOW })).toMatchObject({ ready: 15, done: 5 });

    await crash(server);
    const failures: Record<string, number> = {};
    for (const side of both) {
      const startedAt = Date.now();
      const error = await side.queue.claim({ count: 1, now: NOW }).catch((e: unknown) => e);
      failures[side.name] = Date.now() - startedAt;
      expect(error, side.name).toBeInstanceOf(StoreError);
      expect((error as Error).message, side.name).toMatch(/^claim: /);
      expect((error as Error).message, side.name).toMatch(side.downError);
      await expect(side.queue.enqueue([{ id: "x", type: "t" }], { now: NOW }), side.name).rejects.toThrow(StoreError);
      expect(failures[side.name], `${side.name} fails fast`).toBeLessThan(5_000);
    }
    // The worker Lambda fails the whole invocation, so SQS keeps the batch and retries it.
    const worker = createWorker({
      env: { LEASEQ_QUEUE: name, UPSTASH_REDIS_REST_URL: endpoint.url, UPSTASH_REDIS_REST_TOKEN: endpoint.token },
      tasks: { types: { echo: { handler: () => {} } } },
      logger: new Logger({ serviceName: "restart", logLevel: "SILENT" }),
    });
    const batch = sqsEvent(sqsRecord({ tasks: [{ id: "from-sqs", type: "echo" }] }, "m-1"));
    await expect(worker(batch, lambdaContext())).rejects.toThrow(StoreError);

    const back = await startRedisServer([], server.port);
    cleanups.push(() => back.stop());
    for (const side of both) {
      const stats = await eventually(() => side.queue.stats({ now: NOW }));
      // Nothing was on disk: the 15 waiting tasks and the 5 done ones are gone.
      expect(stats, side.name).toMatchObject({ ready: 0, leased: 0, done: 0, failed: 0 });
    }
    // SQS delivers the batch again, and this time it goes through.
    const { result } = await captureStdout(() => worker(batch, lambdaContext()));
    expect(result).toEqual({ batchItemFailures: [] });
    expect(await tcp.queue.admin.inspect("from-sqs")).toMatchObject({ state: "done" });
    report("restart-volatile", { tasksBefore: 20, tasksAfter: 0, msToFailWhileDown: failures });
  }, 30_000);

  /** Starts a server, opens both sides on it, and freezes the server with SIGSTOP (it keeps its sockets open). */
  async function frozen(timeoutMs: number) {
    const server = await startRedisServer();
    const endpoint = await startUpstashEndpoint({ redisUrl: server.url });
    const tcp = TcpStore.fromUrl(server.url, { timeoutMs });
    const upstash = new UpstashStore({ url: endpoint.url, token: endpoint.token, timeoutMs });
    const options = { name: uniqueQueueName("frozen") };
    const queues = { tcp: new Queue(tcp, options), upstash: new Queue(upstash, options) };
    await queues.tcp.stats({ now: NOW }); // connected
    server.process.kill("SIGSTOP");
    return {
      queues,
      thaw: async () => {
        server.process.kill("SIGCONT");
        await tcp.close();
        await endpoint.close();
        await server.stop();
      },
    };
  }

  /** What a call does within `ms`: resolves, rejects (with the error), or is still waiting. */
  const within = (ms: number, call: Promise<unknown>) =>
    Promise.race([
      call.then(
        () => ({ outcome: "resolved" as const }),
        (error: unknown) => ({ outcome: "rejected" as const, error }),
      ),
      sleep(ms).then(() => ({ outcome: "still waiting" as const })),
    ]);

  it("a Redis that stops answering (SIGSTOP, sockets open): the Upstash path fails with a clear timeout", async () => {
    const { queues, thaw } = await frozen(1_000);
    try {
      const result = await within(8_000, queues.upstash.claim({ count: 1, now: NOW }));
      expect(result.outcome).toBe("rejected");
      expect(String((result as { error?: unknown }).error)).toMatch(
        /claim: no answer from Upstash at 127\.0\.0\.1:\d+ \(from the url given to UpstashStore\) within 1000 ms/,
      );
    } finally {
      await thaw();
    }
  }, 30_000);

  // The TCP store has a command timeout: without one, a frozen or partitioned server (no RST) would
  // make every call wait forever and a worker Lambda hang until its own timeout.
  it("a Redis that stops answering (SIGSTOP, sockets open): the TCP path fails with a clear error in bounded time", async () => {
    const { queues, thaw } = await frozen(1_000);
    try {
      const result = await within(8_000, queues.tcp.stats({ now: NOW }));
      expect(result.outcome).toBe("rejected");
      expect((result as { error?: unknown }).error).toBeInstanceOf(StoreError);
    } finally {
      await thaw();
    }
  }, 30_000);

  const OPERATIONS = scale(300, 3_000);
  it(
    `with AOF (appendfsync always): a SIGKILL mid-run loses no acknowledged enqueue or ack (${OPERATIONS} rounds)`,
    async () => {
      const seed = chaosSeed();
      const rng = random(seed);
      const dir = mkdtempSync(join(tmpdir(), "leaseq-aof-"));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const aof = ["--appendonly", "yes", "--appendfsync", "always", "--dir", dir];
      let server = await startRedisServer(aof);
      const name = uniqueQueueName("aof");
      const { sides: both, endpoint } = await sides(server, name);
      cleanups.push(() => endpoint.close());

      const acknowledged = new Set<string>(); // enqueues Redis confirmed
      const acked = new Set<string>(); // acks Redis confirmed ("ok")
      const crashes: number[] = [];
      let failedCalls = 0;
      let now = NOW;
      // The chaos side: crash the server at random moments while the workload runs, bring it back
      // on the same port with the same files a little later. Calls in flight at the crash are
      // indeterminate: only what Redis confirmed counts as acknowledged.
      let running = true;
      const chaos = (async () => {
        while (running && crashes.length < scale(3, 15)) {
          await sleep(150 + rng() * 400);
          if (!running) break;
          await crash(server);
          crashes.push(acknowledged.size);
          await sleep(200 + rng() * 400);
          server = await startRedisServer(aof, server.port);
        }
      })();
      for (let round = 0; round < OPERATIONS || crashes.length === 0; round++) {
        now += 50;
        const side = both[round % 2];
        const ids = Array.from({ length: 3 }, (_, i) => `r${round}-${i}`);
        try {
          const results = await side.queue.enqueue(
            ids.map((id) => ({ id, type: "t" })),
            { now },
          );
          for (const result of results) acknowledged.add(result.id);
          const claimed = await side.queue.claim({ count: 1 + Math.floor(rng() * 4), now });
          for (const result of await side.queue.ack(claimed, { now })) if (result.status === "ok") acked.add(result.id);
        } catch (error) {
          expect(error).toBeInstanceOf(StoreError);
          failedCalls++; // Redis is down or the client is reconnecting
          await sleep(20);
        }
      }
      running = false;
      await chaos;
      cleanups.push(() => server.stop());

      // Drain: leases cut short by a crash come back through reclaim; then everything is claimed and acked.
      const [tcp] = both;
      for (let round = 0; round < 10_000; round++) {
        now += LEASE_MS + 1;
        await eventually(() => tcp.queue.reclaim({ now, limit: 10_000 }));
        const claimed = await eventually(() => tcp.queue.claim({ count: 1000, now }));
        if (claimed.length === 0) break;
        await tcp.queue.ack(claimed, { now });
      }
      const redis = new Redis(server.url);
      try {
        const records = await assertConsistent(redis, tcp.queue);
        await expectClean(tcp.queue, now);
        const missing = [...acknowledged].filter((id) => !records.has(id));
        const undone = [...acked].filter((id) => records.get(id)?.state !== "D");
        const notFinished = [...records].filter(([, r]) => r.state !== "D");
        report("restart-aof", {
          seed,
          rounds: OPERATIONS,
          crashes: crashes.length,
          acknowledgedEnqueues: acknowledged.size,
          confirmedAcks: acked.size,
          failedCallsWhileDown: failedCalls,
          lostEnqueues: missing.length,
          lostAcks: undone.length,
        });
        expect(crashes.length).toBeGreaterThan(0);
        expect(missing, `acknowledged enqueues lost (seed ${seed})`).toEqual([]);
        expect(undone, `confirmed acks lost (seed ${seed})`).toEqual([]);
        expect(notFinished).toEqual([]);
      } finally {
        redis.disconnect();
      }
    },
    scale(60_000, 600_000),
  );
});
