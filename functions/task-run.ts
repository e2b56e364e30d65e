import { startAttemptSpan } from "../shared/tracing.js";
import type { ClaimedTask, SettleItem } from "../shared/types.js";
import { callHandler, failureOf } from "./handler-call.js";
import { backoffDelayMs, type DeclaredTaskType } from "./tasks.js";

/** Why a running handler was told to stop (its `signal`'s reason). */
export class Stop extends Error {
  constructor(
    /** `lost`: its lease was lost; `timeout`: its type's timeoutMs; `budget`: the invocation is about to end. */
    readonly reason: "lost" | "timeout" | "budget",
    message: string,
  ) {
    super(message);
    this.name = "Stop";
  }
}

/** What a run of one task came to: the settle to send, or `lost` (its lease was lost: nothing to send). */
export type RunOutcome = SettleItem | "lost";

/**
 * Runs one task's handler now, until it returns or throws, or until `stopAtMs` (its timeout, or the
 * invocation's end, whichever comes first) or its lease is lost (`controller` aborted with a Stop
 * "lost"). A handler that ignores its signal is not waited for once it is stopped: the run is
 * settled while there is time (the handler goes on in the background until the freeze). A stopped
 * run counts as an attempt, retried with backoff (FAILED on its last), so a task that always
 * overruns ends FAILED instead of looping. With tracing, the run is the CONSUMER span `process
 * <queue>` (shared/tracing.ts), the handler running in its context; what the handler threw, its
 * stop or its lease lost is recorded on it as the error it ended with.
 */
export async function runTask(
  task: ClaimedTask,
  type: DeclaredTaskType,
  controller: AbortController,
  options: {
    queue: string;
    now: () => number;
    stopAtMs: number;
    stopReason: "timeout" | "budget";
    maxResultBytes: number;
    /** The handler reported progress (JSON text): the next heartbeat carries it. */
    onProgress?: (text: string) => void;
  },
): Promise<RunOutcome> {
  const { now } = options;
  const startedAt = now();
  const base = { id: task.id, token: task.token };
  const span = startAttemptSpan(options.queue, task);
  // Why the run ended other than by the handler's return, for its span.
  let ended: { error: unknown } | undefined;
  const stop = setTimeout(
    () =>
      controller.abort(
        new Stop(
          options.stopReason,
          options.stopReason === "timeout"
            ? `the task's timeoutMs (${type.timeoutMs}) is reached`
            : "the invocation is about to time out",
        ),
      ),
    Math.max(0, options.stopAtMs - now()),
  );
  try {
    const handled = span
      ? span.run(() => callHandler(type, task, controller.signal, options.onProgress))
      : callHandler(type, task, controller.signal, options.onProgress);
    // Settled late, after the race below: nothing left to report it to.
    handled.catch(() => {});
    const value = await Promise.race([handled, stopped(controller.signal)]);
    if (lostLease(controller.signal)) {
      ended = { error: controller.signal.reason };
      return "lost";
    }
    if (!type.keepResult || value === undefined) return { ...base, outcome: "ack" };
    return keptResult(base, task, value, options.maxResultBytes);
  } catch (error) {
    const reason = controller.signal.reason;
    if (lostLease(controller.signal)) {
      ended = { error: reason };
      return "lost";
    }
    if (controller.signal.aborted && reason instanceof Stop) {
      ended = { error: reason };
      const ranMs = now() - startedAt;
      const what =
        reason.reason === "timeout"
          ? `did not finish within its timeoutMs (${type.timeoutMs} ms; ran ${ranMs} ms)`
          : `did not finish within the invocation (${ranMs} ms)`;
      return { ...base, outcome: "retry", retryAtMs: now() + backoffDelayMs(type.backoff, task.attempt), error: what };
    }
    ended = { error };
    const failure = failureOf(error);
    if (failure.permanent) return { ...base, outcome: "fail", error: failure.reason };
    return {
      ...base,
      outcome: "retry",
      retryAtMs: now() + backoffDelayMs(type.backoff, task.attempt),
      error: failure.reason,
    };
  } finally {
    clearTimeout(stop);
    span?.end(ended && (ended.error ?? "failed"));
  }
}

function lostLease(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason instanceof Stop && signal.reason.reason === "lost";
}

/** Rejects when `signal` aborts with a Stop (the run is over for the worker); never resolves. */
function stopped(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const onAbort = () => {
      if (signal.reason instanceof Stop) reject(signal.reason);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * An ack that keeps `value` (a type with keepResult); a FAILED task instead when it cannot be kept
 * (not JSON, or past the queue's maxResultBytes), with an error naming why: a batch's settle is
 * never refused for one task's result.
 */
function keptResult(
  base: { id: string; token: string },
  task: ClaimedTask,
  value: unknown,
  maxResultBytes: number,
): SettleItem {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    return {
      ...base,
      outcome: "fail",
      error: `its result is not JSON (${(error as Error).message}): keepResult keeps JSON values`,
    };
  }
  if (text === undefined) return { ...base, outcome: "ack" };
  const bytes = Buffer.byteLength(text);
  if (bytes > maxResultBytes) {
    return {
      ...base,
      outcome: "fail",
      error: `its result is ${bytes} bytes as JSON; the queue keeps at most ${maxResultBytes} (maxResultBytes) for a ${task.type} task: return a reference (an S3 key) instead`,
    };
  }
  return { ...base, outcome: "ack", result: value };
}
