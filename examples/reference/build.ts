// `npm run build:lambda`: bundles the reference deployment's two functions into dist/lambda/<name>/
// (index.mjs plus chunks) with the options the LeaseQueue construct uses (infra/bundling.ts), and
// prints each file's size: what a cold start loads.
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Metafile } from "esbuild";
import { BUNDLE_FILE, bundleOptions, DEFAULT_RECLAIMER_ENTRY } from "leaseq/cdk";
import { REFERENCE_WORKER_ENTRY } from "./stack.js";

const ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const ENTRIES = { worker: REFERENCE_WORKER_ENTRY, reclaimer: DEFAULT_RECLAIMER_ENTRY };
const kilobytes = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** Output files a cold start loads: the entry and what it imports statically, transitively. */
function loadedAtStart(outputs: Metafile["outputs"], entry: string): Set<string> {
  const loaded = new Set<string>();
  const visit = (path: string) => {
    if (loaded.has(path) || !outputs[path]) return;
    loaded.add(path);
    for (const imported of outputs[path].imports) if (imported.kind === "import-statement") visit(imported.path);
  };
  visit(entry);
  return loaded;
}

for (const [name, entry] of Object.entries(ENTRIES)) {
  const outdir = join(ROOT, "dist", "lambda", name);
  // A stale chunk from an earlier build would otherwise ship with the next asset.
  rmSync(outdir, { recursive: true, force: true });
  const { metafile } = await build({ ...bundleOptions(entry, outdir), metafile: true });
  const paths = Object.keys(metafile.outputs);
  const index = paths.find((path) => path.endsWith(`/${BUNDLE_FILE}`)) ?? "";
  const atStart = loadedAtStart(metafile.outputs, index);
  const startBytes = [...atStart].reduce((sum, path) => sum + metafile.outputs[path].bytes, 0);
  console.log(
    `dist/lambda/${name}/  ${kilobytes(startBytes)} minified loaded at cold start  (from ${entry.slice(ROOT.length + 1)})`,
  );
  for (const path of paths) {
    const when = atStart.has(path)
      ? "at cold start"
      : path.endsWith(".mjs")
        ? "on demand (dynamic import)"
        : "never loaded (legal comments)";
    console.log(
      `  ${path.slice(path.indexOf(`dist/lambda/${name}/`))}  ${kilobytes(metafile.outputs[path].bytes)}  ${when}`,
    );
  }
}
