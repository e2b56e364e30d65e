import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root, whatever the test's cwd. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
