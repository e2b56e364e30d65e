import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { freePort, pingRedis } from "../helpers/redis-server.js";
import { redisUrl, uniqueQueueName } from "../helpers/stores.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Spawns `command`, calling `onStdout` with everything printed so far on each chunk. */
function run(
  command: string,
  args: string[],
  env: Record<string, string | undefined>,
  onStdout?: (text: string, kill: (signal: NodeJS.Signals) => void) => void,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      onStdout?.(stdout, (signal) => child.kill(signal));
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const store = TcpStore.fromUrl(redisUrl());
afterAll(() => store.close());

/** `npm start -- --exit-when-drained --json` with `extra` flags, and its summary (the last line of stdout). */
async function demoToTheEnd(extra: string[], queuePrefix: string) {
  const result = await run(
    "npm",
    [
      "start",
      "--",
      ...extra,
      "--exit-when-drained",
      "--json",
      // Short timings so the crashed batch is reclaimed within seconds; still longer than the
      // slow type's 2 s lease, so the worker must extend it.
      "--reclaim-interval-ms=300",
      "--crash-lease-ms=1000",
      "--slow-ms=2500",
      "--timeout-ms=60000",
      // Free ports: test files run side by side.
      "--sqs-port=0",
      "--dashboard-port=0",
      // A name of this run, so the test's cleanup deletes the queue from the shared Redis.
      `--queue=${uniqueQueueName(queuePrefix)}`,
    ],
    { ...process.env, REDIS_URL: redisUrl() },
  );
  expect(result.code, result.stderr).toBe(0);
  const lines = result.stdout.trim().split("\n");
  return { result, summary: JSON.parse(lines[lines.length - 1]) };
}

describe("npm start", () => {
  it("runs the demo to the end: every task terminal, none lost, poison FAILED, the crash recovered", {
    timeout: 90_000,
  }, async () => {
    const startedAt = Date.now();
    const { result, summary } = await demoToTheEnd([], "start");
    expect(summary).toMatchObject({ drained: true, enqueued: 300, lost: 0 });
    expect(summary.done + summary.failed).toBe(300);
    expect(summary.poison).toMatchObject({ state: "failed", attempts: 3 });
    expect(summary.poison.lastError).toContain("poison: cannot be processed");
    // The crashed batch recovered: by the reclaimer's run at its lease's end, or (first on a loaded
    // machine) by a worker's claim taking the expired leases as its wake-up comes back
    // (docs/lambda.md): either path counts, so the reclaimer's own count is not asserted.
    expect(summary.crash).toMatchObject({ claimed: 8, recovered: 8 });
    expect(summary.retried).toBeGreaterThan(0);
    expect(summary.durationMs).toBeLessThan(Date.now() - startedAt);
    // The live view went to stderr as plain lines (not a terminal), never escape codes.
    expect(result.stderr).toMatch(/\[\d+\.\ds\] ready=\d+ scheduled=\d+ leased=\d+ done=\d+ failed=\d+ tasks\/s=/);
    expect(result.stderr).not.toContain("\u001b[");

    // What Redis holds agrees with the summary.
    const queue = new Queue(store, { name: summary.queue });
    expect(await queue.stats({ now: Date.now() })).toMatchObject({
      ready: 0,
      scheduled: 0,
      leased: 0,
      done: summary.done,
      failed: summary.failed,
    });
    const done = await queue.admin.list("done", { limit: 1000 });
    const crashed = done.filter((task) => task.id.includes("-crash-"));
    expect(crashed).toHaveLength(8);
    // Claimed by the worker that died, which never started them (no attempt charged, a stall each),
    // then run once after the reclaim. Under a loaded machine a later worker's 1 s lease may lapse
    // too before its first heartbeat confirms it (one more stall, still no attempt charged).
    for (const task of crashed) {
      expect(task.attempts).toBe(1);
      expect((await queue.admin.inspect(task.id))?.stalls).toBeGreaterThanOrEqual(1);
    }
    const slow = done.filter((task) => task.type === "slow");
    expect(slow).toHaveLength(2);
    // Done on the first attempt: the lease was extended, not lost.
    for (const task of slow) expect(task.attempts).toBe(1);
    const flaky = done.filter((task) => task.type === "flaky");
    expect(flaky.length).toBeGreaterThan(0);
    for (const task of flaky) expect(task.attempts).toBeGreaterThanOrEqual(2);
  });

  it("runs the demo over 3 partitions, each on a redis-server of its own: every task terminal, the crash recovered, every partition worked, the servers it started stopped", {
    timeout: 90_000,
  }, async () => {
    const { result, summary } = await demoToTheEnd(["--partitions=3", "--demo-tasks=120"], "start-p");
    expect(summary).toMatchObject({ drained: true, enqueued: 120, lost: 0 });
    expect(summary.crash).toMatchObject({ claimed: 8, recovered: 8 });
    expect(summary.partitions).toHaveLength(3);
    for (const partition of summary.partitions) expect(partition.done).toBeGreaterThan(0);
    expect(
      summary.partitions.reduce((sum: number, p: { done: number; failed: number }) => sum + p.done + p.failed, 0),
    ).toBe(120);
    // The start-up lines name every partition's server; the two it started are stopped.
    const servers = /Try: REDIS_URL=(\S+)/.exec(result.stderr)?.[1].split(",") ?? [];
    expect(servers).toHaveLength(3);
    for (const url of servers.slice(1)) {
      const { hostname, port } = new URL(url);
      expect(await pingRedis(hostname, Number(port))).toBe(false);
    }
  });

  it("on Ctrl-C releases claimed tasks and stops the redis-server it started", { timeout: 90_000 }, async () => {
    const env: Record<string, string | undefined> = {
      ...process.env,
      LEASEQ_DEFAULT_REDIS_PORT: String(await freePort()),
    };
    delete env.REDIS_URL;
    let interrupted = false;
    const result = await run(
      process.execPath,
      // A long crash lease: those tasks are still leased at Ctrl-C, and slow tasks are running.
      [
        "--import",
        "tsx",
        "cli/bin.ts",
        "dev",
        "--crash-lease-ms=60000",
        "--slow-ms=4000",
        "--view-interval-ms=200",
        "--sqs-port=0",
        "--dashboard-port=0",
      ],
      env,
      (stdout, kill) => {
        // Interrupt while the worker runs at least 2 tasks besides the crashed worker's 8.
        const last = [...stdout.matchAll(/ leased=(\d+) done=(\d+) /g)].at(-1);
        if (!interrupted && last && Number(last[1]) >= 10 && Number(last[2]) > 0) {
          interrupted = true;
          kill("SIGINT");
        }
      },
    );
    expect(interrupted).toBe(true);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("stopping: no new claims; the running tasks are told to stop");
    // Tasks were leased when Ctrl-C came (the crashed worker's and the running worker's), none are after.
    const leasedBefore = [...result.stdout.matchAll(/ leased=(\d+) /g)].map((match) => Number(match[1]));
    expect(leasedBefore.at(-1)).toBeGreaterThanOrEqual(10);
    // Nothing LEASED: the crashed worker's 8 are READY again (released by token), and the tasks the
    // worker ran were stopped and settled (retried later, or done), none left running.
    const left = /left in the queue: (\d+) ready, (\d+) scheduled, 0 leased/.exec(result.stdout);
    expect(left).not.toBeNull();
    expect(Number(left?.[1])).toBeGreaterThanOrEqual(8);
    const port = /Redis redis:\/\/127\.0\.0\.1:(\d+) \(started for this run/.exec(result.stdout)?.[1];
    expect(port).toBeDefined();
    expect(await pingRedis("127.0.0.1", Number(port))).toBe(false);
  });

  it("exits 1 within a second or two of a port in use, naming it and the flag to change, leaving nothing running", {
    timeout: 60_000,
  }, async () => {
    const { createServer } = await import("node:net");
    for (const flag of ["--sqs-port", "--dashboard-port"]) {
      const taken = createServer();
      const port = await new Promise<number>((resolve) =>
        taken.listen(0, "127.0.0.1", () => resolve((taken.address() as { port: number }).port)),
      );
      try {
        const other = flag === "--sqs-port" ? "--dashboard-port=0" : "--sqs-port=0";
        const startedAt = Date.now();
        const result = await run(
          process.execPath,
          ["--import", "tsx", "cli/bin.ts", "dev", `${flag}=${port}`, other, `--queue=${uniqueQueueName("clash")}`],
          { ...process.env, REDIS_URL: redisUrl() },
        );
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toContain(`127.0.0.1:${port}`);
        expect(result.stderr).toContain(`pass ${flag} <port> (0: any free one)`);
        // It exited on its own (no Ctrl-C): its start-up (tsx, about 2 s here) and the refusal.
        expect(Date.now() - startedAt).toBeLessThan(15_000);
      } finally {
        await new Promise((resolve) => taken.close(resolve));
      }
    }
  });
});
