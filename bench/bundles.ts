import { execFile } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { type Spread, spread } from "./stats.js";

const run = promisify(execFile);

export const BUNDLES = {
  worker: "dist/lambda/worker/index.mjs",
  reclaimer: "dist/lambda/reclaimer/index.mjs",
} as const;

export type BundleResult =
  | { name: string; path: string; built: false }
  | { name: string; path: string; built: true; bytes: number; gzipBytes: number; importMs: Spread; error?: string };

/**
 * Size of each Lambda bundle and the time `import()` of it takes in a fresh Node process (the
 * module-loading part of a cold start), `runs` times. "not built" when `npm run build` has not run.
 */
export async function measureBundles(root: string, runs: number): Promise<BundleResult[]> {
  const results: BundleResult[] = [];
  for (const [name, path] of Object.entries(BUNDLES)) {
    const file = resolve(root, path);
    if (!existsSync(file)) {
      results.push({ name, path, built: false });
      continue;
    }
    const bytes = statSync(file).size;
    const gzipBytes = gzipSync(readFileSync(file)).length;
    const times: number[] = [];
    let error: string | undefined;
    for (let i = 0; i < runs && error === undefined; i++) {
      try {
        times.push(await importMs(file));
      } catch (caught) {
        error = (caught as Error).message.split("\n")[0];
      }
    }
    results.push({
      name,
      path,
      built: true,
      bytes,
      gzipBytes,
      importMs: spread(times.length ? times : [Number.NaN]),
      error,
    });
  }
  return results;
}

async function importMs(file: string): Promise<number> {
  const script = [
    "const start = performance.now();",
    `await import(${JSON.stringify(pathToFileURL(file).href)});`,
    "process.stdout.write(String(performance.now() - start));",
  ].join("\n");
  // No credentials or AWS endpoints: a bundle must not reach out at import time.
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
    env: { PATH: process.env.PATH, AWS_REGION: "us-east-1", NODE_ENV: "production" },
    timeout: 30_000,
  });
  return Number(stdout);
}
