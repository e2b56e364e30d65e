import { InvalidArgumentError } from "commander";
import { parseDuration } from "../shared/text.js";

export { integer } from "../shared/options.js";

/** A commander argument parser for an ISO 8601 time, e.g. 2030-01-02T03:04:05Z; returns ms since epoch. */
export function isoTime(text: string): number {
  const ms = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(ms)) {
    throw new InvalidArgumentError("expected an ISO 8601 time such as 2030-01-02T03:04:05Z.");
  }
  return ms;
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
