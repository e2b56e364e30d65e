import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GENERATED_PATH, generatedModule } from "../../bin/generate-lua.js";

describe("the generated Lua module", () => {
  it("carries exactly the scripts in lua/ (run `npm run generate` after editing a .lua file)", () => {
    expect(readFileSync(GENERATED_PATH, "utf8")).toBe(generatedModule());
  });
});
