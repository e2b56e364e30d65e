import { ChangeMessageVisibilityCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";

/** The longest visibility SQS gives a message: 12 hours. */
const VISIBILITY_MAX_SECONDS = 43_200;

/** How long the watch holds its message when the worker holds no lease (an idle worker's crash loses nothing). */
const IDLE_HOLD_MS = 30_000;

/**
 * The wake-up message that started a worker invocation, kept as its crash watch. Lambda deletes the
 * message when the invocation ends, and keeps it invisible while it runs; the worker shortens that
 * to just past the end of its earliest lease (deadline + the clock-skew margin), and moves it on
 * with each heartbeat. If the invocation dies (a native crash, an out-of-memory kill, a frozen
 * event loop), the message comes back when its leases can be reclaimed and starts a worker that
 * reclaims them first: a crash is noticed within a heartbeat, without the reclaimer's minute, and
 * costs no invocation while the worker lives (docs/wake-ups.md "Crash watch").
 */
export interface CrashWatch {
  /**
   * Holds the message until just past `earliestDeadlineMs` and the clock-skew margin (undefined: no
   * lease held). Never throws.
   */
  hold(earliestDeadlineMs: number | undefined): Promise<void>;
  /** The invocation ends (Lambda deletes the message): nothing more is sent. */
  end(): void;
}

/** How long after a lease may be reclaimed its watch brings the message back: SQS's timing is not exact. */
const RETURN_AFTER_MS = 100;

/** The watch of `records` that are wake-ups of the queue at `queueUrl`, or undefined when none is. */
export function crashWatch(
  records: SQSRecord[],
  options: { client: SQSClient; queueUrl: string; clockSkewMs: number; now?: () => number },
): CrashWatch | undefined {
  const name = options.queueUrl.slice(options.queueUrl.lastIndexOf("/") + 1);
  const handles = records
    .filter((record) => record.eventSourceARN?.endsWith(`:${name}`) && isWakeBody(record.body))
    .map((record) => record.receiptHandle);
  if (handles.length === 0) return undefined;
  const now = options.now ?? Date.now;
  let heldUntil = 0;
  /** The time the latest hold asked for: an alignment for an earlier one must not shorten below it. */
  let wanted = 0;
  let aligning: NodeJS.Timeout | undefined;
  let ended = false;
  // One request at a time, in the order they were asked: two in flight could land in either order,
  // and a shorter visibility landing last would bring the message back before the lease ends (a
  // worker then finds the lease live, claims nothing, and its success deletes the message: the
  // watch is lost).
  let sending: Promise<unknown> = Promise.resolve();
  const send = (seconds: number) => {
    const sent = sending.then(() =>
      Promise.all(
        handles.map((handle) =>
          options.client
            .send(
              new ChangeMessageVisibilityCommand({
                QueueUrl: options.queueUrl,
                ReceiptHandle: handle,
                VisibilityTimeout: seconds,
              }),
            )
            .catch(() => {
              // Best effort: without it the message comes back after the queue's visibility timeout,
              // and the reclaimer's run is the safety net.
            }),
        ),
      ),
    );
    sending = sent;
    return sent;
  };
  return {
    async hold(earliestDeadlineMs) {
      if (ended) return;
      const at = now();
      const until = (earliestDeadlineMs ?? at + IDLE_HOLD_MS) + options.clockSkewMs + RETURN_AFTER_MS;
      wanted = until;
      // Moved on as the leases are; shortened only when it would come back much later than needed.
      // The hold as it stands covers `until` (its whole seconds rounded up); an alignment pending
      // for an earlier time stands down (below), so it never shortens the hold under `until`.
      if (until <= heldUntil && until > heldUntil - 5_000) return;
      clearTimeout(aligning);
      // A visibility timeout counts whole seconds from its call: rounded up now, so the message
      // never comes back before `until`; then, when that is more than a moment late, set again at
      // the instant whole seconds from which land on `until` (within the next second). Killed
      // before that instant, the message comes back at most a second late.
      const seconds = Math.min(VISIBILITY_MAX_SECONDS, Math.max(1, Math.ceil((until - at) / 1000)));
      heldUntil = at + seconds * 1000;
      await send(seconds);
      const whole = Math.floor((until - at) / 1000);
      if (heldUntil - until <= 150 || whole < 1 || whole >= VISIBILITY_MAX_SECONDS) return;
      aligning = setTimeout(
        () => {
          // A later hold asked for more than this alignment would give: the rounded-up hold stays.
          if (ended || wanted > until) return;
          heldUntil = until;
          void send(whole);
        },
        Math.max(0, until - whole * 1000 - now()),
      );
      aligning.unref?.();
    },
    end() {
      ended = true;
      clearTimeout(aligning);
    },
  };
}

/** A wake-up message's body (`{"leaseq":"wake"}`), not a task list. */
export function isWakeBody(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as unknown;
    return parsed !== null && typeof parsed === "object" && !("tasks" in parsed);
  } catch {
    return false;
  }
}
