// The local SQS stand-in for a test file: one listening endpoint, and the SDK client the functions
// would use for it.
import type { SQSClient } from "@aws-sdk/client-sqs";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { functionSqsClient } from "../../functions/wake.js";

/** A stand-in listening on a free port (its queue and dead-letter queue), and a client for it. */
export async function openLocalSqs(): Promise<{ sqs: LocalSqs; client: SQSClient }> {
  const sqs = new LocalSqs(async () => undefined);
  await sqs.listen();
  return { sqs, client: functionSqsClient(sqs.endpoint) };
}

/** Closes what openLocalSqs opened. */
export async function closeLocalSqs(local: { sqs?: LocalSqs; client?: SQSClient }): Promise<void> {
  local.client?.destroy();
  await local.sqs?.close();
}
