// JSON in and out of the endpoint, without rounding integers through a JS double. Redis integers
// are 64-bit; JSON.parse and JSON.stringify would turn 9007199254740993 into 9007199254740992.
import type { Reply } from "./resp.js";

/** A request body the endpoint refuses (answered with HTTP 400 `{error}`). */
export class BadRequestError extends Error {}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Parses JSON, with every number kept as the exact text it was written as (a string), so a
 * command argument like 9007199254740993 reaches Redis unchanged. Throws BadRequestError.
 */
export function parseJsonKeepingNumbers(text: string): unknown {
  try {
    JSON.parse(text); // validates; the rewrite below assumes well-formed JSON
  } catch (error) {
    throw new BadRequestError(`the body is not valid JSON (${(error as Error).message})`);
  }
  let rewritten = "";
  let position = 0;
  while (position < text.length) {
    const char = text[position];
    if (char === '"') {
      let end = position + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      rewritten += text.slice(position, end + 1);
      position = end + 1;
    } else if (char === "-" || (char >= "0" && char <= "9")) {
      NUMBER.lastIndex = position;
      const literal = NUMBER.exec(text)?.[0] ?? char;
      rewritten += `"${literal}"`;
      position += literal.length;
    } else {
      rewritten += char;
      position++;
    }
  }
  return JSON.parse(rewritten);
}

/** One command from a body: a non-empty array of strings, numbers or booleans, as strings. */
export function toCommand(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new BadRequestError(`${where} must be a non-empty JSON array like ["SET","key","value"]`);
  }
  return value.map((arg, index) => {
    if (typeof arg === "string") return arg;
    if (typeof arg === "boolean") return String(arg);
    throw new BadRequestError(
      `${where}[${index}] must be a string, number or boolean, got ${arg === null ? "null" : typeof arg}`,
    );
  });
}

/** A pipeline or transaction body: a non-empty array of commands. */
export function toCommands(value: unknown): string[][] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new BadRequestError('the body must be a non-empty JSON array of commands like [["SET","k","v"],["GET","k"]]');
  }
  return value.map((command, index) => toCommand(command, `command ${index}`));
}

/** What one command produced. */
export type Outcome = { result: Reply } | { error: string };
