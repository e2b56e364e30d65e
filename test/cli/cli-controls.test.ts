// The operator's verbs of the CLI, run in process (main, with its own env and streams) against a real redis-server: pause and
// resume, cancel, purge, requeue and delete by filter (with their dry runs), list with filters and
// errors, and queues.
import { afterAll, describe, expect, it } from "vitest";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { failTasks, redisUrl, uniqueQueueName } from "../helpers/stores.js";
import { runCli } from "./cli-run.js";

const store = TcpStore.fromUrl(redisUrl());
afterAll(() => store.close());

function fresh() {
  const name = uniqueQueueName("ops");
  const env = { REDIS_URL: redisUrl(), LEASEQ_QUEUE: name };
  const queue = new Queue(store, { name, settings: { defaultPolicy: { leaseMs: 60_000, maxAttempts: 1 } } });
  const cli = (args: string[]) => runCli(args, env);
  return { name, queue, cli };
}

/** `leaseq resume` of queue `name`, given the wake queue (a local SQS stand-in). */
function resumeWaking(name: string, sqs: LocalSqs) {
  return runCli(["resume"], {
    REDIS_URL: redisUrl(),
    LEASEQ_QUEUE: name,
    LEASEQ_WAKE_QUEUE_URL: sqs.queueUrl,
    LEASEQ_SQS_ENDPOINT: sqs.endpoint,
  });
}

