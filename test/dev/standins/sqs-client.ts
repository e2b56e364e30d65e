// Helpers the SQS stand-in tests share: a real SQSClient on the stand-in's endpoint, closed after each test.
import { SQSClient, type SQSClientConfig } from "@aws-sdk/client-sqs";
import type { SQSEvent } from "aws-lambda";
import { afterEach, expect } from "vitest";
import type { LocalSqs } from "../../../dev/standins/sqs/index.js";

const opened: Array<LocalSqs | SQSClient> = [];
afterEach(async () => {
  // Last opened first: a LocalSqs sharing another's broker closes before the one that serves it.
  for (const thing of opened.splice(0).reverse()) {
    if (thing instanceof SQSClient) thing.destroy();
    else await thing.close();
  }
});

/** A real SQSClient on `endpoint`, as a user's producer would build it; `config` adds to it. */
export function sqsClient(endpoint: string, config: SQSClientConfig = {}): SQSClient {
  return new SQSClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    ...config,
  });
}

/** Closes each stand-in and destroys each client after the test, whatever its outcome. */
export function closeAfterTest(...things: Array<LocalSqs | SQSClient>): void {
  opened.push(...things);
}

/** The error a promise rejects with; fails the test if it resolves. */
export const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable("succeeded"),
    (error) => error,
  );

/** Waits until `condition` holds, up to a generous deadline, so slow machines do not fail. */
export async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A handler that records every batch's bodies and returns no failures. */
export function recordingHandler() {
  const batches: string[][] = [];
  const handler = async (event: SQSEvent) => {
    batches.push(event.Records.map((record) => record.body));
    return { batchItemFailures: [] };
  };
  return { batches, handler };
}
