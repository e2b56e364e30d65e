// createTestWorker: the Lambda worker's drain in the test's process, over a real Redis; and a
// close() after which nothing of it is left: not the connection, not (by default) the queue.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTasks, PermanentError, type Task, type TaskDeclaration } from "../../functions/tasks.js";
import { ConfigError, InvalidInputError } from "../../shared/errors.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { createTestWorker, runTask, type TestWorker } from "../../testing/index.js";
import { envWithoutConnection } from "../helpers/events.js";
import { runUntilExit } from "../helpers/exits.js";
import { rawClient, redisUrl, uniqueQueueName } from "../helpers/stores.js";

const MINUTE = 60_000;

function emails() {
  const sent: string[] = [];
  const tasks = defineTasks({
    types: {
      "send-email": {
        leaseMs: 10_000,
        maxAttempts: 3,
        handler: async (task: Task<{ to: string }>) => {
          if (task.payload.to === "nobody") throw new PermanentError("no recipient");
          if (task.payload.to === "flaky") throw new Error("SMTP 421");
          sent.push(task.payload.to);
        },
      },
      "resize-image": {
        schema: z.object({ width: z.number().int().positive() }),
        handler: () => {},
      },
    },
  });
  return { tasks, sent };
}

/** A test worker on a queue of this test file (deleted when the file ends, whatever happens). */
function testWorker<Declared extends Record<string, unknown>>(tasks: TaskDeclaration<Declared>) {
  return createTestWorker({ tasks, redisUrl: redisUrl(), queue: uniqueQueueName("tw") });
}

/** Runs `use` with a test worker on a queue of this file, and closes the worker after it, whatever happens. */
async function withTestWorker<Declared extends Record<string, unknown>>(
  tasks: TaskDeclaration<Declared>,
  use: (worker: TestWorker<Declared>) => Promise<void>,
): Promise<void> {
  const worker = testWorker(tasks);
  try {
    await use(worker);
  } finally {
    await worker.close();
  }
}

async function keysOf(name: string): Promise<string[]> {
  const redis = rawClient();
  try {
    return await redis.keys(`leaseq:{${name}}:*`);
  } finally {
    redis.disconnect();
  }
}

