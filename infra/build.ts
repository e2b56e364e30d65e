// `npm run build`: bundles the two Lambda functions into dist/<name>/ (index.mjs plus chunks) with
// the same esbuild options the CDK assets use (infra/bundling.ts), and prints each file's size.
// `tsx infra/build.ts <entry> <outdir>` builds one function into outdir: what the CDK assets run.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { build, type Metafile } from "esbuild";
import { BUNDLE_FILE, bundleOptions, FUNCTION_ENTRIES, REPO_ROOT } from "./bundling.js";

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

const [oneEntry, oneOutdir] = process.argv.slice(2);
if (oneEntry && oneOutdir) {
  await build(bundleOptions(oneEntry, oneOutdir));
  process.exit(0);
}

for (const [name, entry] of Object.entries(FUNCTION_ENTRIES)) {
  const outdir = join(REPO_ROOT, "dist", name);
  // A stale chunk from an earlier build would otherwise ship with the next asset.
  rmSync(outdir, { recursive: true, force: true });
  const { metafile } = await build({ ...bundleOptions(entry, outdir), metafile: true });
  const paths = Object.keys(metafile.outputs);
  const index = paths.find((path) => path.endsWith(`/${BUNDLE_FILE}`)) ?? "";
  const atStart = loadedAtStart(metafile.outputs, index);
  const startBytes = [...atStart].reduce((sum, path) => sum + metafile.outputs[path].bytes, 0);
  console.log(`dist/${name}/  ${kilobytes(startBytes)} minified loaded at cold start  (from ${entry})`);
  for (const path of paths) {
    const when = atStart.has(path) ? "at cold start" : "on demand (dynamic import)";
    console.log(`  ${path.slice(path.indexOf(`dist/${name}/`))}  ${kilobytes(metafile.outputs[path].bytes)}  ${when}`);
  }
}
