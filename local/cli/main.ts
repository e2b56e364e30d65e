import { Command } from "commander";
import { enqueueCommand } from "./enqueue.js";
import { exitCodeOf, redact } from "./errors.js";
import { readCommands } from "./read.js";
import { watchCommand } from "./watch.js";
import { writeCommands } from "./write.js";

/** The `leaseq` program: every command, global options and help. */
export function buildProgram(): Command {
  const program = new Command("leaseq")
    .description("Operate a leaseq queue: enqueue, inspect, requeue and watch tasks.")
    .option("--queue <name>", "queue name (default: $LEASEQ_QUEUE)")
    .showHelpAfterError("(run with --help for usage)")
    .addHelpText(
      "after",
      `
Connection (from the environment; secrets never come from flags, so they stay out of shell history):
  REDIS_URL                  redis://host:port or rediss://... (TCP), or else
  UPSTASH_REDIS_REST_URL     with UPSTASH_REDIS_REST_TOKEN (Upstash REST)
  LEASEQ_QUEUE               the queue, unless --queue is given

Exit codes: 0 ok, 1 the operation failed, 2 usage error (nothing was sent).`,
    );
  // Every subcommand reports usage errors through the same path, so they all exit 2.
  program.exitOverride();
  enqueueCommand(program);
  readCommands(program);
  writeCommands(program);
  watchCommand(program);
  for (const command of program.commands) command.exitOverride().showHelpAfterError("(run with --help for usage)");
  return program;
}

/**
 * Runs the CLI on `argv` and resolves to its exit code: 0 ok, 1 operation failed, 2 usage error.
 * Errors go to stderr, with secrets from the environment redacted.
 */
export async function main(argv: string[] = process.argv): Promise<number> {
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
