import { execFileSync } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withoutMeanings } from "../../infra/packed-scripts.js";
import * as groupDeclarations from "../../shared/protocol/groups.js";
import * as recordDeclarations from "../../shared/protocol/record.js";
import * as valueDeclarations from "../../shared/protocol/values.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { invoke, loadBundle } from "../helpers/built-bundles.js";
import { envWithoutConnection, functionEnv, scheduledEvent, sqsEvent, sqsRecord } from "../helpers/events.js";
import { adapters, rawClient, uniqueQueueName } from "../helpers/stores.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

beforeAll(() => {
  // The same build as `npm run build`, so this test runs exactly what is deployed.
  execFileSync("npm", ["run", "--silent", "build:lambda"], { cwd: root, stdio: "ignore" });
});

// About 249,300 bytes (worker) and 231,000 (reclaimer) (`npm run build:lambda` prints them), 44,127 of
// each the scripts' text, packed at bundle time (infra/packed-scripts.ts, which also leaves out the
// record declarations' meaning texts), and 80,334 @upstash/redis (docs/lambda.md#bundles); the limit catches the scripts bundled unpacked again (+110,000) or a
// bundle that starts carrying the AWS SDK or the CDK (over 1 MB), with some room for dependency bumps.
// What a cold start loads is the entry and the chunks it imports statically: ioredis (TCP), croner
// (schedules), leaseq's span code (tracing), a partitioned queue's code (LEASEQ_PARTITIONS > 1), the
// schedules' planner and the words of a policy mismatch are dynamic imports, loaded only when used.
it("keeps what each function loads at a cold start under 250,000 bytes minified (ioredis and croner are on-demand chunks)", () => {
  for (const bundle of ["worker", "reclaimer"]) {
    const dir = `${root}dist/lambda/${bundle}/`;
    const loaded = new Set<string>();
    const visit = (file: string) => {
      if (loaded.has(file)) return;
      loaded.add(file);
      const text = readFileSync(file, "utf8");
      // Static imports only: `import"./x.mjs"` or `import{...}from"./x.mjs"`, never `import("./x.mjs")`.
      for (const match of text.matchAll(/\bimport\s*(?:[\w$*{},\s]+?from\s*)?"(\.\/[^"]+\.mjs)"/g)) {
        visit(join(dirname(file), match[1]));
      }
    };
    visit(`${dir}index.mjs`);
    const chunks = readdirSync(`${dir}chunks`).map((file) => `${dir}chunks/${file}`);
    expect(chunks.filter((file) => !loaded.has(file)).map((file) => basename(file).split("-")[0])).toEqual(
      expect.arrayContaining(["tcp", "croner"]),
    );
    const bytes = [...loaded].reduce((sum, file) => sum + statSync(file).size, 0);
    expect(bytes, `${bundle} bundle bytes`).toBeLessThan(250_000);
  }
});

