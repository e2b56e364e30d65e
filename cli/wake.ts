import { createProducer } from "../functions/producer.js";
import { sendWakeTo, wakeDelaySeconds } from "../functions/wake.js";
import type { WakeTo } from "../shared/types.js";
import { sqsClient } from "./dlq.js";

/** What sending a wake-up came to: sent (with its delay), no wake queue given, or refused (why). */
export type WakeOutcome =
  | { sent: true; queueUrl: string; delaySeconds: number }
  | { sent: false; queueUrl: undefined }
  | { sent: false; queueUrl: string; error: string };

/**
 * Sends a wake-up due at `wakeAtMs` to the wake queue (LEASEQ_WAKE_QUEUE_URL, or LEASEQ_QUEUE_URL: a
 * deployment whose workers read the task queue), when one is given. Never throws: it is sent after
 * the work it is for was written, so a refusal is said, not thrown (the reclaimer's run is the
 * safety net).
 */
export async function sendWake(wakeAtMs: number, env: NodeJS.ProcessEnv = process.env): Promise<WakeOutcome> {
  const queueUrl = env.LEASEQ_WAKE_QUEUE_URL || env.LEASEQ_QUEUE_URL;
  if (!queueUrl) return { sent: false, queueUrl: undefined };
  const client = sqsClient(env);
  try {
    const delaySeconds = wakeDelaySeconds(wakeAtMs, Date.now());
    await createProducer({ queueUrl, client }).wake(delaySeconds);
    return { sent: true, queueUrl, delaySeconds };
  } catch (error) {
    return { sent: false, queueUrl, error: error instanceof Error ? error.message : String(error) };
  } finally {
    client.destroy();
  }
}

/**
 * After a verb that leaves work for a worker (`resume`, `requeue`, `enqueue`): sends the wake-up due
 * at `wakeAtMs` (sendWake) and says so (docs/wake-ups.md); else says `what` starts at the reclaimer's
 * next run, and how to wake a worker now. A wake-up SQS refused is a warning on stderr, not a failure:
 * the work is written.
 */
export async function wakeWorker(wakeAtMs: number, what: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const outcome = await sendWake(wakeAtMs, env);
  if (outcome.sent) {
    console.log(
      `sent a wake-up to ${outcome.queueUrl}${outcome.delaySeconds > 0 ? `, due in ${outcome.delaySeconds} s (when the first task falls due)` : ""}`,
    );
  } else if (outcome.queueUrl === undefined) {
    console.log(
      `${what} start at the reclaimer's next run (within a minute); set LEASEQ_WAKE_QUEUE_URL to the wake queue (the stack's WakeQueueUrl output) to wake a worker now`,
    );
  } else {
    console.error(
      `warning: the wake-up could not be sent to ${outcome.queueUrl} (${outcome.error}); ${what} start at the reclaimer's next run (within a minute)`,
    );
  }
}

/**
 * Sends the wake-ups a call asked for on other deployments' wake queues (a queue two deployments
 * share: docs/wake-ups.md), saying each on stderr when SQS refused it. Never throws.
 */
export async function wakeOthers(wakeTo: readonly WakeTo[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (wakeTo.length === 0) return;
  const client = sqsClient(env);
  try {
    for (const error of await sendWakeTo(client, wakeTo, Date.now())) {
      console.error(
        `warning: a wake-up could not be sent to ${error}; its tasks start at that deployment's reclaimer's next run`,
      );
    }
  } finally {
    client.destroy();
  }
}

/**
 * After an enqueue: the wake-ups it asked for, on other deployments' wake queues (wakeOthers) and,
 * due at `wakeAtMs`, on this deployment's (sendWake). The tasks are in, so a wake-up SQS refused is
 * not a failure (docs/wake-ups.md): its error is returned, and said on stderr with when `what` (e.g.
 * "the task starts") instead, unless `quiet` (--json, which prints it in the result).
 */
export async function wakeForEnqueued(
  wakeAtMs: number | undefined,
  wakeTo: readonly WakeTo[],
  what: string,
  quiet: boolean,
): Promise<string | undefined> {
  await wakeOthers(wakeTo);
  if (wakeAtMs === undefined) return undefined;
  const wake = await sendWake(wakeAtMs);
  if (wake.sent || wake.queueUrl === undefined) return undefined;
  if (!quiet) {
    console.error(
      `warning: the wake-up could not be sent to ${wake.queueUrl} (${wake.error}); ${what} at the reclaimer's next run`,
    );
  }
  return wake.error;
}
