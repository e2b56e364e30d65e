// `leaseq dev` as a development loop: any declaration the construct accepts runs (its worker budget
// from the declaration), one it refuses is refused at start in the construct's words, and a failed
// invocation is told, not swallowed.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SQSClient } from "@aws-sdk/client-sqs";
import { Duration } from "aws-cdk-lib";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it, vi } from "vitest";
import { workerBudget } from "../../dev/dev-loop.js";
import { type Stack, startStack } from "../../dev/stack.js";
import { createProducer } from "../../functions/producer.js";
import { defineTasks } from "../../functions/tasks.js";
import { resolveSettings } from "../../infra/settings.js";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { freePort } from "../helpers/redis-server.js";
import { redisUrl, uniqueQueueName } from "../helpers/stores.js";
import reportTasks from "./fixtures/report-tasks.js";

vi.setConfig({ testTimeout: 120_000 });
const root = fileURLToPath(new URL("../..", import.meta.url));
const children: ChildProcess[] = [];
let stack: Stack | undefined;
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await stack?.stopWork();
  await stack?.close();
  stack = undefined;
});

/** The construct's refusal of `tasks` with `workerTimeoutMs`, as synth prints it. */
function constructRefusal(workerTimeoutMs: number): string {
  try {
    resolveSettings({
      tasks: reportTasks,
      workerEntry: fileURLToPath(new URL("./fixtures/report-tasks.ts", import.meta.url)),
      workerTimeout: Duration.millis(workerTimeoutMs),
    });
  } catch (error) {
    return (error as Error).message;
  }
  return "";
}

/** Starts `leaseq dev` and resolves with it once it printed its endpoints. */
function startDev(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; out: () => string; err: () => string }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "cli/bin.ts", "dev", "--sqs-port=0", "--dashboard-port=0", ...args],
    { cwd: root, env: { ...process.env, REDIS_URL: redisUrl(), ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.once("close", (code) => reject(new Error(`leaseq dev exited ${code}: ${stderr}`)));
    const timer = setInterval(() => {
      if (/Worker timeout/.test(stdout)) {
        clearInterval(timer);
        resolve({ child, out: () => stdout, err: () => stderr });
      }
    }, 50);
  });
}

