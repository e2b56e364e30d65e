// `npm start` and `leaseq dev`: the whole system on this machine, no AWS account needed, running the
// demo's task types or your own (`--tasks ./src/tasks.ts`). See docs/dev.md.
import { Command, Option } from "commander";
import type { TaskDeclaration } from "../functions/tasks.js";
import { isTerminal } from "../shared/live.js";
import { integer } from "../shared/options.js";
import { redact } from "../shared/text.js";
import { invocationFailures, watchTasks, workerBudget } from "./dev-loop.js";
import { NoRedisError } from "./redis.js";
import { type DemoRun, runDemo } from "./run-demo.js";
import { type Stack, startStack } from "./stack.js";

const LOG_LEVELS = ["SILENT", "CRITICAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"] as const;

/** The SQS endpoint's default port: ElasticMQ's, the port local SQS tools expect. */
export const DEFAULT_SQS_PORT = 9324;
/** The dashboard's default port in `leaseq dev`. */
export const DEFAULT_DASHBOARD_PORT = 9325;

function defaultQueueName(prefix: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `${prefix}-${stamp}-${Math.random().toString(36).slice(2, 6)}`;
}

function buildProgram(name: string): Command {
  return new Command(name)
    .description(
      "Run leaseq locally: Redis, the Upstash endpoint, SQS and Lambda stand-ins, the worker, the reclaimer, and a demo (or your tasks).",
    )
    .option(
      "--tasks <module>",
      "run your task types: a module whose default (or `tasks`) export is a defineTasks(...) result; no demo then",
    )
    .option("--no-demo", "start the stack without the demo workload")
    .option("--exit-when-drained", "exit once every demo task is DONE or FAILED, printing a summary")
    .option("--json", "print the summary as one JSON object on the last line of stdout (the view goes to stderr)")
    .option(
      "--queue <name>",
      'queue name (default: "dev" with --tasks, so a restart resumes its work; a fresh demo-<time> for the demo)',
    )
    .option(
      "--worker-timeout-ms <ms>",
      "the worker's Lambda timeout (default: 5 minutes, or what the longest lease needs, as the construct's workerTimeout must be)",
      integer(1_000, 900_000),
    )
    .option("--sqs-port <port>", "the SQS endpoint's port (0: any free one)", integer(0, 65_535), DEFAULT_SQS_PORT)
    .option(
      "--dashboard-port <port>",
      "the dashboard's port (0: any free one)",
      integer(0, 65_535),
      DEFAULT_DASHBOARD_PORT,
    )
    .option("--watch", "with --tasks: reload the task module when a file beside it changes")
    .option("--demo-tasks <n>", "demo tasks", integer(20, 100_000), 300)
    .option("--crash-tasks <n>", "tasks the crashed worker holds", integer(1, 100), 8)
    .option(
      "--crash-lease-ms <ms>",
      "lease of the crashed worker's claim: how soon the reclaimer may recover it",
      integer(1_000, 600_000),
      5_000,
    )
    .option(
      "--slow-ms <ms>",
      "how long each slow task works (its lease is 2 s, so the worker extends it)",
      integer(0, 60_000),
      3_000,
    )
    .option(
      "--reclaim-interval-ms <ms>",
      "how often the reclaimer runs (rate(1 minute) on AWS, and here by default: wake-ups, not the reclaimer, start work on time)",
      integer(100, 3_600_000),
      60_000,
    )
    .option("--view-interval-ms <ms>", "how often the live view refreshes", integer(100, 60_000), 1_000)
    .option("--visibility-timeout-ms <ms>", "SQS visibility timeout", integer(100, 43_200_000), 30_000)
    .option(
      "--concurrency <n>",
      "concurrent invocations of the intake (task queue) and of the worker (wake queue), each",
      integer(1, 100),
      4,
    )
    .option("--fifo", "make the task queue FIFO (leaseq-local.fifo), as the construct's fifo prop")
    .option(
      "--partitions <n>",
      "partitions of the queue (docs/partitions.md): each on a redis-server of its own behind an Upstash-compatible endpoint, the others started for the run",
      integer(1, 8),
      1,
    )
    .option(
      "--timeout-ms <ms>",
      "with --exit-when-drained: give up (exit 1) after this long",
      integer(1_000, 86_400_000),
      300_000,
    )
    .addOption(
      new Option("--log-level <level>", "the functions' log level (their JSON logs go to stdout)")
        .choices(LOG_LEVELS)
        .default("SILENT"),
    )
    .addHelpText(
      "after",
      `
Redis: REDIS_URL if set; else 127.0.0.1:6379 (LEASEQ_DEFAULT_REDIS_PORT) if a server answers; else a
redis-server from PATH on a free port, stopped on exit.`,
    );
}

