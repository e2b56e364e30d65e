import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { invoke, loadBundle } from "../helpers/built-bundles.js";
import { envWithoutConnection, functionEnv, scheduledEvent, sqsEvent, sqsRecord } from "../helpers/events.js";
import { adapters, uniqueQueueName } from "../helpers/stores.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

beforeAll(() => {
  // The same build as `npm run build`, so this test runs exactly what is deployed.
  execFileSync("npm", ["run", "--silent", "build:lambda"], { cwd: root, stdio: "ignore" });
});

// About 238,500 bytes (worker) and 220,500 (reclaimer) (`npm run build:lambda` prints them), 42,583 of
// each the scripts' text, packed at bundle time (infra/packed-scripts.ts), and 80,394 @upstash/redis
// (docs/lambda.md#bundles); the limit catches the scripts bundled unpacked again (+110,000) or a
// bundle that starts carrying the AWS SDK or the CDK (over 1 MB), with some room for dependency bumps.
// What a cold start loads is the entry and the chunks it imports statically: ioredis (TCP) and
// croner (schedules) are dynamic imports, loaded only by a queue that uses them.
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
});
