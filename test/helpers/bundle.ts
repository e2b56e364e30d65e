// A test's child process from one esbuild bundle of its entry, made once per test process: forking
// `node --import tsx <entry>` costs most of a CPU second a child (tsx's loader compiles its imports),
// and the chaos suites start dozens. The bundle lives under node_modules/.cache/leaseq-test (so its
// packages, left out of it, resolve from node_modules); global-setup.ts removes the run's bundles.

import { mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";
import { inject } from "vitest";

const CACHE = fileURLToPath(new URL("../../node_modules/.cache/leaseq-test/", import.meta.url));

/** How every test bundle is built: one ESM file for Node 20, its packages left to node_modules. */
export const BUNDLE_OPTIONS = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  logLevel: "error",
} as const;
const built = new Map<string, string>();

/** The path of a bundle of `entry` (a file URL or path), to fork or spawn with plain `node`. */
export function bundled(entry: string | URL): string {
  const source = typeof entry === "string" ? entry : fileURLToPath(entry);
  const known = built.get(source);
  if (known) return known;
  mkdirSync(CACHE, { recursive: true });
  const outfile = join(CACHE, `${basename(source, ".ts")}-${inject("runPrefix")}-${process.pid}.mjs`);
  buildSync({ ...BUNDLE_OPTIONS, entryPoints: [source], outfile });
  built.set(source, outfile);
  return outfile;
}
