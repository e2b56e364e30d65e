// The typed producer as the compiler sees it: test/package/typed/typed-producer.ts must type-check
// with its own tsconfig. Its `@ts-expect-error` lines (a misspelled type, a payload field of the wrong
// type, a missing one, an unknown task field) must each be an error, since an unused directive fails
// tsc, and its correct sends must compile.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/paths.js";

it("refuses at compile time what the declaration does not allow, and compiles what it does", {
  timeout: 120_000,
}, () => {
  const check = spawnSync("npx", ["tsc", "--noEmit", "-p", join(REPO_ROOT, "test/package/typed/tsconfig.json")], {
    cwd: REPO_ROOT,
    encoding: "utf8",
  });
  expect(`${check.stdout}${check.stderr}`).toBe("");
  expect(check.status).toBe(0);
});
