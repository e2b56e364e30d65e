import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The node arguments that run a sibling module of `from` (an import.meta.url): the compiled `.js`
 * when leaseq runs from its package, or the `.ts` source through tsx when it runs from this
 * repository (where tsx is a dev dependency).
 */
export function nodeArgsFor(relativeWithoutExtension: string, from: string): string[] {
  const compiled = fileURLToPath(new URL(`${relativeWithoutExtension}.js`, from));
  if (existsSync(compiled)) return [compiled];
  return ["--import", "tsx", fileURLToPath(new URL(`${relativeWithoutExtension}.ts`, from))];
}
