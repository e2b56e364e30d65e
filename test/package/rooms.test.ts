// The rooms of the tree (README "Where things are") and the imports allowed between them: the
// library imports nothing of ours, nothing imports upward, the CLI and the local stack meet only at
// the `dev` verb, the stand-ins import nothing of leaseq, the test helpers (`leaseq/testing`) only
// the library and the functions, and nothing shipped imports the examples.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/paths.js";

/** Every .ts file below `dir` (relative to the repository). */
function files(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(join(REPO_ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(REPO_ROOT, path)).isDirectory()) found.push(...files(path));
    else if (name.endsWith(".ts")) found.push(path);
  }
  return found;
}

/** The repository paths a file imports (static and dynamic, relative specifiers and leaseq/*). */
function imports(file: string): string[] {
  const text = readFileSync(join(REPO_ROOT, file), "utf8");
  const found: string[] = [];
  for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)"([^"]+)"/g)) {
    const specifier = match[1];
    if (specifier.startsWith(".")) found.push(relative(REPO_ROOT, resolve(REPO_ROOT, dirname(file), specifier)));
    else if (specifier === "leaseq") found.push("shared/index.js");
    else if (specifier === "leaseq/lambda") found.push("functions/index.js");
    else if (specifier === "leaseq/cdk") found.push("infra/index.js");
    else if (specifier === "leaseq/testing") found.push("testing/index.js");
  }
  return found;
}

const room = (path: string) => (path.startsWith("dev/standins/") ? "dev/standins" : path.split("/")[0]);

/** Per room, the rooms it may import (its own always). */
const ALLOWED: Record<string, string[]> = {
  shared: [],
  functions: ["shared"],
  infra: ["shared", "functions"],
  testing: ["shared", "functions"],
  cli: ["shared", "functions"],
  dev: ["shared", "functions", "infra", "dev/standins"],
  "dev/standins": [],
  examples: ["shared", "functions", "infra"],
};

describe("the rooms", () => {
  it.each(Object.keys(ALLOWED))("%s imports only the rooms below it", (name) => {
    const wrong: string[] = [];
    for (const file of files(name)) {
      if (name === "dev" && file.startsWith("dev/standins/")) continue;
      for (const target of imports(file)) {
        const to = room(target);
        if (to === name || ALLOWED[name].includes(to) || !(to in ALLOWED)) continue;
        // The one tie between the CLI and the local stack: the `dev` verb loads the runner.
        if (file === "cli/main.ts" && target === "dev/dev.js") continue;
        wrong.push(`${file} → ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("nothing outside test/ imports test/: the tests depend on the code, never the other way", () => {
    const rooms = readdirSync(REPO_ROOT).filter(
      (name) => !["test", "node_modules", "dist", "cdk.out"].includes(name) && !name.startsWith("."),
    );
    const wrong: string[] = [];
    for (const name of rooms) {
      if (!statSync(join(REPO_ROOT, name)).isDirectory()) continue;
      for (const file of files(name)) {
        for (const target of imports(file)) if (target.startsWith("test/")) wrong.push(`${file} → ${target}`);
      }
    }
    expect(rooms).toEqual(expect.arrayContaining(["bench", "bin", "shared", "cli"]));
    expect(wrong).toEqual([]);
  });

  it("examples/ imports the package by name, as a user's code does: no relative path leaves examples/", () => {
    const outside = files("examples").flatMap((file) =>
      [...readFileSync(join(REPO_ROOT, file), "utf8").matchAll(/from\s+"(\.[^"]+)"/g)]
        .map((match) => relative(REPO_ROOT, resolve(REPO_ROOT, dirname(file), match[1])))
        .filter((target) => !target.startsWith("examples/"))
        .map((target) => `${file} → ${target}`),
    );
    expect(outside).toEqual([]);
  });
});

describe("the imports", () => {
  it("form no circle, type imports included: every module can be read before the ones that import it", () => {
    const roots = ["shared", "functions", "infra", "testing", "cli", "dev", "bin", "examples", "bench", "test"];
    const graph = new Map<string, string[]>();
    for (const file of roots.flatMap((dir) => files(dir))) {
      graph.set(
        file,
        imports(file).map((target) => target.replace(/\.js$/, ".ts")),
      );
    }
    const circles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const stack: string[] = [];
    const visit = (file: string) => {
      state.set(file, "open");
      stack.push(file);
      for (const target of graph.get(file) ?? []) {
        if (!graph.has(target)) continue;
        if (state.get(target) === "open") circles.push([...stack.slice(stack.indexOf(target)), target].join(" → "));
        else if (!state.has(target)) visit(target);
      }
      stack.pop();
      state.set(file, "done");
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    expect(graph.size).toBeGreaterThan(300);
    expect(circles).toEqual([]);
  });
});
