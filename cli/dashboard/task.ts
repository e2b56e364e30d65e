// The dashboard's task page (/q/<queue>/task/<id>, docs/dashboard.md "Task"): the task's record,
// its attempts (inspect's history), the result a DONE task kept, what its handler last reported,
// its payload, and for a FAILED task the form that edits the payload and requeues it (amend.ts
// answers it). Errors, results and payloads are the handlers' text and the producers' data: Hono's
// `html` template escapes every one of them, a <textarea>'s content included.
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { AT_LABEL, duration } from "../../shared/text.js";
import { type TaskAttempt, type TaskInfo, TIME_OF_STATE } from "../../shared/types.js";
import { ACTION_LABEL, actionsFor, csrfField, layout, type PageContext, time } from "./pages.js";

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** Most payload (or result, or progress) text a task page shows. */
export const PAYLOAD_SHOWN_BYTES = 64 * 1024;

/** An error longer than this, or of more than one line, is folded: its first line shown, all of it a click away. */
export const ERROR_FOLDED_CHARS = 160;

/** What the edit form shows again when an edit was refused: the text sent, and why. */
export interface RefusedEdit {
  text: string;
  error: string;
}

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
function prettyJson(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

/**
 * A task's page at `now`. With `refused`, the edit just refused: its text and reason shown in the
 * edit form (or, once the task is no longer FAILED, above the record).
 */
export function taskPage(ctx: PageContext, task: TaskInfo, now: number, refused?: RefusedEdit) {
  // A FAILED task its ordered group waits behind (onFailure hold) may also be skipped.
  const actions: Array<keyof typeof ACTION_LABEL> = ctx.readOnly
    ? []
    : [...actionsFor(task.state), ...(task.holdsGroup ? (["skip"] as const) : [])];
  const editable = task.state === "failed" && !ctx.readOnly;
  return layout(
    ctx,
    `Task ${task.id}`,
    html`${refused && !editable ? html`<p class="warn" data-edit-error>${refused.error}</p>` : ""}
      <dl>
        <dt>id</dt><dd data-field="id">${task.id}</dd>
        <dt>state</dt><dd data-field="state"><a href="${ctx.base}/tasks/${task.state}">${task.state}</a></dd>
        <dt>type</dt><dd data-field="type">${task.type}</dd>
        <dt>group</dt><dd data-field="group">${task.group ?? html`<span class="note">none</span>`}</dd>
        <dt>priority</dt><dd data-field="priority">${task.priority}</dd>
        <dt>attempts</dt><dd data-field="attempts">${task.maxAttempts > 0 ? `${task.attempts} of ${task.maxAttempts}` : `${task.attempts} (no claim yet)`}</dd>
        ${task.stalls > 0 ? html`<dt>stalls</dt><dd data-field="stalls">${task.stalls} (its lease ran out while held: its worker stopped)</dd>` : ""}
        ${task.holdsGroup ? html`<dt>holds</dt><dd class="warn" data-field="holds">its group ${task.group} waits behind it: Requeue runs it first, Skip lets the group go on</dd>` : ""}
        <dt>enqueued</dt><dd>${time(task.enqueuedAtMs, now)}</dd>
        <dt>${AT_LABEL[task.state]}</dt><dd>${time(task[TIME_OF_STATE[task.state]] ?? 0, now)}</dd>
        ${task.state === "ready" ? html`<dt>rank</dt><dd>${task.rank}</dd>` : ""}
        ${traceRow(task)}
        <dt>${task.state === "corrupt" ? "why" : "last error"}</dt><dd class="error" data-field="lastError">${task.lastError || html`<span class="note">none</span>`}</dd>
      </dl>
      ${
        actions.length > 0
          ? html`<form method="post" action="${ctx.base}/action" class="actions">
            ${csrfField(ctx)}<input type="hidden" name="back" value="${ctx.base}/task/${encodeURIComponent(task.id)}">
            <input type="hidden" name="ids" value="${task.id}">
            ${actions.map((action) => html`<button name="action" value="${action}" ${action === "delete" ? html`class="danger"` : ""} data-confirm="${ACTION_LABEL[action]} task ${task.id}?">${ACTION_LABEL[action]}</button>`)}
          </form>`
          : ""
      }
      <h2>Attempts</h2>
      ${attemptsTable(task, now)}
      ${task.result !== undefined ? jsonSection("Result", "result", task.result, "the value its handler's ack kept") : ""}
      ${task.progress !== undefined ? jsonSection("Progress", "progress", task.progress, "what its handler last reported") : ""}
      <h2>Payload</h2>
      ${payloadSection(task)}
      ${editable ? editForm(ctx, task, refused) : ""}`,
  );
}

/**
 * The task's W3C trace context, once the library records one (OpenTelemetry, in progress): when
 * TaskInfo carries `traceparent`, its row shows the trace id to look the task's trace up by.
 * Until then no task has one and the row is not drawn.
 */
function traceRow(task: TaskInfo): Html | "" {
  if (!task.traceparent) return "";
  // version-traceid-parentid-flags: https://www.w3.org/TR/trace-context/#traceparent-header
  const traceId = task.traceparent.split("-")[1] ?? "";
  return html`<dt>trace id</dt><dd data-field="traceId" title="${task.traceparent}"><code>${traceId}</code></dd>`;
}

/** The attempts, oldest first: when each started, how long it waited and ran, how it ended and its error. */
function attemptsTable(task: TaskInfo, now: number): Html {
  if (task.history.length === 0) {
    return html`<p class="note" data-attempts-none>${task.attempts > 0 ? "None recorded (the queue keeps none, historyAttempts 0, or they were made before it kept them)." : "No attempt yet."}</p>`;
  }
  const rows = task.history.map((attempt, index) => {
    const edited = attempt.outcome === "edited";
    return html`<tr data-attempt="${index}" data-outcome="${attempt.outcome}">
      <td class="num">${edited ? html`<span class="note">–</span>` : attempt.attempt}</td>
      <td>${time(attempt.startedAtMs ?? attempt.endedAtMs ?? 0, now)}</td>
      <td class="num">${attempt.waitedMs === undefined ? "" : duration(attempt.waitedMs)}</td>
      <td class="num">${ranFor(attempt, now)}</td>
      <td><span class="outcome ${attempt.outcome}">${attempt.outcome}</span></td>
      <td class="${edited ? "note" : "error"}" data-error>${errorText(attempt.error)}</td>
    </tr>`;
  });
  return html`<table class="attempts" data-attempts>
      <thead><tr><th class="num">#</th><th>started</th><th class="num">waited</th><th class="num">ran</th><th>outcome</th><th>error</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>
    <p class="note small">Oldest first; the queue keeps the newest attempts (historyAttempts) and the one that ended DONE. An edit of the payload is listed where it was made, its note in the error column.</p>`;
}

function ranFor(attempt: TaskAttempt, now: number): string {
  if (attempt.runMs !== undefined) return duration(attempt.runMs);
  if (attempt.outcome === "running" && attempt.startedAtMs !== undefined) {
    return `${duration(Math.max(0, now - attempt.startedAtMs))} so far`;
  }
  return "";
}

/** An attempt's error: as it is when short, else folded to its first line with all of it in a <pre> below. */
function errorText(error: string): Html | string {
  if (error === "") return "";
  if (error.length <= ERROR_FOLDED_CHARS && !error.includes("\n")) return error;
  const firstLine = error.split("\n", 1)[0].slice(0, ERROR_FOLDED_CHARS);
  return html`<details><summary>${firstLine} …</summary><pre>${error}</pre></details>`;
}

/** A JSON value of the task (its result, its progress) pretty-printed. */
function jsonSection(title: string, id: string, value: unknown, what: string): Html {
  const shown = shownJson(JSON.stringify(value));
  return html`<h2>${title}</h2>
    <p class="note">${what}: ${shown.cut ? html`<span class="warn">the first ${PAYLOAD_SHOWN_BYTES / 1024} KiB of ${shown.bytes} bytes</span>` : `${shown.bytes} bytes`}</p>
    <pre id="${id}">${shown.text}</pre>`;
}

function payloadSection(task: TaskInfo): Html {
  if (task.payload === "") return html`<p class="note">(dropped when done)</p>`;
  const payload = shownJson(task.payload);
  return html`${payload.cut ? html`<p class="warn" data-payload-cut>Showing the first ${PAYLOAD_SHOWN_BYTES / 1024} KiB of ${payload.bytes} bytes.</p>` : html`<p class="note">${payload.bytes} bytes</p>`}
    <pre id="payload">${payload.text}</pre>`;
}

/**
 * A FAILED task's edit form: its whole payload (not cut) in a textarea, sent with the CSRF token
 * and the time it failed (amend.ts refuses the edit if it failed again since), confirmed before it
 * is sent. After a refused edit it shows the text sent and why, and is open.
 */
function editForm(ctx: PageContext, task: TaskInfo, refused: RefusedEdit | undefined): Html {
  const text = refused?.text ?? prettyJson(task.payload);
  const rows = Math.min(30, Math.max(6, text.split("\n").length + 1));
  // The newline after <textarea> is dropped by the HTML parser: one the text starts with is kept.
  return html`<details class="edit" data-edit ${refused ? "open" : ""}>
      <summary>Edit the payload and requeue</summary>
      <form method="post" action="${ctx.base}/action">
        ${csrfField(ctx)}<input type="hidden" name="id" value="${task.id}">
        <input type="hidden" name="failedAt" value="${String(task.finishedAt ?? "")}">
        ${refused ? html`<p class="warn" data-edit-error>${refused.error}</p>` : ""}
        <p class="note">JSON, checked as an enqueue checks a payload. The task goes back to READY with fresh attempts; the edit is kept in its attempts.</p>
        <textarea name="payload" rows="${rows}" spellcheck="false" aria-label="payload (JSON)">
${text}</textarea>
        <div class="actions"><button name="action" value="amend" class="danger" data-confirm="Replace the payload of task ${task.id} and requeue it?">Save and requeue</button></div>
      </form>
    </details>`;
}
