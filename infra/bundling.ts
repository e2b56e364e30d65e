import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, isAbsolute, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { AssetHashType, DockerImage, type ILocalBundling } from "aws-cdk-lib";
import { Code, Runtime } from "aws-cdk-lib/aws-lambda";
import type { BuildOptions } from "esbuild";
import { packedScripts } from "./packed-scripts.js";

/** The file every bundle is written to; the Lambda handler is `index.handler`. */
export const BUNDLE_FILE = "index.mjs";

/** The Node.js major versions leaseq builds for and tests on; the LeaseQueue `runtime` prop takes one. */
export const NODE_RUNTIMES = [22, 24] as const;
/** A Node.js major version leaseq builds for: the Lambda runtime `nodejs<N>.x` and the esbuild target `node<N>`. */
export type NodeRuntime = (typeof NODE_RUNTIMES)[number];
/** The runtime a LeaseQueue's functions get when no `runtime` is given. */
export const DEFAULT_NODE_RUNTIME: NodeRuntime = 22;

/** The Lambda runtime of each Node.js major version leaseq builds for. */
export function lambdaRuntime(runtime: NodeRuntime): Runtime {
  return runtime === 24 ? Runtime.NODEJS_24_X : Runtime.NODEJS_22_X;
}

/**
 * A module next to this one: the compiled `.js` when leaseq is installed as a package, the `.ts`
 * source when it runs from its repository.
 */
function sibling(relativeWithoutExtension: string): string {
  const compiled = fileURLToPath(new URL(`${relativeWithoutExtension}.js`, import.meta.url));
  return existsSync(compiled) ? compiled : compiled.replace(/\.js$/, ".ts");
}

/** leaseq's own reclaimer entry: it needs no task types, so every queue can use it. */
export const DEFAULT_RECLAIMER_ENTRY = sibling("../functions/handlers/reclaimer");

/**
 * Resolves an entry prop to an absolute path (a relative one is taken from the directory `cdk` runs
 * the app in) and records a problem when no such file exists.
 */
export function entryFile(prop: string, entry: string | undefined, problems: string[]): string {
  if (typeof entry !== "string" || entry === "") {
    problems.push(
      `${prop} is required: the path of your worker entry file (it exports handler = createWorker({ tasks }))`,
    );
    return "";
  }
  const path = isAbsolute(entry) ? entry : resolve(process.cwd(), entry);
  if (!existsSync(path)) problems.push(`${prop}: no file at ${path} (given ${JSON.stringify(entry)})`);
  return path;
}

/**
 * The ONE definition of the esbuild options for a function bundle: `npm run build` and the CDK
 * assets both call this, so what the tests build is what `cdk deploy` uploads. Writes
 * `<outdir>/index.mjs` and, for code loaded on demand, `<outdir>/chunks/*.mjs`, for the Node.js
 * version `runtime` (default 22). It includes a plugin, so it is for esbuild's `build`: `buildSync`
 * refuses plugins.
 */
export function bundleOptions(
  entry: string,
  outdir: string,
  runtime: NodeRuntime = DEFAULT_NODE_RUNTIME,
): BuildOptions {
  return {
    absWorkingDir: dirname(entry),
    entryPoints: { index: entry },
    outdir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    target: `node${runtime}`,
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
    // Comments marked /*! or @license go to <file>.LEGAL.txt beside each output instead of the end
    // of the file a cold start parses (today only Powertools' `v8 ignore ... @preserve` markers).
    legalComments: "external",
    // No source map: an inline one would double the bundle, an external one is unused unless
    // NODE_OPTIONS=--enable-source-maps, which slows every cold start.
    sourcemap: false,
    // The AWS SDK v3 ships with the Node.js 22 and 24 Lambda runtimes; bundling it would add ~1 MB.
    // @opentelemetry/api, leaseq's optional peer, is imported at run time when present (shared/
    // tracing.ts): from a layer (the ADOT layer carries it) or the function's node_modules, so the
    // bundle never carries it, and a function without it runs untraced (docs/lambda.md#tracing).
    external: ["@aws-sdk/*", "@opentelemetry/api"],
    plugins: [packedScripts()],
    logLevel: "warning",
  };
}

/**
 * esbuild's `build` of `options` in a child Node process, waited for: CDK's local bundling is
 * synchronous, and esbuild's synchronous API runs no plugins. The options go to the child as JSON and
 * it adds packedScripts back; it loads esbuild and infra/packed-scripts only, not the CDK (under tsx
 * when that is TypeScript: in the repository, where tsx is a dev dependency).
 */
function buildInChild(options: BuildOptions): void {
  const { plugins, ...data } = options;
  if (
    !isDeepStrictEqual(JSON.parse(JSON.stringify(data)), data) ||
    JSON.stringify(plugins?.map((plugin) => plugin.name)) !== JSON.stringify([packedScripts().name])
  ) {
    throw new Error("bundleOptions holds what buildInChild cannot pass to its child process");
  }
  const require = createRequire(import.meta.url);
  const plugin = sibling("./packed-scripts");
  // esbuild as resolved from where npm installed leaseq (its dependency), whatever the app's cwd.
  const urls = [require.resolve("esbuild"), plugin].map((path) => pathToFileURL(path).href);
  const script = [
    "const [esbuild, plugin, options] = JSON.parse(process.argv[1]);",
    "const { packedScripts } = await import(plugin);",
    "await (await import(esbuild)).default.build({ ...options, plugins: [packedScripts()] });",
  ].join("\n");
  const tsx = plugin.endsWith(".ts") ? ["--import", pathToFileURL(require.resolve("tsx")).href] : [];
  const child = spawnSync(
    process.execPath,
    [...tsx, "--input-type=module", "-e", script, JSON.stringify([...urls, data])],
    { encoding: "utf8" },
  );
  if (child.status !== 0) {
    const entry = Object.values(options.entryPoints ?? {}).join(", ");
    throw new Error(`esbuild could not bundle ${entry}:\n${child.stderr || child.error?.message || child.signal}`);
  }
  // Its warnings (logLevel "warning").
  process.stderr.write(child.stderr);
}

/**
 * Lambda code for one entry and Node.js version, bundled by esbuild with the options above. Why not
 * NodejsFunction: it shells out to an esbuild CLI it looks for in the app's own node_modules and maps
 * its own props to flags, a second definition of the options. Why local: there may be no Docker daemon
 * (CI here has none); the Docker image below is a required placeholder that is never pulled, because
 * `tryBundle` always succeeds or throws. The asset hash is the bundle's output hash, so a change
 * anywhere the entry imports yields a new asset.
 */
export function functionCode(entry: string, runtime: NodeRuntime): Code {
  const local: ILocalBundling = {
    tryBundle(outputDir: string): boolean {
      buildInChild(bundleOptions(entry, outputDir, runtime));
      return true;
    },
  };
  return Code.fromAsset(dirname(entry), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry("leaseq-local-esbuild-only"),
      local,
      // Never reaches Docker. CDK caches staged assets by source path and the JSON of these bundling
      // options, in which `local` (a function) serializes to nothing: without a per-entry (and
      // per-target) value here, two functions from one folder would silently share one bundle.
      environment: { LEASEQ_ENTRY: entry, LEASEQ_TARGET: `node${runtime}` },
    },
  });
}
