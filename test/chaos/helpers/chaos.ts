// Shared by the chaos suites: the small/full switch, a seeded PRNG, and the figures each suite
// prints (docs/reliability.md quotes those of a full run).
import { appendFileSync } from "node:fs";
import { seededRandom } from "../../../dev/random.js";

/** `LEASEQ_CHAOS=full` (npm run test:chaos) runs the big versions; `npm test` runs the small ones. */
export const FULL = process.env.LEASEQ_CHAOS === "full";

/** `small` inside `npm test`, `full` under `npm run test:chaos`. */
export function scale<T>(small: T, full: T): T {
  return FULL ? full : small;
}

/** The seed of a suite: LEASEQ_CHAOS_SEED when set (to replay a failure), else a fresh one. */
export function chaosSeed(): number {
  const given = Number(process.env.LEASEQ_CHAOS_SEED);
  return Number.isInteger(given) && given > 0 ? given : 1 + Math.floor(Math.random() * 2 ** 31);
}

/** A small deterministic PRNG, so the random choices of a run replay from its seed. */
export const random = seededRandom;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Prints one suite's figures as a single `[chaos]` line, and appends them as JSON to the file named
 * by LEASEQ_CHAOS_FIGURES when it is set (to collect a whole run's figures).
 */
export function report(suite: string, figures: Record<string, number | string | Record<string, number>>): void {
  const line = { suite, mode: FULL ? "full" : "small", ...figures };
  console.log(`[chaos] ${JSON.stringify(line)}`);
  const file = process.env.LEASEQ_CHAOS_FIGURES;
  if (file) appendFileSync(file, `${JSON.stringify(line)}\n`);
}
