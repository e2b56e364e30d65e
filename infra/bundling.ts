import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { AssetHashType, DockerImage, type ILocalBundling } from "aws-cdk-lib";
import { Code } from "aws-cdk-lib/aws-lambda";
import type { BuildOptions, Plugin } from "esbuild";

/** The repository root: entries and `node_modules` resolve from here whatever the caller's cwd. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The two Lambda entry points, relative to the repository root. */
export const FUNCTION_ENTRIES = {
  worker: "functions/worker.ts",
  reclaimer: "functions/reclaimer.ts",
} as const;

/** The file every bundle is written to; the Lambda handler is `index.handler`. */
export const BUNDLE_FILE = "index.mjs";

/**
 * The ONE definition of the esbuild options for a function bundle: `npm run build` and the CDK
 * assets both call this, so what the tests build is what `cdk deploy` uploads. Writes
 * `<outdir>/index.mjs` and, for code loaded on demand, `<outdir>/chunks/*.mjs`.
 */
export function bundleOptions(entry: string, outdir: string): BuildOptions {
  return {
    absWorkingDir: REPO_ROOT,
    entryPoints: { index: resolve(REPO_ROOT, entry) },
    outdir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    target: "node22",
    // ESM so top-level await and `import.meta` work; `.mjs` so Node treats it as ESM without a package.json.
    format: "esm",
    // Dynamic imports become separate chunks: the TCP store (ioredis) loads only when REDIS_URL is
    // set, so Upstash deployments never parse it on a cold start.
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    // CommonJS dependencies (ioredis, parts of Powertools) call require() on Node built-ins; an ESM
    // bundle has no `require`, so esbuild's shim would throw "Dynamic require of ... is not supported".
    // Every output file (chunks too) is its own module scope, so each gets this line.
    banner: {
      js: 'import { createRequire as __leaseqCreateRequire } from "node:module"; const require = __leaseqCreateRequire(import.meta.url);',
    },
    // Prefer the ESM build of dual packages: it tree-shakes better.
    mainFields: ["module", "main"],
    // No keepNames: leaseq's error classes set literal names (shared/errors.ts), so minified class
    // names change nothing a user sees.
    minify: true,
    // No source map: an inline one would double the bundle, an external one is unused unless
    // NODE_OPTIONS=--enable-source-maps, which slows every cold start.
    sourcemap: false,
    // Lua scripts are imported as text by shared/scripts.ts and inlined into the bundle, their
    // comment lines and indentation dropped (a third of their size; the headers stay in lua/).
    loader: { ".lua": "text" },
    plugins: [compactLua],
    // The AWS SDK v3 ships with the Node.js 22 Lambda runtime; bundling it would add ~1 MB.
    external: ["@aws-sdk/*"],
    logLevel: "warning",
  };
}

/**
 * Lambda code for one function, bundled in-process with the local esbuild and the options above.
 * Why not NodejsFunction: it shells out to the esbuild CLI and maps its own props to flags, which
 * would be a second definition of the options. Why local: there is no Docker daemon here (and CI
 * needs none); the Docker image below is a required placeholder that is never pulled, because
 * `tryBundle` always succeeds or throws. The asset hash is the bundle's output hash, so a change in
 * shared/ or lua/ (outside the entry's folder) still yields a new asset.
 */
export function functionCode(entry: string): Code {
  const local: ILocalBundling = {
    tryBundle(outputDir: string): boolean {
      // tryBundle must be synchronous and esbuild's sync API takes no plugins, so the same build as
      // `npm run build` runs in a child process.
      execFileSync(
        process.execPath,
        [join(REPO_ROOT, "node_modules/tsx/dist/cli.mjs"), "infra/build.ts", entry, outputDir],
        {
          cwd: REPO_ROOT,
          stdio: ["ignore", "ignore", "inherit"],
        },
      );
      return true;
    },
  };
  return Code.fromAsset(join(REPO_ROOT, "functions"), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry("leaseq-local-esbuild-only"),
      local,
      // Never reaches Docker. CDK caches staged assets by source path and the JSON of these bundling
      // options, in which `local` (a function) serializes to nothing: without a per-entry value
      // here, the reclaimer would silently reuse the worker's bundle.
      environment: { LEASEQ_ESBUILD_OPTIONS: JSON.stringify(bundleOptions(entry, ".")) },
    },
  });
}

/** Lua loaded as text without full-line comments, indentation or blank lines. */
const compactLua: Plugin = {
  name: "compact-lua",
  setup(build) {
    build.onLoad({ filter: /\.lua$/ }, async (args) => ({
      contents: (await readFile(args.path, "utf8"))
        .split("\n")
        .map((line) => line.trim())
        .filter((line) => line !== "" && !line.startsWith("--"))
        .join("\n"),
      loader: "text",
    }));
  },
};
