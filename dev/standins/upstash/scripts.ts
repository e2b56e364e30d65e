// Upstash's script flag `allow-key-locking` on a real redis-server. Upstash runs each script under
// a global lock unless its shebang says `#!lua flags=allow-key-locking`; Redis 7 does not know the
// flag and refuses the script ("ERR Unexpected flag in script shebang: allow-key-locking"). The
// endpoint strips it from the shebang before the script reaches Redis, and keeps the flags Redis
// knows (no-writes, allow-oom, allow-stale, no-cluster, allow-cross-slot-keys), so they still act.
//
// Clients name a script by the SHA1 of the body they send, flag included; Redis names it by the
// SHA1 of the body it got. The endpoint maps one to the other, so SCRIPT LOAD answers the client's
// SHA and EVALSHA of that SHA runs the rewritten script.
import { createHash } from "node:crypto";
import type { Reply } from "./resp.js";

/** Flags Upstash understands that redis-server does not. */
const UPSTASH_ONLY_FLAGS = new Set(["allow-key-locking"]);

/**
 * The body with Upstash-only flags removed from its `#!lua` shebang, or `body` itself when there
 * is nothing to remove. Only the first line changes and its newline stays, so the line numbers in
 * Redis's error messages still match the client's script. Anything unusual (no newline, another
 * engine, quotes, which Redis's argument splitter would treat specially) passes unchanged, for
 * Redis to judge; an unknown flag is left in place, so Redis names it as it would.
 */
export function stripUpstashFlags(body: string): string {
  if (!body.startsWith("#!")) return body;
  const newline = body.indexOf("\n");
  if (newline < 0) return body;
  const line = body.slice(0, newline);
  if (/["']/.test(line)) return body;
  // Redis splits the shebang with sdssplitargs: on any C whitespace.
  const parts = line.split(/[ \t\r\v\f]+/).filter((part) => part !== "");
  if (parts[0] !== "#!lua") return body;
  let changed = false;
  const kept = [parts[0]];
  for (const part of parts.slice(1)) {
    const flags = part.startsWith("flags=") ? part.slice("flags=".length).split(",") : [];
    const redisFlags = flags.filter((flag) => !UPSTASH_ONLY_FLAGS.has(flag));
    if (redisFlags.length === flags.length) {
      kept.push(part);
      continue;
    }
    changed = true;
    // `#!lua` with no flags at all is a valid Redis 7 shebang (a script with default flags).
    if (redisFlags.length > 0) kept.push(`flags=${redisFlags.join(",")}`);
  }
  return changed ? `${kept.join(" ")}${body.slice(newline)}` : body;
}

/**
 * A function library with Upstash-only flags removed from each `flags={...}` of its
 * redis.register_function calls: Upstash sets `allow-key-locking` per function, and Redis 7 refuses
 * a flag it does not know ("ERR Error registering functions: ... unknown flag given").
 */
export function stripFunctionFlags(code: string): string {
  return code.replace(/\bflags\s*=\s*\{([^{}]*)\}/g, (whole, list: string) => {
    const items = list.split(",").map((item) => item.trim());
    const kept = items.filter((item) => !UPSTASH_ONLY_FLAGS.has(item.replace(/^(['"])(.*)\1$/, "$2")));
    return kept.length === items.length ? whole : `flags={${kept.filter((item) => item !== "").join(",")}}`;
  });
}

/** SHA1 in lowercase hex of a script body's UTF-8 bytes, as clients and Redis compute it. */
export function scriptSha(body: string): string {
  return createHash("sha1").update(body, "utf8").digest("hex");
}

/** A command as it goes to Redis, and how to turn Redis's reply into the client's. */
export interface Prepared {
  args: string[];
  reply?: (reply: Reply) => Reply;
}

/**
 * Most entries only matter until the client's next EVALSHA; past this many the oldest is
 * forgotten. A forgotten SHA reaches Redis unmapped and gets NOSCRIPT, and the client's fallback
 * to EVAL maps it again, so the bound costs one round trip, never a wrong script.
 */
const MAX_MAPPED = 10_000;

/** Rewrites script commands for Redis and remembers client SHA → Redis SHA. One per endpoint. */
export class ScriptRewriter {
  private readonly serverShas = new Map<string, string>();

  /**
   * The command for Redis; commands that are not EVAL*, EVALSHA*, SCRIPT LOAD/EXISTS or FUNCTION
   * LOAD pass as they are.
   */
  prepare(command: string[]): Prepared {
    const name = command[0].toUpperCase();
    if ((name === "EVAL" || name === "EVAL_RO") && command.length >= 2) {
      return { args: [command[0], this.rewrite(command[1]).body, ...command.slice(2)] };
    }
    if ((name === "EVALSHA" || name === "EVALSHA_RO") && command.length >= 2) {
      return { args: [command[0], this.serverSha(command[1]), ...command.slice(2)] };
    }
    if (name === "FUNCTION" && command[1]?.toUpperCase() === "LOAD" && command.length >= 3) {
      // FUNCTION LOAD [REPLACE] <code>: the code is the last argument.
      return { args: [...command.slice(0, -1), stripFunctionFlags(command[command.length - 1])] };
    }
    const sub = name === "SCRIPT" ? command[1]?.toUpperCase() : undefined;
    if (sub === "LOAD" && command.length === 3) {
      const { body, clientSha } = this.rewrite(command[2]);
      if (clientSha === undefined) return { args: command };
      // Redis answers the SHA of what it got; the client expects the SHA of what it sent.
      const answer = (reply: Reply) => (typeof reply === "string" ? clientSha : reply);
      return { args: [command[0], command[1], body], reply: answer };
    }
    if (sub === "EXISTS") {
      return { args: [command[0], command[1], ...command.slice(2).map((sha) => this.serverSha(sha))] };
    }
    return { args: command };
  }

  /** Redis's SHA for a client's SHA; unknown ones pass unchanged (a body without the flag has the same SHA on both sides). */
  private serverSha(clientSha: string): string {
    return this.serverShas.get(clientSha.toLowerCase()) ?? clientSha;
  }

  /**
   * The body for Redis; when it differs, records the mapping (before Redis answers: it is a pure
   * function of the body, and a script Redis refused just answers NOSCRIPT to its EVALSHA).
   */
  private rewrite(body: string): { body: string; clientSha?: string } {
    const stripped = stripUpstashFlags(body);
    if (stripped === body) return { body };
    const clientSha = scriptSha(body);
    this.serverShas.delete(clientSha); // re-inserted last: the most recently used stays longest
    this.serverShas.set(clientSha, scriptSha(stripped));
    if (this.serverShas.size > MAX_MAPPED) {
      const oldest = this.serverShas.keys().next().value;
      if (oldest !== undefined) this.serverShas.delete(oldest);
    }
    return { body: stripped, clientSha };
  }
}
