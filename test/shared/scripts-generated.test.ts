import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GENERATED_PATH, generatedModule, LUA_DIR, PROTOCOL_LUA_PATH } from "../../bin/generate-lua.js";
import { protocolLua } from "../../bin/lua-protocol.js";

describe("the generated Lua module", () => {
  it("carries exactly the scripts in lua/ (run `npm run generate` after editing a .lua file)", () => {
    expect(readFileSync(GENERATED_PATH, "utf8")).toBe(generatedModule());
  });

  it("lua/lib/protocol.lua is what shared/protocol/ declares (run `npm run generate` after changing it)", () => {
    expect(readFileSync(PROTOCOL_LUA_PATH, "utf8")).toBe(protocolLua());
  });

  it("is refused while a script's -- Uses: lines do not name exactly the helpers it calls", () => {
    const dir = mkdtempSync(join(tmpdir(), "leaseq-lua-"));
    try {
      cpSync(LUA_DIR, dir, { recursive: true });
      const path = join(dir, "stats.lua");
      const source = readFileSync(path, "utf8");
      writeFileSync(path, source.replace(/^-- Uses: (.*)$/m, "-- Uses: $1, lane_unpark"));
      expect(() => generatedModule(dir)).toThrow(/lua\/stats\.lua: .* not used: lane_unpark/);
      writeFileSync(path, source.replace(/^-- Uses: guard, /m, "-- Uses: "));
      expect(() => generatedModule(dir)).toThrow(/lua\/stats\.lua: .* missing: guard/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
