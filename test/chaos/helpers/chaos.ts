// Shared by the chaos suites: the small/full switch, a seeded PRNG, the model-based run with its
// tally of operations, and the figures each suite prints (docs/reliability.md quotes those of a full run).
import { appendFileSync } from "node:fs";
import fc from "fast-check";
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

/** How many times each operation of a model-based suite ran: `count` adds one, `take` returns them and starts again. */
export function operationTally() {
  let counts: Record<string, number> = {};
  return {
    count(name: string): void {
      counts[name] = (counts[name] ?? 0) + 1;
    },
    take(): Record<string, number> {
      const taken = counts;
      counts = {};
      return taken;
    },
  };
}

/**
 * Reports a model-based run: its seed, the sequences and steps it ran, and each operation's count;
 * `notSteps` names the counts that mark an outcome of a step rather than a step.
 */
export function reportModelRun(
  suite: string,
  run: { seed: number; sequences: number },
  operations: Record<string, number>,
  notSteps: string[] = [],
): void {
  const steps = Object.entries(operations)
    .filter(([name]) => !notSteps.includes(name))
    .reduce((sum, [, n]) => sum + n, 0);
  report(suite, { ...run, steps, operations });
}

/**
 * The model-based run of a suite: `check` on `runs` random sequences of up to `maxCommands` drawn
 * from `commands`, from the suite's seed (chaosSeed); resolves to that seed and how many ran.
 */
export async function checkSequences<Model extends object, Real>(
  commands: fc.Arbitrary<fc.AsyncCommand<Model, Real>>[],
  { runs, maxCommands }: { runs: number; maxCommands: number },
  check: (sequence: Iterable<fc.AsyncCommand<Model, Real>>) => Promise<void>,
): Promise<{ seed: number; sequences: number }> {
  const seed = chaosSeed();
  let sequences = 0;
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands, size: "max" }), async (sequence) => {
      sequences++;
      await check(sequence);
    }),
    { numRuns: runs, seed },
  );
  return { seed, sequences };
}
