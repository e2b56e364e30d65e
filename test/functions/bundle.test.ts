import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import {
  captureStdout,
  envWithoutConnection,
  functionEnv,
  lambdaContext,
  scheduledEvent,
  sqsEvent,
  sqsRecord,
} from "../helpers/events.js";
import { adapters, uniqueQueueName } from "../helpers/stores.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
type Handler = (event: unknown, context: unknown) => Promise<Record<string, unknown>>;

beforeAll(() => {
  // The same build as `npm run build`, so this test runs exactly what is deployed.
  execFileSync("npm", ["run", "--silent", "build:lambda"], { cwd: root, stdio: "ignore" });
});

// About 254 KB each today (`npm run build:lambda` prints them; 249 KB before the scripts' argument
// prologues and the protocol's names were generated); the limit leaves room for dependency bumps
// while still catching a bundle that starts carrying the AWS SDK or the CDK (over 1 MB).
it("keeps what each function loads at a cold start under 270 KB minified (ioredis is an on-demand chunk)", () => {
  for (const bundle of ["worker", "reclaimer"]) {
    const dir = `${root}dist/lambda/${bundle}/`;
    const chunks = readdirSync(`${dir}chunks`).filter((file) => !file.startsWith("tcp-"));
    const bytes = [`${dir}index.mjs`, ...chunks.map((file) => `${dir}chunks/${file}`)].reduce(
      (sum, file) => sum + statSync(file).size,
      0,
    );
    expect(bytes / 1024, `${bundle} bundle KB`).toBeLessThan(270);
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
      // A query string gives each adapter its own module instance, hence its own cold start.
      const worker: Handler = (await import(`${root}dist/lambda/worker/index.mjs?${adapter.name}`)).handler;
      const reclaimer: Handler = (await import(`${root}dist/lambda/reclaimer/index.mjs?${adapter.name}`)).handler;
      const event = sqsEvent(
        sqsRecord({ tasks: [{ id: "b1", type: "echo", payload: { hello: "world" } }] }),
        sqsRecord("oops"),
      );
      const { result } = await captureStdout(() => worker(event, lambdaContext()));
      expect(result.batchItemFailures).toHaveLength(1);

      const store = await adapter.open();
      stores.push(store);
      const queue = new Queue(store, { name });
      expect(await queue.inspect("b1")).toMatchObject({ state: "done", attempts: 1 });
      const summary = await captureStdout(() => reclaimer(scheduledEvent(), lambdaContext()));
      expect(summary.result).toMatchObject({ done: 1, ready: 0, leased: 0, drainInvocations: 0 });
    } finally {
      process.env = saved;
    }
  });
});
