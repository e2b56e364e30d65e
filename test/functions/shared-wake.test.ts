// Two deployments share one queue, each with its own wake queue (docs/wake-ups.md): a producer of
// either, enqueueing a task of the other's type, sends its wake-up to the wake queue of the
// deployment that runs the type, through the real SQS client, with the settings the functions
// declare at their cold start (LEASEQ_DEPLOYMENT and the wake queue URL).
import type { SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { createProducer } from "../../functions/producer.js";
import { queueSettings } from "../../functions/runtime.js";
import { defineTasks, type TaskDeclaration } from "../../functions/tasks.js";
import { functionSqsClient } from "../../functions/wake.js";
import { Queue } from "../../shared/queue.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const imports = defineTasks({ types: { "import-file": { handler: () => {} } }, acceptTypes: ["report"] });
const reports = defineTasks({ types: { report: { handler: () => {} } }, acceptTypes: ["import-file"] });

let importsWake: LocalSqs;
let reportsWake: LocalSqs;
let client: SQSClient;

beforeAll(async () => {
  importsWake = new LocalSqs(async () => undefined, { queueName: "imports-wake" });
  await importsWake.listen();
  reportsWake = new LocalSqs(async () => undefined, { queueName: "reports-wake", broker: importsWake.broker });
  client = functionSqsClient(importsWake.endpoint);
});
afterAll(async () => {
  client.destroy();
  await reportsWake.close();
  await importsWake.close();
});

describe.each(adapters)("a producer of one deployment of a shared queue, over $name", (adapter) => {
  const { open } = storeFixture(adapter);

  it("wakes the deployment that runs the task's type, on that deployment's wake queue", async () => {
    const store = await open();
    const name = uniqueQueueName("shared-producer");
    // Each deployment's worker cold start declares its types, its name and its wake queue.
    const deploy = async (deployment: string, wake: LocalSqs, tasks: TaskDeclaration) => {
      const queue = new Queue(store, {
        name,
        settings: { ...queueSettings({ deployment, wakeQueueUrl: wake.queueUrl }, tasks), trustCallerClock: true },
      });
      await queue.configure();
      return queue;
    };
    const queue = await deploy("imports", importsWake, imports);
    await deploy("reports", reportsWake, reports);
    const before = { imports: importsWake.stats().visible, reports: reportsWake.stats().visible };

    // The imports deployment's producer (its wake queue its own) enqueues a report.
    const producer = createProducer({
      queueUrl: importsWake.queueUrl,
      wakeQueueUrl: importsWake.queueUrl,
      client,
      tasks: imports,
    });
    const sent = await producer.enqueue(queue, [{ type: "report", payload: {} }]);
    expect(sent.wakeError).toBeUndefined();
    expect(reportsWake.stats().visible - before.reports).toBe(1);
    expect(importsWake.stats().visible - before.imports).toBe(0);

    // And an import: its own deployment's wake queue.
    await producer.enqueue(queue, [{ type: "import-file", payload: {} }]);
    expect(importsWake.stats().visible - before.imports).toBe(1);
    expect(reportsWake.stats().visible - before.reports).toBe(1);
  });
});
