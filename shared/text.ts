// Text shared by the CLI, the dashboard and the local stack: durations as people type and read them,
// what a task's time means in each state, and secrets taken out of messages.
import type { TaskState } from "./types.js";

/** Milliseconds as a short human duration: 850 ms, 12.3 s, 4.0 min, 2.5 h, 3.0 d. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  if (ms < 86_400_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} d`;
}

/**
 * A duration as typed: plain milliseconds ("1500"), or a number with ms, s, m (min), h or d ("90s",
 * "5m", "1.5h"). Undefined for empty text; throws RangeError when it cannot be read.
 */
export function parseDuration(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$/i.exec(text);
  if (!match) throw new RangeError(`not a duration: "${text}" (e.g. 1500, 90s, 5m, 2h, 1d)`);
  const unit = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };
  return Math.round(Number(match[1]) * unit[(match[2]?.toLowerCase() ?? "ms") as keyof typeof unit]);
}

/** The label of the time a task's state gives it (TaskInfo, TIME_OF_STATE), per state. */
export const AT_LABEL: Record<TaskState, string> = {
  ready: "ready since",
  scheduled: "due at",
  leased: "lease until",
  done: "finished at",
  failed: "failed at",
  corrupt: "set aside at",
};

/**
 * A secret this long is replaced wherever it appears, inside a longer word too (a token glued into a
 * query string or an encoded blob). A shorter one is replaced only where it stands alone: ordinary
 * words hold it (a password "pass" is in "password", "e" in nearly every word), and replacing it
 * there garbles the message without hiding anything.
 */
export const SECRET_REDACTED_INSIDE_WORDS_FROM_LENGTH = 8;

/**
 * Replaces every secret in `text` (the Upstash token, a password in REDIS_URL, as typed and
 * percent-decoded) with `***`; a secret shorter than SECRET_REDACTED_INSIDE_WORDS_FROM_LENGTH only
 * where no letter, digit or `_` is glued to it (in a URL's userinfo, after `token=`, alone).
 */
export function redact(text: string, env: NodeJS.ProcessEnv = process.env): string {
  const secrets = secretsOf(env);
  if (secrets.length === 0) return text;
  // One pass, longest first: a secret holding another is replaced whole, and no `***` is searched again.
  const pattern = secrets
    .sort((a, b) => b.length - a.length)
    .map(secretPattern)
    .join("|");
  return text.replace(new RegExp(pattern, "gu"), "***");
}

function secretsOf(env: NodeJS.ProcessEnv): string[] {
  const secrets = new Set<string>();
  if (env.UPSTASH_REDIS_REST_TOKEN) secrets.add(env.UPSTASH_REDIS_REST_TOKEN);
  let password = "";
  try {
    password = new URL(env.REDIS_URL ?? "").password;
  } catch {
    // No REDIS_URL, or a malformed one (reported where it is parsed): no password to redact.
  }
  if (password) {
    // A URL in a message shows it as written (p%40ss); Redis was sent it decoded (p@ss).
    secrets.add(password);
    secrets.add(percentDecoded(password));
  }
  return [...secrets];
}

function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The secret as a pattern: itself, or for a short one, itself with no word character glued to a word-character edge. */
function secretPattern(secret: string): string {
  const escaped = secret.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  if (secret.length >= SECRET_REDACTED_INSIDE_WORDS_FROM_LENGTH) return escaped;
  const before = /^[\p{L}\p{N}_]/u.test(secret) ? "(?<![\\p{L}\\p{N}_])" : "";
  const after = /[\p{L}\p{N}_]$/u.test(secret) ? "(?![\\p{L}\\p{N}_])" : "";
  return `${before}${escaped}${after}`;
}
