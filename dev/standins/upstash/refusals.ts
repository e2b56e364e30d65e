// Commands the endpoint answers with an error without borrowing a Redis connection.

/**
 * Connections are shared between requests, so nothing may change a connection's state (database,
 * protocol, subscriptions, client-side transaction), and reply-suppressing modes would
 * desynchronise it. Upstash's REST API refuses these too; transactions go through /multi-exec.
 */
const STATEFUL = new Set([
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

/**
 * Blocking commands, with what to send instead. Upstash REST has no blocking commands, and here
 * each would hold one pooled connection until it returned: eight `BLPOP k 0` would take every
 * connection, and nothing would be answered until a push. Inside MULTI they would not block, but they
 * are refused there too so a command means the same in every route.
 */
const BLOCKING = new Map([
  ["BLPOP", "LPOP"],
  ["BRPOP", "RPOP"],
  ["BRPOPLPUSH", "LMOVE"],
  ["BLMOVE", "LMOVE"],
  ["BLMPOP", "LMPOP"],
  ["BZPOPMIN", "ZPOPMIN"],
  ["BZPOPMAX", "ZPOPMAX"],
  ["BZMPOP", "ZMPOP"],
  ["WAIT", ""],
  ["WAITAOF", ""],
]);

/** The error text for a command this endpoint refuses, or undefined when it may run. */
export function refusal(command: readonly string[]): string | undefined {
  const name = command[0].toUpperCase();
  if (STATEFUL.has(name)) {
    return `ERR ${name} is not supported by the leaseq local Upstash endpoint (connections are pooled; use /multi-exec for transactions)`;
  }
  const instead = BLOCKING.get(name);
  if (instead !== undefined) {
    return `ERR ${name} is a blocking command, which the Upstash REST API does not run and the leaseq local Upstash endpoint refuses${instead ? ` (use ${instead} and poll)` : ""}`;
  }
  if ((name === "XREAD" || name === "XREADGROUP") && blocks(command, name === "XREAD" ? 1 : 4)) {
    return `ERR ${name} with BLOCK is a blocking command, which the Upstash REST API does not run and the leaseq local Upstash endpoint refuses (send ${name} without BLOCK and poll)`;
  }
  return undefined;
}

/**
 * Whether an XREAD/XREADGROUP has a BLOCK option. Options come before STREAMS; after it are key
 * names and IDs, which may be spelled "BLOCK". XREADGROUP's options start after GROUP g c.
 */
function blocks(command: readonly string[], firstOption: number): boolean {
  for (let i = firstOption; i < command.length; i++) {
    const option = command[i].toUpperCase();
    if (option === "STREAMS") return false;
    if (option === "BLOCK") return true;
    if (option === "COUNT") i++; // skip its value, which could be any text
  }
  return false;
}
