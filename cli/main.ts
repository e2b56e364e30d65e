import { Command } from "commander";
import { redact } from "../shared/text.js";
import { checkCommand } from "./check.js";
import { controlCommands } from "./control.js";
import { dashboardCommand } from "./dashboard.js";
import { dlqCommands } from "./dlq.js";
import { enqueueCommand } from "./enqueue.js";
import { exitCodeOf } from "./errors.js";
import { readCommands } from "./read.js";
import { scheduleCommands } from "./schedules.js";
import { shrinkCommand } from "./shrink.js";
import { watchCommand } from "./watch.js";
import { writeCommands } from "./write.js";

/** The `leaseq` program: every command, global options and help. */
export function buildProgram(): Command {
  const program = new Command("leaseq")
    .description("Operate a leaseq queue: enqueue, inspect, requeue and watch tasks.")
    .option("--queue <name>", "queue name (default: $LEASEQ_QUEUE)")
    .option(
      "--partitions <n>",
      "the queue's partition count, 1-64 (default: $LEASEQ_PARTITIONS, else 1): stats and check cover every partition",
    )
    .option("--partition <k>", "act on partition k (0 to n-1) of a partitioned queue (docs/partitions.md)")
    .option("--verbose", "say which backend (Redis or Upstash, where) the command connected to")
    .showHelpAfterError("(run with --help for usage)")
    .addHelpText(
      "after",
      `
Connection (from the environment, exactly one of these; secrets never come from flags, so they stay
out of shell history; setting more than one is an error):
  REDIS_URL                  redis://host:port or rediss://... (TCP)
  UPSTASH_REDIS_REST_URL     with UPSTASH_REDIS_REST_TOKEN (Upstash REST)
  UPSTASH_SECRET_ARN         a Secrets Manager secret holding {"url", "token"} (AWS credentials needed)
  LEASEQ_QUEUE               the queue, unless --queue is given

Exit codes: 0 ok, 1 the operation failed, 2 usage error (nothing was sent).`,
    );
  // Every subcommand reports usage errors through the same path, so they all exit 2.
  program.exitOverride();
  enqueueCommand(program);
  readCommands(program);
  writeCommands(program);
  controlCommands(program);
  scheduleCommands(program);
  checkCommand(program);
  watchCommand(program);
  dlqCommands(program);
  dashboardCommand(program);
  shrinkCommand(program);
  // Listed for --help; main() hands `leaseq dev ...` to the local stack's own parser before commander.
  program
    .command("dev")
    .description(
      "run the local stack (Redis, Upstash endpoint, SQS and Lambda stand-ins) with your tasks: leaseq dev --tasks ./src/tasks.ts (leaseq dev --help)",
    )
    .allowUnknownOption()
    .allowExcessArguments();
  for (const command of program.commands) command.exitOverride().showHelpAfterError("(run with --help for usage)");
  return program;
}

/**
 * Runs the CLI on `argv` and resolves to its exit code: 0 ok, 1 operation failed, 2 usage error.
 * Errors go to stderr, with secrets from the environment redacted.
 */
export async function main(argv: string[] = process.argv): Promise<number> {
  if (argv[2] === "dev") {
    // The one tie between the CLI and the local stack: this verb runs it, with the CLI's dashboard.
    const [{ runDev }, { startDashboard }] = await Promise.all([
      import("../dev/dev.js"),
      import("./dashboard/server.js"),
    ]);
    // `npm start` is `leaseq dev` from this repository's sources: its messages name it so.
    const fromNpmStart = process.env.npm_lifecycle_event === "start";
    const startedBy = fromNpmStart ? "npm start" : "leaseq dev";
    return runDev(
      argv.slice(3),
      fromNpmStart ? "npm start --" : "leaseq dev",
      fromNpmStart ? "npm run cli --" : "npx leaseq",
      (options) => startDashboard({ ...options, startedBy }),
    );
  }
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (error) {
    const code = exitCodeOf(error);
    // Commander has printed its own errors (and help) already.
    if (!(error as { code?: string }).code?.startsWith("commander.")) {
      process.stderr.write(`leaseq: ${redact((error as Error).message ?? String(error))}\n`);
    }
    return code;
  }
}
