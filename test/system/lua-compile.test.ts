// The system tier (npm run test:system): every generated script compiles with Lua 5.1's own
// compiler, luac5.1 (Redis runs Lua 5.1): what a parser in JavaScript does not check, such as the
// compiler's limits (200 locals per function, 60 upvalues), is checked by the compiler itself. A
// missing luac5.1 is a failure naming what to install, not a skip: `.ci/run` installs it.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCRIPTS } from "../../shared/scripts.js";

describe("the compiled scripts, through luac5.1", () => {
  const dir = mkdtempSync(join(tmpdir(), "leaseq-luac-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeAll(() => {
    try {
      execFileSync("luac5.1", ["-v"], { stdio: "ignore" });
    } catch {
      throw new Error("luac5.1 is missing: install it (apt-get install -y lua5.1); the system tier needs it");
    }
  });

  it.each(Object.values(SCRIPTS).map((script) => [script.name, script] as const))(
    "%s compiles with Lua 5.1",
    (name, script) => {
      const file = join(dir, `${name}.lua`);
      writeFileSync(file, script.body);
      const listing = execFileSync("luac5.1", ["-p", "-l", file], { encoding: "utf8" });
      expect(listing, "no script writes a global").not.toMatch(/SETGLOBAL/);
    },
  );
});
