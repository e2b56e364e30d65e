// The crash watch's holds (functions/crash-watch.ts), step by step on a fake clock: the wake-up
// message it keeps must never come back before the worker's lease may be reclaimed, or a worker it
// starts finds the lease live, claims nothing, and its success deletes the message, losing the watch
// (test/functions/crash-watch.test.ts runs the whole path through the SQS stand-in).
import type { ChangeMessageVisibilityCommand, SQSClient } from "@aws-sdk/client-sqs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { crashWatch } from "../../functions/crash-watch.js";
import { sqsRecord } from "../helpers/events.js";

const SKEW_MS = 1_000;
const QUEUE_URL = "http://127.0.0.1:9324/000000000000/leaseq-wake";

/** A client whose ChangeMessageVisibility calls are recorded when they reach it, answered when `answer` is called. */
function recordingClient(now: () => number) {
  const calls: Array<{ at: number; seconds: number; answer: () => void }> = [];
  const client = {
    send: (command: ChangeMessageVisibilityCommand) =>
      new Promise<void>((resolve) => {
        calls.push({ at: now(), seconds: Number(command.input.VisibilityTimeout), answer: resolve });
      }),
  } as unknown as SQSClient;
  /** When the message comes back, by the calls that reached SQS so far (the last one wins). */
  const backAt = () => {
    const last = calls.at(-1);
    return last ? last.at + last.seconds * 1000 : undefined;
  };
  return { client, calls, backAt };
}

function watchFor(now: () => number, client: SQSClient) {
  const record = sqsRecord({ leaseq: "wake" });
  record.eventSourceARN = "arn:aws:sqs:us-east-1:000000000000:leaseq-wake";
  const watch = crashWatch([record], { client, queueUrl: QUEUE_URL, clockSkewMs: SKEW_MS, now });
  if (!watch) throw new Error("no watch for a wake-up record");
  return watch;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("the crash watch", () => {
  it("never brings the message back before the latest lease may be reclaimed: an alignment for an earlier lease stands down", async () => {
    vi.useFakeTimers({ now: 0 });
    const now = () => Date.now();
    const { client, calls, backAt } = recordingClient(now);
    const watch = watchFor(now, client);
    // A lease to 2,000: reclaimable from 3,000, the message due back at 3,100; held 4 whole seconds
    // (to 4,000), with an alignment due at 100 to bring it to 3,100 exactly.
    const first = watch.hold(2_000);
    await vi.advanceTimersByTimeAsync(0);
    calls[0].answer();
    await first;
    expect(backAt()).toBe(4_000);
    // A heartbeat at 50 extends the lease to 2,700: due back at 3,800, which the 4 s hold covers.
    await vi.advanceTimersByTimeAsync(50);
    await watch.hold(2_700);
    expect(calls).toHaveLength(1);
    // The alignment for the earlier lease would bring it back at 3,100, under the extended lease.
    await vi.advanceTimersByTimeAsync(100);
    for (const call of calls) call.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(backAt()).toBeGreaterThanOrEqual(2_700 + SKEW_MS + 100);
    watch.end();
  });

  it("sends one visibility change at a time, in the order asked: a shorter one never lands after a longer one", async () => {
    vi.useFakeTimers({ now: 0 });
    const now = () => Date.now();
    const { client, calls, backAt } = recordingClient(now);
    const watch = watchFor(now, client);
    // No lease yet: the idle hold (30 s). Then the first lease's, shorter, asked before the first
    // reached an answer.
    const idle = watch.hold(undefined);
    const leased = watch.hold(5_000);
    await vi.advanceTimersByTimeAsync(10);
    expect(calls.map((call) => call.seconds)).toEqual([32]);
    calls[0].answer();
    await idle;
    await vi.advanceTimersByTimeAsync(10);
    expect(calls.map((call) => call.seconds)).toEqual([32, 7]);
    calls[1].answer();
    await leased;
    expect(backAt()).toBeGreaterThanOrEqual(5_000 + SKEW_MS + 100);
    watch.end();
  });
});
