// runTask and testTask, without Redis: a handler runs as the worker would run it (payload through
// JSON, the type's schema, then the handler), and what it throws is reported, never swallowed.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTasks, PermanentError, type Task } from "../../functions/tasks.js";
import { InvalidInputError } from "../../shared/errors.js";
import { runTask, testTask } from "../../testing/index.js";

const NOW = 1_800_000_000_000;

function declaration() {
  const received: Task[] = [];
  const tasks = defineTasks({
    types: {
      "send-email": {
        leaseMs: 30_000,
        maxAttempts: 3,
        backoff: { baseMs: 1_000, maxMs: 60_000 },
        handler: async (task: Task<{ to: string; at?: unknown }>) => {
          received.push(task);
          if (task.payload.to === "nobody") throw new PermanentError("no recipient");
          if (task.payload.to === "flaky") throw new Error("SMTP 421");
        },
      },
      "resize-image": {
        schema: z.object({ width: z.number().int().positive(), tags: z.array(z.string()).default([]) }),
        handler: (task) => void received.push(task),
      },
    },
    acceptTypes: ["report"],
  });
  return { tasks, received };
}

describe("runTask", () => {
  it("runs the handler with the Task the worker would build, the payload as JSON brings it back", async () => {
    const { tasks, received } = declaration();
    const at = new Date(NOW);
    const outcome = await runTask(
      tasks,
      "send-email",
      { to: "a@example.com", at },
      { id: "e-1", group: "customer-42", now: NOW },
    );
    expect(outcome).toEqual({ status: "done" });
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      id: "e-1",
      type: "send-email",
      group: "customer-42",
      payload: { to: "a@example.com", at: at.toISOString() },
      attempt: 1,
      maxAttempts: 3,
      leaseDeadlineMs: NOW + 30_000,
    });
    expect(received[0].signal.aborted).toBe(false);
  });

  it("reports a PermanentError as failed, with what was thrown and the text the queue keeps", async () => {
    const { tasks } = declaration();
    const outcome = await runTask(tasks, "send-email", { to: "nobody" });
    expect(outcome).toMatchObject({ status: "failed", reason: "PermanentError: no recipient" });
    expect(outcome.status === "failed" && outcome.error).toBeInstanceOf(PermanentError);
  });

  it("reports any other throw as a retry at its type's backoff, and as failed on the last attempt", async () => {
    const { tasks } = declaration();
    const first = await runTask(tasks, "send-email", { to: "flaky" }, { now: NOW });
    expect(first).toMatchObject({ status: "retry", reason: "Error: SMTP 421" });
    // Retry 1 waits min(60000, 1000 * 2^0) ms, its first half fixed and the other random.
    const retryAtMs = first.status === "retry" ? first.retryAtMs : 0;
    expect(retryAtMs).toBeGreaterThanOrEqual(NOW + 500);
    expect(retryAtMs).toBeLessThanOrEqual(NOW + 1_000);
    const second = await runTask(tasks, "send-email", { to: "flaky" }, { now: NOW, attempt: 2 });
    expect(second.status === "retry" && second.retryAtMs).toBeGreaterThanOrEqual(NOW + 1_000);
    expect(await runTask(tasks, "send-email", { to: "flaky" }, { attempt: 3 })).toMatchObject({
      status: "failed",
      reason: "Error: SMTP 421",
    });
  });

  it("checks the payload with the type's schema: refused, the task fails and the handler is not called; else the handler gets the schema's output", async () => {
    const { tasks, received } = declaration();
    const refused = await runTask(tasks, "resize-image", { width: -1 });
    expect(refused).toMatchObject({ status: "failed" });
    expect(refused.status === "failed" && refused.reason).toMatch(
      /^PermanentError: payload of task type "resize-image" fails its schema: payload\.width: /,
    );
    expect(received).toEqual([]);
    expect(await runTask(tasks, "resize-image", { width: 64 })).toEqual({ status: "done" });
    expect(received[0].payload).toEqual({ width: 64, tags: [] });
  });

  it("passes the signal it is given", async () => {
    const controller = new AbortController();
    const tasks = defineTasks({
      types: {
        wait: {
          handler: (task) =>
            new Promise<void>((_resolve, reject) =>
              task.signal.addEventListener("abort", () => reject(new Error("stopped"))),
            ),
        },
      },
    });
    const running = runTask(tasks, "wait", {}, { signal: controller.signal });
    controller.abort();
    expect(await running).toMatchObject({ status: "retry", reason: "Error: stopped" });
  });

  it("throws for a type it cannot run, an attempt out of range and a payload the queue would refuse", async () => {
    const { tasks } = declaration();
    // @ts-expect-error: a type the declaration does not have does not compile
    await expect(runTask(tasks, "send-emial", { to: "a" })).rejects.toThrow(
      new InvalidInputError(
        'runTask: task type "send-emial" has no handler in this declaration; its types: send-email, resize-image',
      ),
    );
    await expect(runTask(tasks, "report", {})).rejects.toThrow(/task type "report" has no handler/);
    await expect(runTask(tasks, "send-email", { to: "a" }, { attempt: 4 })).rejects.toThrow(
      'runTask: attempt must be an integer from 1 to 3 (the maxAttempts of "send-email"), got 4',
    );
    const cyclic: { to: string; self?: unknown } = { to: "a" };
    cyclic.self = cyclic;
    await expect(runTask(tasks, "send-email", cyclic)).rejects.toThrow(/payload must be JSON-serializable/);
    // @ts-expect-error: a payload of the wrong shape does not compile
    await runTask(tasks, "send-email", { to: 42 });
  });
});

describe("testTask", () => {
  it("builds the Task a handler receives: the fields given, defaults for the others", () => {
    const before = Date.now();
    const task = testTask({ payload: { to: "a@example.com" }, attempt: 2 });
    expect(task).toMatchObject({
      type: "test",
      group: undefined,
      payload: { to: "a@example.com" },
      attempt: 2,
      maxAttempts: 5,
    });
    expect(task.id).toMatch(/^[0-9a-f-]{36}$/);
    // A lease as a claim gives it: the default heartbeat, 30 s.
    expect(task.leaseDeadlineMs).toBeGreaterThanOrEqual(before + 30_000);
    expect(task.signal.aborted).toBe(false);
    expect(testTask().payload).toEqual({});
    const handler = async (given: Task<{ to: string }>) => given.payload.to;
    return expect(handler(task)).resolves.toBe("a@example.com");
  });

  it("refuses a field a Task does not have", () => {
    // @ts-expect-error: not a field of Task
    expect(() => testTask({ paylod: {} })).toThrow(
      'testTask: unknown field "paylod"; a Task has id, type, group, payload, attempt, maxAttempts, leaseDeadlineMs, signal',
    );
  });
});
