// What a task's page keeps up to date while it is open (docs/dashboard.md, "Live updates"): the
// values of one inspect call, by the names its live elements give (live.ts, live-rows.ts). The page
// is first drawn from the same values. Its actions are not redrawn: when the task's state (or
// what its actions depend on) changes, they are hidden and the page offers a reload instead.
import { AT_LABEL, duration } from "../../shared/text.js";
import { type TaskAttempt, type TaskInfo, TIME_OF_STATE } from "../../shared/types.js";
import { clock } from "./live.js";
import { type LiveRow, type TimeValue, timeValue } from "./live-rows.js";

/** Most payload (or result, or progress) text a task page shows. */
export const PAYLOAD_SHOWN_BYTES = 64 * 1024;

/** An error longer than this, or of more than one line, is folded: its first line shown, all of it a click away. */
export const ERROR_FOLDED_CHARS = 160;

/** JSON text as shown: pretty-printed when it parses, cut at PAYLOAD_SHOWN_BYTES. */
export function shownJson(json: string): { text: string; bytes: number; cut: boolean } {
  const bytes = Buffer.byteLength(json);
  const text = prettyJson(json);
  const buffer = Buffer.from(text);
  if (buffer.length <= PAYLOAD_SHOWN_BYTES) return { text, bytes, cut: false };
  // Cut on a character boundary: drop a partial UTF-8 sequence at the end.
  return {
    text: buffer
      .subarray(0, PAYLOAD_SHOWN_BYTES)
      .toString("utf8")
      .replace(/\uFFFD$/, ""),
    bytes,
    cut: true,
  };
}

/** JSON text pretty-printed; as given when it does not parse (an empty payload once DONE). */
export function prettyJson(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

/** A task's page's live values. */
export interface TaskLiveValues {
  state: string;
  /** The list of the task's state. */
  stateHref: string;
  /** "2 of 3", or "0 (no claim yet)". */
  attempts: string;
  stalls: string;
  hasStalls: boolean;
  holdsGroup: boolean;
  holds: string;
  enqueued: TimeValue;
  /** The label of the time its state gives it ("lease until") and that time. */
  stateTimeLabel: string;
  stateTime: TimeValue;
  isReady: boolean;
  rank: string;
  /** "last error", or "why" for a CORRUPT task. */
  errorLabel: string;
  lastError: string;
  hasResult: boolean;
  result: string;
  resultNote: string;
  hasProgress: boolean;
  progress: string;
  progressNote: string;
  /** The attempts table's rows, oldest first; none: the note below says why. */
  history: LiveRow[];
  hasHistory: boolean;
  noHistory: string;
  /** What the page's actions were drawn for (state, hold, failed at): when it changes they no longer apply. */
  actionsFor: string;
  asOf: string;
}

/** The values of `task`'s page at `now`; `base` is the queue's (/q/<queue>). */
export function taskLiveValues(base: string, task: TaskInfo, now: number): TaskLiveValues {
  const result = task.result === undefined ? undefined : shownJson(JSON.stringify(task.result));
  const progress = task.progress === undefined ? undefined : shownJson(JSON.stringify(task.progress));
  const sizeNote = (shown: ReturnType<typeof shownJson> | undefined) =>
    shown === undefined
      ? ""
      : shown.cut
        ? `the first ${PAYLOAD_SHOWN_BYTES / 1024} KiB of ${shown.bytes} bytes`
        : `${shown.bytes} bytes`;
  return {
    state: task.state,
    stateHref: `${base}/tasks/${task.state}`,
    attempts: task.maxAttempts > 0 ? `${task.attempts} of ${task.maxAttempts}` : `${task.attempts} (no claim yet)`,
    stalls: `${task.stalls} (its lease ran out while held: its worker stopped)`,
    hasStalls: task.stalls > 0,
    holdsGroup: task.holdsGroup,
    holds: `its group ${task.group ?? ""} waits behind it: Requeue runs it first, Skip lets the group go on`,
    enqueued: timeValue(task.enqueuedAtMs, now),
    stateTimeLabel: AT_LABEL[task.state],
    stateTime: timeValue(task[TIME_OF_STATE[task.state]] ?? 0, now),
    isReady: task.state === "ready",
    rank: String(task.rank),
    errorLabel: task.state === "corrupt" ? "why" : "last error",
    lastError: task.lastError,
    hasResult: result !== undefined,
    result: result?.text ?? "",
    resultNote: `the value its handler's ack kept: ${sizeNote(result)}`,
    hasProgress: progress !== undefined,
    progress: progress?.text ?? "",
    progressNote: `what its handler last reported: ${sizeNote(progress)}`,
    history: task.history.map((attempt, index) => attemptRow(attempt, index, now)),
    hasHistory: task.history.length > 0,
    noHistory:
      task.attempts > 0
        ? "None recorded (the queue keeps none, historyAttempts 0, or they were made before it kept them)."
        : "No attempt yet.",
    actionsFor: `${task.state} ${task.holdsGroup} ${task.finishedAt ?? ""}`,
    asOf: clock(now),
  };
}

/** One attempt's row: number, started, waited, ran, outcome, error (folded when long). */
function attemptRow(attempt: TaskAttempt, index: number, now: number): LiveRow {
  const edited = attempt.outcome === "edited";
  const started = timeValue(attempt.startedAtMs ?? attempt.endedAtMs ?? 0, now);
  const error = attempt.error;
  const folded = error.length > ERROR_FOLDED_CHARS || error.includes("\n");
  return {
    data: { attempt: String(index), outcome: attempt.outcome },
    cells: [
      edited ? { text: "–", className: "num", spanClass: "note" } : { text: String(attempt.attempt), className: "num" },
      started.iso === undefined ? { text: started.text, spanClass: "note" } : { text: started.text, iso: started.iso },
      { text: attempt.waitedMs === undefined ? "" : duration(attempt.waitedMs), className: "num" },
      { text: ranFor(attempt, now), className: "num" },
      { text: attempt.outcome, spanClass: `outcome ${attempt.outcome}` },
      folded
        ? {
            text: error.split("\n", 1)[0].slice(0, ERROR_FOLDED_CHARS),
            folded: error,
            className: edited ? "note" : "error",
            flag: "error",
          }
        : { text: error, className: edited ? "note" : "error", flag: "error" },
    ],
  };
}

function ranFor(attempt: TaskAttempt, now: number): string {
  if (attempt.runMs !== undefined) return duration(attempt.runMs);
  if (attempt.outcome === "running" && attempt.startedAtMs !== undefined) {
    return `${duration(Math.max(0, now - attempt.startedAtMs))} so far`;
  }
  return "";
}
