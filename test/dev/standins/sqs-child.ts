// The SQS stand-in in a process of its own, for the kill tests (sqs-kill.test.ts): a LocalSqs kept
// in Redis, listening on a fixed port, until it is killed. Run as `node --import tsx sqs-child.ts`
// with SQS_CHILD set to the JSON of ChildSettings. It prints `ready <queueUrl> <deadLetterQueueUrl>`
// once it listens; with `hang`, it starts the mapping with a handler that never returns and prints
// `invoked <messageId>` for each record, so the messages stay in flight until the kill.
import type { SQSEvent } from "aws-lambda";
import { LocalSqs } from "../../../dev/standins/sqs/index.js";

/** What a child stand-in is started with. */
export interface ChildSettings {
  redisUrl: string;
  prefix: string;
  port: number;
  queueName: string;
  fifo?: boolean;
  maxReceiveCount?: number;
  hang?: boolean;
}

const settings = JSON.parse(process.env.SQS_CHILD ?? "{}") as ChildSettings;
const hang = async (event: SQSEvent) => {
  for (const record of event.Records) process.stdout.write(`invoked ${record.messageId}\n`);
  return new Promise<undefined>(() => {});
};
const sqs = await LocalSqs.open(hang, {
  queueName: settings.queueName,
  fifo: settings.fifo ?? false,
  maxReceiveCount: settings.maxReceiveCount ?? 5,
  visibilityTimeoutMs: 300_000,
  concurrency: 1,
  pollMs: 5,
  persistence: { redisUrl: settings.redisUrl, prefix: settings.prefix },
});
await sqs.listen(settings.port);
if (settings.hang) sqs.start();
process.stdout.write(`ready ${sqs.queueUrl} ${sqs.deadLetterQueueUrl}\n`);
