import type { Outcome } from "./json.js";
import type { ConnectionPool } from "./pool.js";
import { type Reply, RespError } from "./resp.js";

/**
 * Commands refused before they reach Redis. Connections are shared between requests, so nothing
 * may change a connection's state (database, protocol, subscriptions, client-side transaction),
 * and reply-suppressing modes would desynchronise it. Upstash's REST API refuses these too;
 * transactions go through /multi-exec instead.
 */
const REFUSED = new Set([
  "AUTH",
  "CLIENT",
  "DISCARD",
  "EXEC",
  "HELLO",
  "MONITOR",
  "MULTI",
  "PSUBSCRIBE",
  "PSYNC",
  "PUNSUBSCRIBE",
  "QUIT",
  "RESET",
  "SELECT",
  "SSUBSCRIBE",
  "SUBSCRIBE",
  "SUNSUBSCRIBE",
  "SYNC",
  "UNSUBSCRIBE",
  "UNWATCH",
  "WATCH",
]);

/** The error text for a command this endpoint refuses, or undefined when it may run. */
export function refusal(command: readonly string[]): string | undefined {
  const name = command[0].toUpperCase();
  if (!REFUSED.has(name)) return undefined;
  return `ERR ${name} is not supported by the leaseq local Upstash endpoint (connections are pooled; use /multi-exec for transactions)`;
}

function outcome(reply: Reply): Outcome {
  return reply instanceof RespError ? { error: reply.message } : { result: reply };
}

/** Runs one command. Rejects only when Redis cannot be reached. */
export async function runCommand(pool: ConnectionPool, command: string[]): Promise<Outcome> {
  const refused = refusal(command);
  if (refused) return { error: refused };
  return outcome(await pool.use((connection) => connection.send(command)));
}

/** Runs commands in order on one connection, not atomically; each has its own outcome. */
export async function runPipeline(pool: ConnectionPool, commands: string[][]): Promise<Outcome[]> {
  return pool.use(async (connection) => {
    const replies = commands.map((command) => {
      const refused = refusal(command);
      return refused ? Promise.resolve(new RespError(refused)) : connection.send(command);
    });
    return (await Promise.all(replies)).map(outcome);
  });
}

/**
 * Runs commands as one MULTI…EXEC on a connection no other request uses meanwhile. Resolves to
 * one outcome per command (runtime errors included), or to `{error}` when Redis discarded the
 * whole transaction (a command it could not queue) or a command is refused.
 */
export async function runTransaction(
  pool: ConnectionPool,
  commands: string[][],
): Promise<Outcome[] | { error: string }> {
  for (const command of commands) {
    const refused = refusal(command);
    if (refused) return { error: refused };
  }
  return pool.use(async (connection) => {
    const queued = [["MULTI"], ...commands].map((command) => connection.send(command));
    const exec = connection.send(["EXEC"]);
    const queueReplies = await Promise.all(queued);
    const reply = await exec;
    if (reply instanceof RespError) {
      // EXECABORT only says "previous errors"; name the command Redis refused to queue.
      const index = queueReplies.findIndex((queueReply) => queueReply instanceof RespError);
      const cause = queueReplies[index] as RespError | undefined;
      return { error: cause ? `${reply.message} (command ${index - 1}: ${cause.message})` : reply.message };
    }
    if (!Array.isArray(reply)) return { error: "EXECABORT the transaction was not executed" };
    return reply.map(outcome);
  });
}
