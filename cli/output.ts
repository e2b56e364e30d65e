// How the verbs print: a count with its noun, and a result as JSON (--json) or as text.

/** `count` and its noun, plural unless it is 1: "1 task", "3 tasks". */
export function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** A verb's result in its two forms; each is built only when it is printed. */
export interface Printable {
  /** The value --json prints, as one line. */
  json: () => unknown;
  /** The lines printed without --json (a line may hold several). */
  text: () => readonly string[];
  /** Said on stderr, without --json, when `text` gives no line: that there is nothing to show. */
  empty?: string;
}

/** Prints a result on stdout: with `json`, its JSON on one line; else its text lines, or its `empty` note on stderr. */
export function printResult(json: boolean | undefined, result: Printable): void {
  if (json) {
    console.log(JSON.stringify(result.json()));
    return;
  }
  const lines = result.text();
  for (const line of lines) console.log(line);
  if (lines.length === 0 && result.empty !== undefined) console.error(result.empty);
}