describe("createTestWorker", () => {
  it("runs what is enqueued with the worker's drain, and reports what it did", async () => {
    const { tasks, sent } = emails();
    await withTestWorker(tasks, async (worker) => {
      const enqueued = await worker.enqueue([
        { id: "e-1", type: "send-email", payload: { to: "a@example.com" } },
        { type: "send-email", payload: { to: "b@example.com" }, priority: -1 },
        { id: "e-3", type: "send-email", payload: { to: "nobody" } },
      ]);
      expect(enqueued.map((result) => result.status)).toEqual(["ok", "ok", "ok"]);
      expect(enqueued[1].id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await worker.drain()).toEqual({
        claimed: 3,
        started: 3,
        done: 2,
        retried: 0,
        failed: 1,
        released: 0,
        lost: 0,
        cutOff: false,
        wakeUpsTaken: 0,
      });
      expect(sent).toEqual(["b@example.com", "a@example.com"]);
      expect(await worker.queue.admin.inspect("e-1")).toMatchObject({ state: "done", attempts: 1 });
      expect(await worker.queue.admin.inspect("e-3")).toMatchObject({
        state: "failed",
        lastError: "PermanentError: no recipient",
      });
      expect(await worker.drain()).toMatchObject({ claimed: 0 });
    });
  });

  it("keeps a handler's result with the DONE task for a type with keepResult; one past maxResultBytes fails its task", async () => {
    const tasks = defineTasks({
      types: {
        import: { keepResult: true, handler: (task: Task<{ file: string }>) => ({ rows: 3, file: task.payload.file }) },
        huge: { keepResult: true, handler: () => ({ blob: "x".repeat(20_000) }) },
        plain: { handler: () => ({ ignored: true }) },
      },
    });
    await withTestWorker(tasks, async (worker) => {
      await worker.enqueue([
        { id: "imp-1", type: "import", payload: { file: "acme.csv" } },
        { id: "huge-1", type: "huge", payload: {} },
        { id: "plain-1", type: "plain", payload: {} },
      ]);
      expect(await worker.drain()).toMatchObject({ claimed: 3, done: 2, failed: 1 });
      expect(await worker.queue.result("imp-1")).toMatchObject({
        state: "done",
        result: { rows: 3, file: "acme.csv" },
      });
      expect((await worker.queue.result("plain-1"))?.result).toBeUndefined();
      // Typed by the declaration: the handler's result, and the task's type checked against it.
      const typed = await worker.queue.waitFor("imp-1", { tasks, type: "import", timeoutMs: 1_000 });
      expect(typed?.result?.rows).toBe(3);
      expect(typed).toMatchObject({ type: "import", state: "done", finished: true });
      await expect(worker.queue.result("imp-1", { tasks, type: "huge" })).rejects.toThrow(
        'result: task "imp-1" is of type "import", not "huge" as asked',
      );
      await expect(worker.queue.result("plain-1", { tasks, type: "plain" })).rejects.toThrow(
        'result: task type "plain" keeps no result: declare it with keepResult: true',
      );
      await expect(
        worker.queue.waitFor("imp-1", { tasks, type: "imprt" as "import", timeoutMs: 1_000 }),
      ).rejects.toThrow('waitFor: type must be one of the declaration\'s types (import, huge, plain), got "imprt"');
      const huge = await worker.queue.result("huge-1");
      expect(huge?.state).toBe("failed");
      expect(huge?.error).toBe(
        "its result is 20011 bytes as JSON; the queue keeps at most 16384 (maxResultBytes) for a huge task: return a reference (an S3 key) instead",
      );
    });
    expect(() =>
      defineTasks({ types: { bad: { keepResult: "yes" as unknown as boolean, handler: () => {} } } }),
    ).toThrow(/keepResult must be true or false, got "yes"/);
  });

  it("task.progress rides the next heartbeat: a long task's progress is kept, a short one's never sent", async () => {
    const tasks = defineTasks({
      types: {
        long: {
          heartbeatMs: 1_000,
          handler: async (task: Task) => {
            task.progress({ rows: 500 });
            await new Promise((resolve) => setTimeout(resolve, 1_600));
          },
        },
        short: { handler: (task: Task) => task.progress({ rows: 1 }) },
        wrong: { maxAttempts: 1, handler: (task: Task) => task.progress({ blob: "x".repeat(5_000) }) },
      },
    });
    await withTestWorker(tasks, async (worker) => {
      await worker.enqueue([
        { id: "long-1", type: "long", payload: {} },
        { id: "short-1", type: "short", payload: {} },
        { id: "wrong-1", type: "wrong", payload: {} },
      ]);
      expect(await worker.drain()).toMatchObject({ claimed: 3, done: 2, failed: 1 });
      expect((await worker.queue.result("long-1"))?.progress).toEqual({ rows: 500 });
      expect((await worker.queue.result("short-1"))?.progress).toBeUndefined();
      expect((await worker.queue.admin.inspect("wrong-1"))?.lastError).toMatch(
        /InvalidInputError: task wrong-1: progress: progress is 5011 bytes as JSON; at most 4096/,
      );
    });
  });

  it("leaves a retry after the default backoff to the next drain; a clock ahead runs it", async () => {
    const { tasks } = emails();
    await withTestWorker(tasks, async (worker) => {
      await worker.enqueue([{ id: "f-1", type: "send-email", payload: { to: "flaky" } }]);
      expect(await worker.drain()).toMatchObject({ claimed: 1, retried: 1, failed: 0 });
      expect(await worker.queue.admin.inspect("f-1")).toMatchObject({ state: "scheduled", attempts: 1 });
      const ahead = () => Date.now() + 10 * MINUTE;
      expect(await worker.drain({ now: ahead })).toMatchObject({ claimed: 1, retried: 1 });
      expect(await worker.drain({ now: () => Date.now() + 20 * MINUTE })).toMatchObject({ claimed: 1, failed: 1 });
      expect(await worker.queue.admin.inspect("f-1")).toMatchObject({
        state: "failed",
        attempts: 3,
        lastError: "Error: SMTP 421",
      });
    });
  });

  it("runs every attempt in one drain when the type's backoff is zero, and waits for a task due within lingerMs", async () => {
    let runs = 0;
    const tasks = defineTasks({
      types: {
        flaky: {
          maxAttempts: 4,
          backoff: { baseMs: 0 },
          handler: () => {
            runs++;
            throw new Error("again");
          },
        },
        later: { handler: () => {} },
      },
    });
    await withTestWorker(tasks, async (worker) => {
      await worker.enqueue([
        { id: "x", type: "flaky" },
        { id: "soon", type: "later", delayMs: 50 },
        { id: "in-an-hour", type: "later", delayMs: 60 * MINUTE },
      ]);
      const counts = await worker.drain();
      expect(counts).toMatchObject({ claimed: 5, done: 1, retried: 3, failed: 1 });
      expect(runs).toBe(4);
      expect(await worker.queue.admin.inspect("in-an-hour")).toMatchObject({ state: "scheduled" });
    });
  });

  it("agrees with runTask: what runTask says of a payload is what the worker does with it", async () => {
    const { tasks } = emails();
    const cases = [
      { id: "ok", type: "send-email", payload: { to: "a@example.com" }, state: "done" },
      { id: "permanent", type: "send-email", payload: { to: "nobody" }, state: "failed" },
      { id: "flaky", type: "send-email", payload: { to: "flaky" }, state: "scheduled" },
      { id: "refused", type: "resize-image", payload: { width: -1 }, state: "failed" },
    ] as const;
    const expected = { done: "done", failed: "failed", retry: "scheduled" } as const;
    await withTestWorker(tasks, async (worker) => {
      for (const task of cases) {
        expect(expected[(await runTask(tasks, task.type, task.payload)).status], task.id).toBe(task.state);
      }
      // The refused payload reached Redis another way than the producer, which would refuse it.
      await worker.queue.enqueue(
        cases.map(({ id, type, payload }) => ({ id, type, payload })),
        { now: Date.now() },
      );
      await worker.drain();
      for (const task of cases) expect((await worker.queue.admin.inspect(task.id))?.state, task.id).toBe(task.state);
      const refused = await runTask(tasks, "resize-image", { width: -1 });
      expect(await worker.queue.admin.inspect("refused")).toMatchObject({
        lastError: refused.status === "failed" ? refused.reason : "",
      });
    });
  });

  it("checks tasks as the producer does: nothing of a call with a bad task is enqueued", async () => {
    const { tasks } = emails();
    await withTestWorker(tasks, async (worker) => {
      const call = worker.enqueue([
        { id: "ok-1", type: "send-email", payload: { to: "a@example.com" } },
        { id: "bad-1", type: "resize-image", payload: { width: -1 } },
        // @ts-expect-error: a type the declaration does not have does not compile
        { id: "bad-2", type: "send-emial", payload: { to: "a" } },
      ]);
      await expect(call).rejects.toThrow(InvalidInputError);
      await expect(call).rejects.toThrow(
        /enqueue: nothing sent, 2 problems: tasks\[1\] \(type "resize-image"\): payload\.width: .*; tasks\[2\]: task type "send-emial" is not declared; declared: send-email, resize-image/,
      );
      expect(await worker.queue.admin.inspect("ok-1")).toBeUndefined();
    });
  });

  it("reclaim() returns a lease its holder let expire, and the next drain runs the task", async () => {
    const { tasks, sent } = emails();
    await withTestWorker(tasks, async (worker) => {
      const now = Date.now();
      await worker.enqueue([{ id: "r-1", type: "send-email", payload: { to: "r@example.com" } }], { now });
      // A worker that claimed it and died.
      expect(await worker.queue.claim({ count: 1, now })).toHaveLength(1);
      expect(await worker.reclaim({ now })).toMatchObject({ reclaimed: [] });
      expect(await worker.reclaim({ now: now + 10_000 + 2_001 })).toMatchObject({ reclaimed: ["r-1"], failed: [] });
      expect(await worker.drain()).toMatchObject({ claimed: 1, done: 1 });
      expect(sent).toEqual(["r@example.com"]);
    });
  });

  it("close(): a queue it named is deleted, one you named is kept unless asked; it is idempotent and ends the worker", async () => {
    const { tasks } = emails();
    const fresh = createTestWorker({ tasks, redisUrl: redisUrl() });
    // @ts-expect-error: the worker takes the declaration's types only
    await expect(fresh.enqueue([{ type: "send-emial", payload: { to: "a" } }])).rejects.toThrow(InvalidInputError);
    const name = fresh.queue.name;
    expect(name).toMatch(/^leaseq-test-[0-9a-f]{12}$/);
    await fresh.enqueue([{ type: "send-email", payload: { to: "a@example.com" } }]);
    expect(await keysOf(name)).not.toEqual([]);
    await fresh.close();
    await fresh.close();
    expect(await keysOf(name)).toEqual([]);
    await expect(fresh.drain()).rejects.toThrow(`drain: this test worker of queue "${name}" is closed`);

    const named = testWorker(tasks);
    await named.enqueue([{ type: "send-email", payload: { to: "a@example.com" } }]);
    await named.close();
    expect(await keysOf(named.queue.name)).not.toEqual([]);
    const again = createTestWorker({ tasks, redisUrl: redisUrl(), queue: named.queue.name });
    expect(await again.drain()).toMatchObject({ done: 1 });
    await again.close({ deleteQueue: true });
    expect(await keysOf(named.queue.name)).toEqual([]);
  });

  it("takes a store of yours and leaves it open", async () => {
    const store = TcpStore.fromUrl(redisUrl());
    const { tasks } = emails();
    let worker: TestWorker | undefined;
    try {
      worker = createTestWorker({ tasks, store, queue: uniqueQueueName("tw") });
      await worker.enqueue([{ type: "send-email", payload: { to: "a@example.com" } }]);
      await worker.close({ deleteQueue: false });
      expect(await worker.queue.stats({ now: Date.now() })).toMatchObject({ ready: 1 });
    } finally {
      await store.close();
    }
  });

  it("refuses bad options in one ConfigError, and rejects when Redis cannot be reached", async () => {
    const { tasks } = emails();
    const store = TcpStore.fromUrl(redisUrl());
    const bad = () =>
      createTestWorker({
        tasks,
        redisUrl: redisUrl(),
        store,
        claimBatch: 0,
        queue: "my queue",
        // @ts-expect-error: not an option
        linger: 5,
      });
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow(
      [
        "invalid configuration:",
        '- createTestWorker: unknown option "linger"; the options are tasks, redisUrl, store, queue, claimBatch, lingerMs',
        "- createTestWorker: give redisUrl or store, not both",
        "- createTestWorker: claimBatch must be an integer from 1 to 100, got 0",
        '- createTestWorker: queue must be 1-64 characters of A-Z a-z 0-9 _ . -, got "my queue"',
      ].join("\n"),
    );
    await store.close();
    const unreachable = createTestWorker({ tasks, redisUrl: "redis://127.0.0.1:1" });
    await expect(unreachable.drain()).rejects.toThrow(/Redis unreachable/);
    await unreachable.close();
  });
});

describe("a test worker in its own process", () => {
  /** Runs fixtures/test-worker-process.ts; resolves to its output and how long it took to exit after it. */
  async function run(extraEnv: Record<string, string>, waitMs: number) {
    const env = { ...envWithoutConnection(), REDIS_URL: redisUrl(), LEASEQ_QUEUE: uniqueQueueName("tw"), ...extraEnv };
    const result = await runUntilExit(
      new URL("./fixtures/test-worker-process.ts", import.meta.url).pathname,
      env,
      waitMs,
    );
    return { ...result, counts: result.firstLine };
  }

  it("exits at once after close()", async () => {
    const result = await run({}, 5_000);
    expect(result.counts, result.stderr).toMatchObject({ claimed: 1, done: 1 });
    expect(result.exitAfterMs, result.stderr).toBeDefined();
    // Not held open (the run kills it 5 s after its result).
    expect(result.exitAfterMs).toBeLessThan(4_000);
  });

  it("without close(), is kept alive by its connection (what close() is for)", async () => {
    const result = await run({ LEASEQ_TEST_CLOSE: "no" }, 2_000);
    expect(result.counts, result.stderr).toMatchObject({ claimed: 1, done: 1 });
    expect(result.exitAfterMs).toBeUndefined();
  });
});
