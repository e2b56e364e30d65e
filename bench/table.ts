import type { Spread } from "./stats.js";

/** A Markdown table (it reads as well in a terminal as in docs/benchmarks.md). */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => (cell ?? "").padEnd(widths[i])).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

/** A figure with 3 significant digits, thousands grouped. */
export function num(value: number | undefined | null, digits = 3): string {
  if (value === undefined || value === null || Number.isNaN(value)) return "n/a";
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString("en-US");
  return Number(value.toPrecision(digits)).toString();
}

/** "median (min–max)" for a figure measured over several rounds. */
export function withSpread(value: Spread | undefined, digits = 3): string {
  if (!value) return "n/a";
  if (value.rounds.length < 2) return num(value.median, digits);
  return `${num(value.median, digits)} (${num(value.min, digits)}–${num(value.max, digits)})`;
}

export function bytes(value: number): string {
  if (value >= 1024 * 1024) return `${(value / 1024 / 1024).toFixed(2)} MiB`;
  if (value >= 1024) return `${(value / 1024).toFixed(1)} KiB`;
  return `${value} B`;
}
