// How a function bundle carries shared/scripts.generated.ts, and the record declarations of
// shared/protocol/ without their `meaning` texts. A module of its own, without the CDK:
// infra/bundling.ts runs this plugin in a child process at synth, which then starts in a fraction of
// the time aws-cdk-lib takes to load.
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { brotliCompressSync, constants } from "node:zlib";
import type { Plugin } from "esbuild";

/**
 * What a bundle carries in place of shared/scripts.generated.ts: the same exports, their values as
 * one brotli-compressed JSON text (base64) unpacked once at load. Why: that module is the compacted
 * Lua of every script, 152 KB of string literals, nearly half of the file a cold start reads and
 * parses; packed it is 43 KB. The price is about 2 ms more at import (decompressing and JSON.parse
 * take longer than parsing the literals did: docs/lambda.md#bundles). Only bundles carry this form:
 * the readable Lua stays the source of truth in lua/, and the generated module, held to it by
 * test/shared/scripts-generated.test.ts, is what the library runs from everywhere else.
 */
export function packedScriptsModule(exports: Record<string, unknown>): string {
  const json = JSON.stringify(exports);
  if (!isDeepStrictEqual(JSON.parse(json), exports)) {
    throw new Error("shared/scripts.generated.ts exports a value that JSON does not carry as it is");
  }
  const packed = brotliCompressSync(json, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: json.length,
    },
  });
  return [
    'import { brotliDecompressSync } from "node:zlib";',
    `const values = JSON.parse(brotliDecompressSync(Buffer.from("${packed.toString("base64")}", "base64")).toString());`,
    `export const { ${Object.keys(exports).join(", ")} } = values;`,
  ].join("\n");
}

/**
 * A declaration module of shared/protocol/ (its source, TypeScript or JavaScript) with every
 * meaning text emptied, in either quotes: `meaning: "..."` and the text given to `digits("...")`. The
 * declarations document each field for the generator and the docs, and nothing at run time reads a
 * meaning, so a bundle need not carry them (4 KB).
 */
export function withoutMeanings(source: string): string {
  const text = String.raw`(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')`;
  return source
    .replace(new RegExp(String.raw`\bmeaning:(\s*)${text}`, "g"), 'meaning:$1""')
    .replace(new RegExp(String.raw`\bdigits\((\s*)${text}\)`, "g"), 'digits($1"")');
}

/**
 * The esbuild plugin that loads shared/scripts.generated (`.ts` in the repository, `.js` installed)
 * as packedScriptsModule of whatever the real module exports, imported at bundle time: a new export
 * needs no change here.
 */
export function packedScripts(): Plugin {
  return {
    name: "leaseq-packed-scripts",
    setup(build) {
      build.onLoad({ filter: /[\\/]shared[\\/]scripts\.generated\.[jt]s$/ }, async ({ path }) => ({
        contents: packedScriptsModule({ ...(await import(pathToFileURL(path).href)) }),
        loader: "js",
      }));
      build.onLoad({ filter: /[\\/]shared[\\/]protocol[\\/](record|values|groups)\.[jt]s$/ }, async ({ path }) => ({
        contents: withoutMeanings(await readFile(path, "utf8")),
        loader: path.endsWith(".ts") ? "ts" : "js",
      }));
    },
  };
}
