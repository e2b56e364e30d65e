// bench/results.json, which every mode of the benchmark adds its sections to: a run rewrites only
// what it measured, so the sections other modes wrote (flowControl, the callgrind counts) are kept.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The path of bench/results.json. */
export const RESULTS_PATH = fileURLToPath(new URL("./results.json", import.meta.url));

/** The sections bench/results.json holds (none before the first run). */
export function readResults(): Record<string, unknown> {
  return existsSync(RESULTS_PATH) ? JSON.parse(readFileSync(RESULTS_PATH, "utf8")) : {};
}

/** Writes `sections` into bench/results.json, each replacing its namesake, every other section kept. */
export function mergeResults(sections: Record<string, unknown>): void {
  writeFileSync(RESULTS_PATH, `${JSON.stringify({ ...readResults(), ...sections }, null, 2)}\n`);
}
