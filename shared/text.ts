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

/** Replaces every secret in `text` (the Upstash token, a password in REDIS_URL) with `***`. */
export function redact(text: string, env: NodeJS.ProcessEnv = process.env): string {
  const secrets: string[] = [];
  if (env.UPSTASH_REDIS_REST_TOKEN) secrets.push(env.UPSTASH_REDIS_REST_TOKEN);
  if (env.REDIS_URL) {
    try {
      const password = decodeURIComponent(new URL(env.REDIS_URL).password);
      if (password) secrets.push(password);
    } catch {
      // A malformed REDIS_URL is reported where it is parsed; nothing to redact from it here.
    }
  }
  return secrets.reduce((out, secret) => out.split(secret).join("***"), text);
}
