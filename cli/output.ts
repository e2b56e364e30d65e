// How the verbs print: a count with its noun, and a result as JSON (--json) or as text.

/** `count` and its noun, plural unless it is 1: "1 task", "3 tasks". */
export function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