// The record declarations (shared/protocol/) document every field for the generator and the docs;
// nothing reads a meaning at run time, so the bundles carry the declarations without them.
it("carries the record declarations without their meaning texts", () => {
  for (const bundle of ["worker", "reclaimer"]) {
    const dir = `${root}dist/lambda/${bundle}/`;
    const files = [`${dir}index.mjs`, ...readdirSync(`${dir}chunks`).map((file) => `${dir}chunks/${file}`)];
    const text = files.map((file) => readFileSync(file, "utf8")).join("\n");
    // The declarations are there (a separator they declare), none of their meanings is: each
    // looked for by its longest stretch without a quote or backslash (the minifier may quote it anew).
    expect(text, bundle).toContain('meaning:""');
    const meanings = declaredMeanings([groupDeclarations, recordDeclarations, valueDeclarations]);
    expect(meanings.length).toBeGreaterThan(50);
    for (const meaning of meanings) {
      const probe = [...meaning.matchAll(/[^"'`\\]+/g)].map((match) => match[0]).sort((a, b) => b.length - a.length)[0];
      if (probe && probe.length >= 20) expect(text.includes(probe), `${bundle}: ${meaning}`).toBe(false);
    }
  }
  expect(
    withoutMeanings(
      '{ a: { meaning: "x \\" y", kind: "digits" }, b: { meaning:\n "z" }, c: { meaning: \'it\\\'s "q"\' }, d: digits("w") }',
    ),
  ).toBe('{ a: { meaning: "", kind: "digits" }, b: { meaning:\n "" }, c: { meaning: "" }, d: digits("") }');
});

/** Every `meaning` text the declaration modules hold, at any depth. */
function declaredMeanings(modules: unknown[]): string[] {
  const found: string[] = [];
  const walk = (value: unknown) => {
    if (!value || typeof value !== "object") return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === "meaning" && typeof inner === "string") found.push(inner);
      else walk(inner);
    }
  };
  for (const module of modules) walk(module);
  return found;
}

// @opentelemetry/api is leaseq's optional peer: imported at run time when a layer (ADOT's) or the
// function's own node_modules has it, never bundled (docs/lambda.md#tracing).
it("carries no OpenTelemetry code, only the import of @opentelemetry/api, in an on-demand chunk with leaseq's spans", () => {
  for (const bundle of ["worker", "reclaimer"]) {
    const dir = `${root}dist/lambda/${bundle}/`;
    const files = [`${dir}index.mjs`, ...readdirSync(`${dir}chunks`).map((file) => `${dir}chunks/${file}`)];
    const texts = files.map((file) => readFileSync(file, "utf8"));
    // The API's global registry key: in every copy of the API, in none of leaseq's code.
    expect(
      texts.some((text) => text.includes("opentelemetry.js.api")),
      bundle,
    ).toBe(false);
    expect(
      texts.some((text) => text.includes('import("@opentelemetry/api")')),
      bundle,
    ).toBe(true);
    expect(
      readdirSync(`${dir}chunks`).some((file) => file.startsWith("tracing-spans-")),
      bundle,
    ).toBe(true);
  }
});

describe.each(adapters)("the built bundles over $name", (adapter) => {
  const stores: Store[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close();
  });

  it("run an SQS batch to DONE and a reclaimer pass from dist/", async () => {
    const name = uniqueQueueName("bundle");
    const saved = { ...process.env };
    process.env = { ...envWithoutConnection(), ...functionEnv(adapter, name) };
    try {
      for (const bundle of ["worker", "reclaimer"]) {
        expect(statSync(`${root}dist/lambda/${bundle}/index.mjs`).size).toBeGreaterThan(0);
      }
      // Each adapter gets a cold start of its own.
      const worker = await loadBundle(`${root}dist/lambda/worker`, adapter.name);
      const reclaimer = await loadBundle(`${root}dist/lambda/reclaimer`, adapter.name);
      const event = sqsEvent(
        sqsRecord({ tasks: [{ id: "b1", type: "echo", payload: { hello: "world" } }] }),
        sqsRecord("oops"),
      );
      const { result } = await invoke(worker, event);
      expect(result.batchItemFailures).toHaveLength(1);

      const store = await adapter.open();
      stores.push(store);
      const queue = new Queue(store, { name });
      expect(await queue.admin.inspect("b1")).toMatchObject({ state: "done", attempts: 1 });
      const summary = await invoke(reclaimer, scheduledEvent());
      expect(summary.result).toMatchObject({ done: 1, ready: 0, leased: 0, drainInvocations: 0 });
    } finally {
      process.env = saved;
    }
  });

  it("run where @opentelemetry/api cannot be found, as on Lambda without a layer carrying it: untraced, its body of the layout without a trace", async () => {
    const name = uniqueQueueName("bundle-untraced");
    // The worker's files outside the repository, with the runtime's own packages beside them (the
    // AWS SDK, which Lambda provides) and nothing else; run by plain Node, whose resolution is
    // Lambda's (the test runner would resolve the import from the repository).
    const dir = mkdtempSync(join(tmpdir(), "leaseq-untraced-"));
    cpSync(`${root}dist/lambda/worker`, dir, { recursive: true });
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(`${root}node_modules/@aws-sdk`, join(dir, "node_modules", "@aws-sdk"));
    writeFileSync(join(dir, "probe.mjs"), 'await import("@opentelemetry/api");');
    const run = (event: unknown, env: Record<string, string> = {}) => {
      const output = execFileSync(
        process.execPath,
        [`${root}test/functions/fixtures/run-bundle.mjs`, dir, JSON.stringify(event)],
        { env: { ...envWithoutConnection(), ...functionEnv(adapter, name, env) }, encoding: "utf8" },
      );
      const last = output.trim().split("\n").at(-1) ?? "";
      return JSON.parse(last.replace(/^RESULT /, "")) as { api: string; result: { batchItemFailures?: unknown[] } };
    };
    const raw = rawClient();
    try {
      // The intake, then the worker: a cold start each, in a process of its own.
      const intake = run(sqsEvent(sqsRecord({ tasks: [{ id: "u1", type: "echo", payload: { n: 1 } }] })), {
        LEASEQ_ROLE: "intake",
      });
      expect(intake).toEqual({ api: "ERR_MODULE_NOT_FOUND", result: { batchItemFailures: [] } });
      const store = await adapter.open();
      stores.push(store);
      const queue = new Queue(store, { name });
      expect(await raw.hget(queue.keys.task, "u1")).toMatch(/^1\|\d+\|echo\|\|\{"n":1\}$/);
      expect(run({ leaseq: "drain" }).api).toBe("ERR_MODULE_NOT_FOUND");
      expect(await queue.admin.inspect("u1")).toMatchObject({ state: "done", attempts: 1 });
    } finally {
      raw.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
