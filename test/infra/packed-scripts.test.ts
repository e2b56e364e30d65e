import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { packedScripts, packedScriptsModule } from "../../infra/packed-scripts.js";
import * as generated from "../../shared/scripts.generated.js";
import { REPO_ROOT } from "../helpers/paths.js";

const GENERATED = join(REPO_ROOT, "shared/scripts.generated.ts");
const dir = mkdtempSync(join(tmpdir(), "leaseq-packed-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the bundles' packed form of shared/scripts.generated.ts", () => {
  it("exports every name the real module exports, each with an equal value, in under a third of its bytes", async () => {
    // What the plugin gives esbuild for that file, bundled as the functions' bundles are.
    const { outputFiles } = await build({
      entryPoints: [GENERATED],
      bundle: true,
      platform: "node",
      format: "esm",
      minify: true,
      write: false,
      plugins: [packedScripts()],
    });
    const file = join(dir, "scripts.mjs");
    writeFileSync(file, outputFiles[0].contents);
    const packed = await import(pathToFileURL(file).href);
    expect(Object.keys(packed).sort()).toEqual(Object.keys(generated).sort());
    expect({ ...packed }).toStrictEqual({ ...generated });
    expect(outputFiles[0].contents.length).toBeLessThan(statSync(GENERATED).size / 3);
  });

  it("is refused for a value JSON would not carry as it is", () => {
    expect(() => packedScriptsModule({ LUA_BLOCKS: ["x"], SOMETHING: new Map() })).toThrow(/JSON/);
    expect(() => packedScriptsModule({ LUA_BLOCKS: ["x"], MISSING: undefined })).toThrow(/JSON/);
  });
});