describe("leaseq dev", () => {
  it("gives a 10-minute lease a worker budget that fits, as the construct's workerTimeout must be", () => {
    expect(workerBudget(reportTasks, undefined)).toEqual({ timeoutMs: 605_000 });
    expect(workerBudget(defineTasks({ types: { t: { handler: () => {} } } }), undefined)).toEqual({
      timeoutMs: 300_000,
    });
  });

  it("refuses, with the construct's own message, a worker timeout the leases cannot fit", () => {
    const refusal = workerBudget(reportTasks, 300_000);
    expect("problems" in refusal && refusal.problems).toContain(constructRefusal(300_000));
    expect(constructRefusal(300_000)).toContain(
      'task type "nightly-report": leaseMs 600000 cannot fit the worker timeout of 300 s minus the 5000 ms margin',
    );
  });

  it("runs a task type with a 10-minute lease sent through its SQS endpoint", async () => {
    const queue = uniqueQueueName("devloop");
    const dev = await startDev(["--tasks", "test/dev/fixtures/report-tasks.ts", "--queue", queue]);
    expect(dev.out()).toContain("Worker timeout 605 s (from the declaration's leases)");
    const [, endpoint, queueUrl] = /SQS endpoint (\S+): task queue (\S+),/.exec(dev.out()) ?? [];
    const client = new SQSClient({
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    await createProducer({ queueUrl, client, tasks: reportTasks }).send([{ id: "r1", type: "nightly-report" }]);
    client.destroy();
    const store = TcpStore.fromUrl(redisUrl());
    try {
      const deadline = Date.now() + 30_000;
      while ((await new Queue(store, { name: queue }).admin.inspect("r1"))?.state !== "done") {
        if (Date.now() > deadline) throw new Error(`r1 not done: ${dev.err()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await store.close();
    }
    expect(dev.err()).not.toContain("invocation failed");
  });

  it("its dashboard refuses a request without the token, or with a wrong one, naming `leaseq dev`", async () => {
    const queue = uniqueQueueName("devauth");
    const dev = await startDev(["--tasks", "test/dev/fixtures/report-tasks.ts", "--queue", queue]);
    const url = /^Dashboard (\S+)$/m.exec(dev.out())?.[1] ?? "";
    const origin = new URL(url).origin;
    const without = await fetch(`${origin}/`);
    expect(without.status).toBe(401);
    expect(await without.text()).toBe("401 Unauthorized: open the URL with ?token= that `leaseq dev` printed\n");
    const wrong = await fetch(`${origin}/?token=wrong`);
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toBe(
      "401 Unauthorized: wrong token; open the URL with ?token= that `leaseq dev` printed\n",
    );
    expect((await fetch(url, { redirect: "manual" })).status).toBe(303);
  });

  it("exits 2 at start with the construct's message when --worker-timeout-ms cannot hold a lease", async () => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "cli/bin.ts",
        "dev",
        "--tasks",
        "test/dev/fixtures/report-tasks.ts",
        "--worker-timeout-ms=300000",
      ],
      { cwd: root, env: { ...process.env, REDIS_URL: redisUrl() }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    child.stderr?.on("data", (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise((resolve) => child.once("close", resolve));
    expect(code).toBe(2);
    expect(stderr).toContain("the LeaseQueue construct would refuse this declaration with --worker-timeout-ms 300000:");
    expect(stderr).toContain(constructRefusal(300_000));
  });

  it("SIGKILLed right after 100 sends and restarted on the same port and queue, runs all 100", async () => {
    const queue = uniqueQueueName("devkill");
    const port = await freePort();
    const args = ["--tasks", "test/dev/fixtures/slow-intake-tasks.ts", "--queue", queue, "--concurrency=1"];
    // The first run's intake takes 500 ms a message, so messages wait in SQS when it is killed.
    const first = await startDev([...args, `--sqs-port=${port}`], { SLOW_SCHEMA_MS: "500" });
    const [, endpoint, queueUrl] = /SQS endpoint (\S+): task queue (\S+),/.exec(first.out()) ?? [];
    const client = new SQSClient({
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    // Without the declaration: the producer would check each payload with the slow schema too.
    const producer = createProducer({ queueUrl, client });
    const ids = Array.from({ length: 100 }, (_, n) => `hook-${n}`);
    for (const [n, id] of ids.entries()) await producer.send([{ id, type: "webhook", payload: { n } }]);
    const store = TcpStore.fromUrl(redisUrl());
    const waiting = await new Redis(redisUrl()).hlen(`leaseq:{${queue}}:sqs:leaseq-local:messages`);
    first.child.kill("SIGKILL");
    const killedAt = Date.now();
    await new Promise((resolve) => first.child.once("close", resolve));
    // Messages were still in SQS when it died: what the restart must take up.
    expect(waiting).toBeGreaterThan(50);
    const second = await startDev([...args, `--sqs-port=${port}`]);
    const restartedMs = Date.now() - killedAt;
    const tasks = new Queue(store, { name: queue });
    try {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const states = await Promise.all(ids.map(async (id) => (await tasks.admin.inspect(id))?.state));
        if (states.every((state) => state === "done")) break;
        if (Date.now() > deadline) {
          throw new Error(`not all done: ${states.filter((s) => s !== "done").length} left; ${second.err()}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      console.log(
        `[dev-kill] ${waiting} of 100 messages in SQS at the kill; restarted ${restartedMs} ms after it, all 100 done ${Date.now() - killedAt} ms after it`,
      );
    } finally {
      client.destroy();
      await store.close();
    }
  });

  it("--watch reloads the task module when it changes, and keeps the old one when the new one cannot run", async () => {
    const directory = mkdtempSync(join(tmpdir(), "leaseq-watch-"));
    const module = join(directory, "tasks.ts");
    const declare = (types: string) =>
      writeFileSync(
        module,
        `import { defineTasks } from ${JSON.stringify(join(root, "functions/tasks.ts"))};\nexport default defineTasks({ types: { ${types} } });\n`,
      );
    declare("alpha: { handler: () => {} }");
    try {
      const dev = await startDev(["--tasks", module, "--watch", "--queue", uniqueQueueName("watch")]);
      const stderrSays = async (text: string) => {
        const deadline = Date.now() + 20_000;
        while (!dev.err().includes(text)) {
          if (Date.now() > deadline) throw new Error(`no "${text}" in: ${dev.err()}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      };
      declare("alpha: { handler: () => {} }, beta: { handler: () => {} }");
      await stderrSays(`reloaded ${module}: alpha, beta`);
      declare("alpha: { leaseMs: 3_600_000, handler: () => {} }");
      await stderrSays("kept the previous task types:");
      expect(dev.err()).toContain('task type "alpha": leaseMs 3600000');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("tells every failed invocation: the view's counts and the callback, never swallowed", async () => {
    const failures: string[] = [];
    stack = await startStack({
      queue: uniqueQueueName("devloop"),
      tasks: reportTasks,
      reclaimIntervalMs: 60_000,
      // Too short for the 10-minute lease: every worker cold start refuses to run.
      workerTimeoutMs: 60_000,
      visibilityTimeoutMs: 30_000,
      maxReceiveCount: 5,
      concurrency: 1,
      logLevel: "SILENT",
      onInvocationError: (role, error) => failures.push(`${role}: ${(error as Error).message}`),
    });
    stack.run();
    const deadline = Date.now() + 10_000;
    while (failures.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(failures[0]).toMatch(
      /^worker: invalid configuration:\n- task type "nightly-report": leaseMs 600000 cannot fit/,
    );
    expect(stack.counts.invocationErrors).toBeGreaterThan(0);
    expect(stack.counts.lastInvocationError).toContain("cannot fit the worker timeout of 60 s");
  });
});
