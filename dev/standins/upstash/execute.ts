import type { Outcome } from "./json.js";
import type { ConnectionPool } from "./pool.js";
import { refusal } from "./refusals.js";
import { type Reply, RespError } from "./resp.js";
import type { Prepared, ScriptRewriter } from "./scripts.js";

/** What the run functions need: the pool, the script rewriter, and the request's abort signal. */
export interface Runner {
  pool: ConnectionPool;
  scripts: ScriptRewriter;
  /** Aborts when the HTTP client goes away; its connection is then closed (see ConnectionPool.use). */
  signal?: AbortSignal;
}

/** A command refused here, or as it goes to Redis. */
type Step = { refused: string } | Prepared;

function prepare(runner: Runner, command: string[]): Step {
  const refused = refusal(command);
  return refused ? { refused } : runner.scripts.prepare(command);
}

function outcome(step: Prepared, reply: Reply): Outcome {
  if (reply instanceof RespError) return { error: reply.message };
  return { result: step.reply ? step.reply(reply) : reply };
}

/** Runs one command. Rejects only when Redis cannot be reached or the client went away. */
export async function runCommand(runner: Runner, command: string[]): Promise<Outcome> {
  const step = prepare(runner, command);
  if ("refused" in step) return { error: step.refused };
  const reply = await runner.pool.use((connection) => connection.send(step.args), runner.signal);
  return outcome(step, reply);
}

/**
 * Runs commands in order on one connection, not atomically; each has its own outcome. A refused
 * command answers its error in place; a pipeline of nothing but refused commands borrows no
 * connection at all.
 */
export async function runPipeline(runner: Runner, commands: string[][]): Promise<Outcome[]> {
  const steps = commands.map((command) => prepare(runner, command));
  const answer = (step: Step, reply: Reply | undefined): Outcome =>
    "refused" in step ? { error: step.refused } : outcome(step, reply as Reply);
  if (steps.every((step) => "refused" in step)) return steps.map((step) => answer(step, undefined));
  return runner.pool.use(async (connection) => {
    // Promise.all, so one broken connection is one rejection rather than several unhandled ones.
    const replies = await Promise.all(
      steps.map((step) => ("refused" in step ? undefined : connection.send(step.args))),
    );
    return steps.map((step, index) => answer(step, replies[index]));
  }, runner.signal);
}

/**
 * Runs commands as one MULTI…EXEC on a connection no other request uses meanwhile. Resolves to
 * one outcome per command (runtime errors included), or to `{error}` when Redis discarded the
 * whole transaction (a command it could not queue) or a command is refused (then no connection
 * is borrowed).
 */
export async function runTransaction(runner: Runner, commands: string[][]): Promise<Outcome[] | { error: string }> {
  const steps: Prepared[] = [];
  for (const command of commands) {
    const step = prepare(runner, command);
    if ("refused" in step) return { error: step.refused };
    steps.push(step);
  }
  return runner.pool.use(async (connection) => {
    const sent = [["MULTI"], ...steps.map((step) => step.args), ["EXEC"]].map((args) => connection.send(args));
    // Awaited together: a connection closed mid-transaction must not leave EXEC's rejection unhandled.
    const replies = await Promise.all(sent);
    const queueReplies = replies.slice(0, -1);
    const reply = replies[replies.length - 1];
    if (reply instanceof RespError) {
      // EXECABORT only says "previous errors"; name the command Redis refused to queue.
      const index = queueReplies.findIndex((queueReply) => queueReply instanceof RespError);
      const cause = queueReplies[index] as RespError | undefined;
      return { error: cause ? `${reply.message} (command ${index - 1}: ${cause.message})` : reply.message };
    }
    if (!Array.isArray(reply)) return { error: "EXECABORT the transaction was not executed" };
    return reply.map((item, index) => outcome(steps[index], item));
  }, runner.signal);
}