/** Loads the task types to run: the user's module, or the demo's. */
async function taskTypes(module: string | undefined, crashLeaseMs: number): Promise<TaskDeclaration> {
  if (module) return (await import("./tasks-module.js")).loadTasksModule(module);
  return (await import("./demo/tasks.js")).demoTasks({ crashLeaseMs });
}

/** Starts a dashboard over the stack's queue: the CLI's own (`leaseq dashboard`), handed in by its `dev` verb. */
export type DashboardStarter = (
  options: ({ queue: Stack["queue"] } | { partitions: Stack["logical"]["partitions"] }) & {
    where: string;
    port: number;
  },
) => Promise<{ url: string; close(): Promise<void> }>;

/**
 * Runs the local stack on `args` (the words after `npm start --` or `leaseq dev`); resolves to the
 * exit code. `cliHint` is how a user runs the CLI from here, shown in the start-up lines;
 * `startDashboard` serves the dashboard (the local stack imports nothing of the CLI).
 */
export async function runDev(
  args: string[],
  name: string,
  cliHint: string,
  startDashboard: DashboardStarter,
): Promise<number> {
  const program = buildProgram(name);
  program.exitOverride();
  try {
    program.parse(args, { from: "user" });
  } catch (error) {
    return (error as { exitCode?: number }).exitCode === 0 ? 0 : 2;
  }
  const options = program.opts();
  const startedAt = Date.now();
  const queue = (options.queue as string | undefined) ?? (options.tasks ? "dev" : defaultQueueName("demo"));
  // Listen before anything starts: a Ctrl-C during start-up must still stop a redis-server we
  // started (it sits in its own process group, so the terminal's Ctrl-C does not reach it).
  let stop: () => void = () => {};
  let interrupted = false;
  let started: Stack | undefined;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (interrupted) {
        // A second Ctrl-C: stop waiting for running tasks; still stop a redis-server we started.
        process.stderr.write("\nforced stop\n");
        void (started?.redis.stop() ?? Promise.resolve()).finally(() => process.exit(130));
        return;
      }
      interrupted = true;
      process.stderr.write(
        "\nstopping: no new claims; the running tasks are told to stop and settled… (Ctrl-C again to force)\n",
      );
      stop();
    });
  }
  let tasks: TaskDeclaration;
  try {
    tasks = await taskTypes(options.tasks, options.crashLeaseMs);
  } catch (error) {
    process.stderr.write(`${name}: ${redact((error as Error).message)}\n`);
    return 2;
  }
  // The worker's budget, as the construct would deploy it: what the declaration needs, or refused
  // with the construct's own message.
  const budget = workerBudget(tasks, options.workerTimeoutMs);
  if ("problems" in budget) {
    process.stderr.write(`${name}: ${budget.problems}\n`);
    return 2;
  }
  // The demo's workload is made of the demo's types: with your own tasks, you send the work.
  const demo = options.tasks === undefined && options.demo;
  const failures = invocationFailures(process.stderr);
  let stack: Stack;
  try {
    stack = await startStack({
      queue,
      tasks,
      reclaimIntervalMs: options.reclaimIntervalMs,
      workerTimeoutMs: budget.timeoutMs,
      sqsPort: options.sqsPort,
      persistSqs: true,
      onInvocationError: failures,
      visibilityTimeoutMs: options.visibilityTimeoutMs,
      maxReceiveCount: 5,
      concurrency: options.concurrency,
      fifo: options.fifo ?? false,
      logLevel: options.logLevel,
      partitions: options.partitions,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = /cannot listen on 127\.0\.0\.1:\d+/.test(message)
      ? "; or pass --sqs-port <port> (0: any free one)"
      : "";
    process.stderr.write(`${error instanceof NoRedisError ? message : `${name}: ${redact(message)}${hint}`}\n`);
    return 1;
  }
  started = stack;
  let dashboard: Awaited<ReturnType<DashboardStarter>>;
  try {
    const partitioned = stack.logical.partitions.length > 1;
    dashboard = await startDashboard({
      ...(partitioned ? { partitions: stack.logical.partitions } : { queue: stack.queue }),
      where: `Redis at ${redact(stack.redis.url)}${partitioned ? ` and ${stack.logical.partitions.length - 1} more redis-servers` : ""}`,
      port: options.dashboardPort,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = /EADDRINUSE|in use/.test(message) ? "; pass --dashboard-port <port> (0: any free one)" : "";
    process.stderr.write(`${name}: the dashboard did not start: ${redact(message)}${hint}\n`);
    await stack.close().catch(() => {});
    return 1;
  }
  // Watching before the start-up lines are printed: a change made once they are seen is caught.
  const watcher = options.watch && options.tasks ? watchTasks(options.tasks, stack, budget.timeoutMs, name) : undefined;
  const out = options.json ? process.stderr : process.stdout;
  const redisNote = {
    env: "from REDIS_URL",
    default: "already running",
    started: "started for this run, stopped on exit",
  };
  out.write(
    [
      `Redis ${redact(stack.redis.url)} (${redisNote[stack.redis.source]}); Upstash-compatible endpoint ${stack.endpoint.url}`,
      `SQS endpoint ${stack.sqs.endpoint}: task queue ${stack.sqs.queueUrl}, dead letters ${stack.sqs.deadLetterQueueUrl}, wake-ups ${stack.wake.queueUrl}`,
      `Dashboard ${dashboard.url}`,
      `Worker timeout ${budget.timeoutMs / 1000} s${options.workerTimeoutMs === undefined ? " (from the declaration's leases)" : ""}; queue ${queue}`,
      stack.logical.partitions.length > 1
        ? `Partitions ${stack.logical.partitions.length}, partition k on the k-th of ${stack.connectionEnv.UPSTASH_REDIS_REST_URL}`
        : undefined,
      `Try: ${cliConnection(stack)} LEASEQ_QUEUE=${queue} ${cliHint} ${stack.logical.partitions.length > 1 ? `--partitions ${stack.logical.partitions.length} ` : ""}stats`,
      "",
    ]
      .filter((line) => line !== undefined)
      .join("\n"),
  );

  const run: DemoRun = runDemo(stack, {
    queue,
    startedAt,
    demo,
    demoTasks: options.demoTasks,
    crashTasks: options.crashTasks,
    crashLeaseMs: options.crashLeaseMs,
    slowMs: options.slowMs,
    viewIntervalMs: options.viewIntervalMs,
    exitWhenDrained: Boolean(options.exitWhenDrained),
    timeoutMs: options.timeoutMs,
    out,
    // Logs interleaved with cursor movement would garble the view: with logs on, print plain lines.
    interactive: isTerminal(out) && options.logLevel === "SILENT",
  });
  stop = run.stop;
  if (interrupted) run.stop();
  let summary: Awaited<DemoRun["finished"]>;
  try {
    summary = await run.finished;
  } catch (error) {
    watcher?.close();
    await dashboard.close();
    // Stopping failed half-way (e.g. Redis went away): still stop a redis-server we started.
    process.stderr.write(`${name}: ${redact((error as Error).message ?? String(error))}\n`);
    await stack.close().catch(() => {});
    return 1;
  }
  watcher?.close();
  await dashboard.close();
  if (options.json) process.stdout.write(`${JSON.stringify(summary.json)}\n`);
  else if (summary.text) process.stdout.write(`${summary.text}\n`);
  return summary.exitCode;
}

/** How the CLI reaches the stack's queue: its Redis, or with partitions every partition's server (REDIS_URL lists them). */
function cliConnection(stack: Stack): string {
  if (stack.logical.partitions.length === 1) return `REDIS_URL=${redact(stack.redis.url)}`;
  return `REDIS_URL=${stack.servers.map((url) => redact(url)).join(",")}`;
}
