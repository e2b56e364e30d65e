import { InvalidArgumentError } from "commander";

/** A commander argument parser for an integer from `min` to `max`. */
export function integer(min: number, max: number): (text: string) => number {
  return (text) => {
    const value = Number(text);
    if (text.trim() === "" || !Number.isInteger(value) || value < min || value > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}.`);
    }
    return value;
  };
}

/** A commander argument parser for an ISO 8601 time, e.g. 2030-01-02T03:04:05Z; returns ms since epoch. */
export function isoTime(text: string): number {
  const ms = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(ms)) {
    throw new InvalidArgumentError("expected an ISO 8601 time such as 2030-01-02T03:04:05Z.");
  }
  return ms;
}

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

/** A commander argument parser for a duration (parseDuration); returns ms. */
export function durationArg(text: string): number {
  try {
    const ms = parseDuration(text);
    if (ms !== undefined) return ms;
  } catch {
    // Said below, in commander's words.
  }
  throw new InvalidArgumentError("expected a duration such as 500ms, 90s, 15m, 2h or 7d.");
}