describe("leaseq CLI: the operator's verbs", { timeout: 60_000 }, () => {
  it("pause shows in stats and stops claims; resume --type and resume bring the work back", async () => {
    const { cli, queue, name } = fresh();
    await queue.enqueue([{ id: "a", type: "email" }], { now: Date.now() });
    expect(await cli(["pause"])).toMatchObject({ code: 0, stdout: `paused queue "${name}"\n` });
    expect((await cli(["pause"])).stdout).toBe(`queue "${name}" was paused already\n`);
    expect(await cli(["pause", "--type", "resize"])).toMatchObject({ code: 0 });
    const stats = await cli(["stats"]);
    expect(stats.stdout).toContain("PAUSED    the queue leases nothing until leaseq resume");
    expect(stats.stdout).toContain("paused types: resize (leaseq resume --type)");
    expect(JSON.parse((await cli(["stats", "--json"])).stdout)).toMatchObject({
      paused: true,
      pausedTypes: ["resize"],
    });
    expect(await queue.claim({ count: 5, now: Date.now() })).toEqual([]);
    expect(
      (await cli(["resume", "--type", "resize"])).stdout,
      "the queue itself is still paused: nothing to wake",
    ).toBe(`resumed task type "resize" of queue "${name}"\n`);
    // With the wake queue's URL, a resume that leaves ready work sends the wake-up itself.
    const sqs = new LocalSqs(async () => undefined);
    await sqs.listen();
    try {
      const resumed = await resumeWaking(name, sqs);
      expect(resumed).toMatchObject({
        code: 0,
        stdout: `resumed queue "${name}"\nsent a wake-up to ${sqs.queueUrl}\n`,
      });
      expect(sqs.queue.all().map((message) => message.body)).toEqual(['{"leaseq":"wake"}']);
    } finally {
      await sqs.close();
    }
    expect((await queue.claim({ count: 5, now: Date.now() })).map((task) => task.id)).toEqual(["a"]);
  });

  it("requeue sends a wake-up with the wake queue's URL, as resume does, and of a paused queue says it waits for resume", async () => {
    const { queue, name, cli } = fresh();
    await failTasks(queue, ["f1", "f2"]);
    const sqs = new LocalSqs(async () => undefined);
    await sqs.listen();
    try {
      const requeued = await runCli(["requeue", "f1"], {
        REDIS_URL: redisUrl(),
        LEASEQ_QUEUE: name,
        LEASEQ_WAKE_QUEUE_URL: sqs.queueUrl,
        LEASEQ_SQS_ENDPOINT: sqs.endpoint,
      });
      expect(requeued).toMatchObject({ code: 0, stdout: `requeued f1\nsent a wake-up to ${sqs.queueUrl}\n` });
      expect(sqs.queue.all().map((message) => message.body)).toEqual(['{"leaseq":"wake"}']);
    } finally {
      await sqs.close();
    }
    await queue.admin.pause({ now: Date.now() });
    expect(await cli(["requeue", "f2"])).toMatchObject({
      code: 0,
      stdout: `requeued f2\nqueue "${name}" is paused: the requeued tasks start once it is resumed (leaseq resume)\n`,
    });
  });

  it("resume with only delayed work sends a wake-up due when it falls due, not one now", async () => {
    const { queue, name } = fresh();
    await queue.admin.pause({ now: Date.now() });
    await queue.enqueue([{ id: "later", type: "email", delayMs: 30_000 }], { now: Date.now() });
    const sqs = new LocalSqs(async () => undefined);
    await sqs.listen();
    try {
      const resumed = await resumeWaking(name, sqs);
      expect(resumed.code).toBe(0);
      // Due when the task falls due: 30 s after its enqueue, less the seconds the CLI took to start.
      const due = Number(/sent a wake-up to .*, due in (\d+) s/.exec(resumed.stdout)?.[1]);
      expect(due, resumed.stdout).toBeGreaterThan(15);
      expect(due).toBeLessThanOrEqual(30);
      const [message] = sqs.queue.all();
      expect(message.body).toBe('{"leaseq":"wake"}');
      expect(message.availableAtMs - Date.now()).toBeGreaterThan(10_000);
    } finally {
      await sqs.close();
    }
  });

  it("cancel ends tasks FAILED 'cancelled'; a DONE or unknown one exits 1 naming why", async () => {
    const { cli, queue } = fresh();
    const now = Date.now();
    await queue.enqueue(
      [
        { id: "later", type: "email", delayMs: 60_000 },
        { id: "now", type: "email" },
      ],
      { now },
    );
    expect(await cli(["cancel", "later", "now"])).toMatchObject({ code: 0, stdout: "cancelled later, now (FAILED)\n" });
    expect(await queue.admin.inspect("later")).toMatchObject({ state: "failed", lastError: "cancelled" });
    const refused = await cli(["cancel", "now", "ghost"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("now (FAILED already), ghost (no such task)");
  });

  it("list failed shows each error; list, requeue and delete select by type, error and age, with dry runs", async () => {
    const { cli, queue } = fresh();
    const hourAgo = Date.now() - 3_600_000;
    await queue.configure();
    await failTasks(
      queue,
      [
        { id: "smtp-1", type: "email", error: "SMTP 451 try again later" },
        { id: "smtp-2", type: "email", error: "SMTP 451 try again later" },
        { id: "bounce", type: "email", error: "SMTP 550 no such user" },
        { id: "resize-1", type: "resize", error: "out of memory" },
      ],
      { now: hourAgo },
    );
    await failTasks(queue, [{ id: "fresh", type: "email", error: "SMTP 451 try again later" }]);

    const listed = await cli(["list", "failed"]);
    expect(listed.stdout).toContain("error: SMTP 550 no such user");
    expect(listed.stdout).toContain("error: out of memory");
    const filtered = await cli(["list", "failed", "--type", "email", "--error", "SMTP 451", "--older-than", "30m"]);
    expect(
      filtered.stdout
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split(" ")[0]),
    ).toEqual(["smtp-1", "smtp-2"]);

    const dry = await cli(["requeue", "--error", "SMTP 451", "--older-than", "30m", "--dry-run"]);
    expect(dry.stdout).toBe(`would requeue 2 failed tasks of queue "${queue.name}": smtp-1, smtp-2\n`);
    expect((await queue.admin.inspect("smtp-1"))?.state).toBe("failed");
    const requeued = await cli(["requeue", "--error", "SMTP 451", "--older-than", "30m"]);
    expect(requeued.code).toBe(0);
    expect(requeued.stdout).toMatch(
      new RegExp(
        `^requeued 2 failed tasks of queue "${queue.name}"\\nthe requeued tasks start at the reclaimer's next run`,
      ),
    );
    expect((await queue.admin.inspect("smtp-2"))?.state).toBe("ready");
    expect((await queue.admin.inspect("fresh"))?.state, "too recent for --older-than 30m").toBe("failed");

    const noYes = await cli(["delete", "--state", "failed", "--type", "resize"]);
    expect(noYes.stdout).toBe(
      `would delete 1 failed task of queue "${queue.name}": resize-1\nrun it again with --yes to delete them\n`,
    );
    expect(await queue.admin.inspect("resize-1")).toBeDefined();
    expect((await cli(["delete", "--state", "failed", "--type", "resize", "--yes"])).stdout).toBe(
      `deleted 1 failed task of queue "${queue.name}"\n`,
    );
    expect(await queue.admin.inspect("resize-1")).toBeUndefined();

    const usage = await cli(["requeue", "smtp-1", "--type", "email"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("one of them");
    const ready = await cli(["list", "ready", "--older-than", "1h"]);
    expect(ready.code, "refused before anything is sent").toBe(2);
    expect(ready.stderr).toContain("olderThanMs selects by finish, due or quarantine time");
  });

  it("purge asks for --yes with the count, then deletes the state in batches", async () => {
    const { cli, queue, name } = fresh();
    for (const start of [0, 1000]) {
      const ids = Array.from({ length: start === 0 ? 1000 : 500 }, (_, i) => `p${start + i}`);
      await queue.enqueue(
        ids.map((id) => ({ id, type: "email" })),
        { now: Date.now() },
      );
    }
    const asked = await cli(["purge", "ready"]);
    expect(asked.code).toBe(2);
    expect(asked.stderr).toContain(`purge ready would delete the 1500 ready tasks of queue "${name}"`);
    expect((await queue.stats({ now: Date.now() })).ready).toBe(1500);
    expect(await cli(["purge", "ready", "--yes"])).toMatchObject({
      code: 0,
      stdout: `purged 1500 ready tasks of queue "${name}"\n`,
    });
    expect((await queue.stats({ now: Date.now() })).ready).toBe(0);
  });

  it("queues lists the queues of this Redis with their counts", async () => {
    const one = fresh();
    const two = fresh();
    await one.queue.enqueue([{ id: "x", type: "email" }], { now: Date.now() });
    await two.queue.configure();
    await two.queue.admin.pause({ now: Date.now() });
    const run = await one.cli(["queues", "--json"]);
    expect(run.code).toBe(0);
    const rows = JSON.parse(run.stdout) as Array<{ queue: string; ready: number; paused: boolean }>;
    expect(rows.find((row) => row.queue === one.name)).toMatchObject({ ready: 1, paused: false });
    expect(rows.find((row) => row.queue === two.name)).toMatchObject({ ready: 0, paused: true });
    const text = await one.cli(["queues"]);
    expect(text.stdout).toContain(`queue "${two.name}" (paused)`);
  });
});
