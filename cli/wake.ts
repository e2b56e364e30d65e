import { createProducer } from "../functions/producer.js";
import { wakeDelaySeconds } from "../functions/wake.js";
import { sqsClient } from "./dlq.js";

/**
 * After a verb that leaves work for a worker (`resume`, `requeue`): with the wake queue's URL
 * (LEASEQ_WAKE_QUEUE_URL; LEASEQ_QUEUE_URL is the name it had when workers read the task queue),
 * sends a wake-up due at `wakeAtMs` and says so (docs/wake-ups.md); else says `what` starts at the
 * reclaimer's next run, and how to wake a worker now. Throws when SQS refuses the wake-up.
 */
export async function wakeWorker(wakeAtMs: number, what: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const queueUrl = env.LEASEQ_WAKE_QUEUE_URL || env.LEASEQ_QUEUE_URL;
  if (!queueUrl) {
    console.log(
      `${what} start at the reclaimer's next run (within a minute); set LEASEQ_WAKE_QUEUE_URL to the wake queue (the stack's WakeQueueUrl output) to wake a worker now`,
    );
    return;
  }
  const client = sqsClient(env);
  try {
    const now = Date.now();
    const delaySeconds = wakeDelaySeconds(wakeAtMs, now);
    await createProducer({ queueUrl, client }).wake(delaySeconds);
    console.log(
      `sent a wake-up to ${queueUrl}${delaySeconds > 0 ? `, due in ${delaySeconds} s (when the first task falls due)` : ""}`,
    );
  } finally {
    client.destroy();
  }
}
