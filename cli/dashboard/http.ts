// What the dashboard's handlers share of HTTP: the Hono environment, the error a handler throws to
// answer with a status and a message page, and the readers of query and form values, each of which
// throws that error (400 or 404) naming what was wrong.
import { parseDuration } from "../../shared/text.js";
import type { TaskState } from "../../shared/types.js";
import type { PageContext } from "./pages.js";
import { STATES } from "./queue.js";

/** The Hono environment: a queue's page context, once its path resolved to a queue. */
export type Env = { Variables: { page?: PageContext } };

/** A link an error page offers (a path on this dashboard, and its text). */
export interface Link {
  href: string;
  text: string;
}

/** Thrown by a handler: answered with `status` and a page saying `message`, with `links` (server.ts onError). */
export class HttpError extends Error {
  constructor(
    readonly status: 400 | 403 | 404,
    message: string,
    readonly links: readonly Link[] = [],
  ) {
    super(message);
  }
}

/** The title of an HttpError's page. */
export function errorTitle(status: number): string {
  return { 400: "Bad request", 403: "Forbidden", 404: "Not found" }[status] ?? "Error";
}

/** A form field as one string, or undefined when it is missing or a file. */
export const text = (value: unknown) => (typeof value === "string" ? value : undefined);

/** A form field given any number of times, as its non-empty strings. */
export const list = (value: unknown): string[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter(
    (each): each is string => typeof each === "string" && each !== "",
  );

/** An address to come back to after an action: a path on this server, nothing else. */
export function safeBack(value: unknown, fallback: string): string {
  return typeof value === "string" && /^\/(?![/\\])[^\s]*$/.test(value) && value.length < 2000 ? value : fallback;
}

/** A task state named in a path or form; 404 for anything else. */
export function stateOf(value: string): TaskState {
  if (!(STATES as readonly string[]).includes(value)) throw new HttpError(404, `No state "${value}".`);
  return value as TaskState;
}

/** A duration (parseDuration) in ms, undefined when not given; 400 when it is not one. */
export function durationOf(value: string | undefined): number | undefined {
  try {
    return parseDuration(value);
  } catch (error) {
    throw new HttpError(400, (error as Error).message);
  }
}

/** An integer query value from `min` to `max`, `fallback` when not given; 400 otherwise. */
export function integerOf(value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new HttpError(400, `Expected an integer from ${min} to ${max}, got "${value}".`);
  }
  return n;
}
