// What a store says when it cannot reach its server: where it looked (host and port, and the setting
// they came from; never a password or token), why in words, and what to check. Shared by the TCP
// and the Upstash store, so the functions, the CLI and the library say it alike.
import { UnreachableError } from "../errors.js";

/** Where a store points: host and port, and the setting they came from (e.g. "REDIS_URL"). */
export interface Endpoint {
  host: string;
  port: string;
  source: string;
}

/** The host and port of `url` (its password and path left out), or of a URL that cannot be read, "?". */
export function endpointOf(url: string, defaultPort: string, source: string): Endpoint {
  try {
    const parsed = new URL(url);
    return { host: parsed.hostname || "?", port: parsed.port || defaultPort, source };
  } catch {
    return { host: "?", port: "?", source };
  }
}

// Node.js's network error codes, in words.
const CODES: Record<string, string> = {
  ECONNREFUSED: "connection refused (nothing listens on that port)",
  ENOTFOUND: "host not found (DNS)",
  EAI_AGAIN: "host name lookup failed (DNS, temporary)",
  ETIMEDOUT: "connection timed out",
  ECONNRESET: "connection reset by the server",
  EHOSTUNREACH: "host unreachable (no route to it)",
  ENETUNREACH: "network unreachable",
  EPIPE: "connection closed by the server",
  ECONNABORTED: "connection aborted",
};

/** Why a connection failed, in words, from the error (or its cause) Node.js or the client threw. */
export function connectionProblem(error: unknown): string {
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 4; at = at.cause, depth++) {
    const code = (at as NodeJS.ErrnoException).code;
    if (code && CODES[code]) return CODES[code];
    if (code && /CERT|TLS|SSL/.test(code)) return `TLS handshake failed (${code})`;
  }
  const message = error instanceof Error ? error.message : String(error);
  if (/max retries per request|Connection is closed|Stream isn't writeable/i.test(message)) return "no connection";
  return message;
}

/** A server that could not be reached: where, why, and what to check. */
export function unreachable(
  operation: string,
  server: "Redis" | "Upstash",
  endpoint: Endpoint,
  problem: string,
  cause: unknown,
): UnreachableError {
  return new UnreachableError(
    `${operation}: ${server} unreachable at ${endpoint.host}:${endpoint.port} (from ${endpoint.source}): ${problem}; ${advice(server, endpoint)}`,
    { cause },
  );
}

/** A server that took the request and did not answer within `timeoutMs`. */
export function noAnswer(
  operation: string,
  server: "Redis" | "Upstash",
  endpoint: Endpoint,
  timeoutMs: number,
  cause: unknown,
): UnreachableError {
  return new UnreachableError(
    `${operation}: no answer from ${server} at ${endpoint.host}:${endpoint.port} (from ${endpoint.source}) within ${timeoutMs} ms: it may be down, overloaded or unreachable; ${advice(server, endpoint)}`,
    { cause },
  );
}

function advice(server: "Redis" | "Upstash", endpoint: Endpoint): string {
  if (server === "Redis") {
    return `check that Redis is running there, that ${endpoint.source} names its host and port (rediss:// for TLS), and that this machine may connect to it (firewall, security group, VPC)`;
  }
  return `check that ${endpoint.source} is the database's REST URL (https://<database>.upstash.io, in the Upstash console) and that this machine can reach it (a Lambda in a VPC needs a NAT gateway)`;
}
