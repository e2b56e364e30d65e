import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, extname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { defineTasks, type TaskDeclaration } from "../functions/tasks.js";
import { ConfigError } from "../shared/errors.js";

/**
 * Loads a user's task module (`--tasks ./src/tasks.ts`): its default export, or its `tasks` export,
 * must be a `defineTasks(...)` result (or the object it takes). TypeScript is compiled with esbuild
 * (a dependency of leaseq) into a file beside the source, so its imports resolve from the user's
 * project as they would in their worker bundle; plain JavaScript is imported as is.
 */
let loads = 0;

export async function loadTasksModule(path: string, cwd = process.cwd()): Promise<TaskDeclaration> {
  const source = resolve(cwd, path);
  let loaded: Record<string, unknown>;
  if ([".ts", ".mts", ".cts", ".tsx"].includes(extname(source))) {
    // A name of its own per load: Node caches a module by its URL, and --watch loads it again.
    const compiled = join(dirname(source), `.${basename(source)}.leaseq-${process.pid}-${++loads}.mjs`);
    try {
      const esbuild: typeof import("esbuild") = createRequire(import.meta.url)("esbuild");
      await esbuild.build({
        entryPoints: [source],
        outfile: compiled,
        bundle: true,
        packages: "external",
        platform: "node",
        format: "esm",
        target: "node20",
        logLevel: "silent",
      });
      loaded = await import(pathToFileURL(compiled).href);
    } catch (error) {
      throw new ConfigError([`--tasks ${path}: could not load ${source} (${(error as Error).message})`]);
    } finally {
      rmSync(compiled, { force: true });
    }
  } else {
    // Loaded again by --watch: a query of its own, past Node's module cache (its imports stay cached).
    loaded = await import(`${pathToFileURL(source).href}?load=${++loads}`).catch((error: Error) => {
      throw new ConfigError([`--tasks ${path}: could not load ${source} (${error.message})`]);
    });
  }
  const exported = loaded.default ?? loaded.tasks;
  if (exported === undefined) {
    throw new ConfigError([
      `--tasks ${path}: the module must export its task declaration as default or as \`tasks\` (export default defineTasks({ types: { ... } }))`,
    ]);
  }
  return defineTasks(exported as TaskDeclaration);
}
