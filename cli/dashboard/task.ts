// The dashboard's task page (/q/<queue>/task/<id>, docs/dashboard.md "Task"): the task's record,
// its attempts (inspect's history), the result a DONE task kept, what its handler last reported,
// its payload, and for a FAILED task the form that edits the payload and requeues it (amend.ts
// answers it). Errors, results and payloads are the handlers' text and the producers' data: Hono's
// `html` template escapes every one of them, a <textarea>'s content included.
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { TaskInfo } from "../../shared/types.js";
import { rowsHtml, timeHtml } from "./live-rows.js";
import { ACTION_LABEL, actionsFor, csrfField, layout, liveNote, type PageContext } from "./pages.js";
import { PAYLOAD_SHOWN_BYTES, prettyJson, shownJson, type TaskLiveValues, taskLiveValues } from "./task-live.js";

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

export { ERROR_FOLDED_CHARS, PAYLOAD_SHOWN_BYTES, shownJson } from "./task-live.js";

/** What the edit form shows again when an edit was refused: the text sent, and why. */
export interface RefusedEdit {
  text: string;
  error: string;
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
  // Drawn from the values live.json sends, into the elements the page script updates (task-live.ts).
  const live = taskLiveValues(ctx.base, task, now);
  const hiddenUnless = (shown: boolean) => (shown ? "" : "hidden");
  const self = `${ctx.base}/task/${encodeURIComponent(task.id)}`;
  // The actions apply to the task as drawn: hidden once it changes, and a reload offered.
  const drawnFor = html`data-live-same="actionsFor" data-drawn-as="${live.actionsFor}"`;
  return layout(
    ctx,
    `Task ${task.id}`,
    html`${refused && !editable ? html`<p class="warn" data-edit-error>${refused.error}</p>` : ""}
      <dl>
        <dt>id</dt><dd data-field="id">${task.id}</dd>
        <dt>state</dt><dd data-field="state"><a href="${live.stateHref}" data-live-text="state" data-live-href="stateHref">${live.state}</a></dd>
        <dt>type</dt><dd data-field="type">${task.type}</dd>
        <dt>group</dt><dd data-field="group">${task.group ?? html`<span class="note">none</span>`}</dd>
        <dt>priority</dt><dd data-field="priority">${task.priority}</dd>
        <dt>attempts</dt><dd data-field="attempts" data-live-text="attempts">${live.attempts}</dd>
        <dt data-live-show="hasStalls" ${hiddenUnless(live.hasStalls)}>stalls</dt><dd data-field="stalls" data-live-show="hasStalls" data-live-text="stalls" ${hiddenUnless(live.hasStalls)}>${live.stalls}</dd>
        <dt data-live-show="holdsGroup" ${hiddenUnless(live.holdsGroup)}>holds</dt><dd class="warn" data-field="holds" data-live-show="holdsGroup" data-live-text="holds" ${hiddenUnless(live.holdsGroup)}>${live.holds}</dd>
        <dt>enqueued</dt><dd data-live-time="enqueued">${timeHtml(live.enqueued)}</dd>
        <dt data-live-text="stateTimeLabel">${live.stateTimeLabel}</dt><dd data-field="stateTime" data-live-time="stateTime">${timeHtml(live.stateTime)}</dd>
        <dt data-live-show="isReady" ${hiddenUnless(live.isReady)}>rank</dt><dd data-live-show="isReady" data-live-text="rank" ${hiddenUnless(live.isReady)}>${live.rank}</dd>
        ${traceRow(task)}
        <dt data-live-text="errorLabel">${live.errorLabel}</dt><dd class="error"><span data-field="lastError" data-live-text="lastError">${live.lastError}</span><span class="note" data-live-hide="lastError" ${live.lastError ? "hidden" : ""}>none</span></dd>
      </dl>
      <p class="warn" data-live-changed="actionsFor" data-drawn-as="${live.actionsFor}" hidden data-state-changed>The task is now <b data-live-text="state">${live.state}</b>: <a href="${self}">reload</a> for what can be done with it.</p>
      ${
        actions.length > 0
          ? html`<form method="post" action="${ctx.base}/action" class="actions" ${drawnFor}>
            ${csrfField(ctx)}<input type="hidden" name="back" value="${self}">
            <input type="hidden" name="ids" value="${task.id}">
            ${actions.map((action) => html`<button name="action" value="${action}" ${action === "delete" ? html`class="danger"` : ""} data-confirm="${ACTION_LABEL[action]} task ${task.id}?">${ACTION_LABEL[action]}</button>`)}
          </form>`
          : ""
      }
      <h2>Attempts</h2>
      ${attemptsTable(live)}
      ${jsonSection("Result", "result", live.hasResult, live.result, live.resultNote)}
      ${jsonSection("Progress", "progress", live.hasProgress, live.progress, live.progressNote)}
      <h2>Payload</h2>
      ${payloadSection(task)}
      ${editable ? html`<div ${drawnFor}>${editForm(ctx, task, refused)}</div>` : ""}
      ${liveNote(ctx, `${self}/live.json`, live.asOf, "the task above")}`,
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

/**
 * The attempts, oldest first: when each started, how long it waited and ran, how it ended and its
 * error. Drawn hidden when there is none yet, so that the live page can show the first.
 */
function attemptsTable(live: TaskLiveValues): Html {
  return html`<p class="note" data-attempts-none data-live-hide="hasHistory" data-live-text="noHistory" ${live.hasHistory ? "hidden" : ""}>${live.noHistory}</p>
    <div data-live-show="hasHistory" ${live.hasHistory ? "" : "hidden"}>
    <table class="attempts" data-attempts>
      <thead><tr><th class="num">#</th><th>started</th><th class="num">waited</th><th class="num">ran</th><th>outcome</th><th>error</th></tr></thead>
      <tbody data-live-rows="history">${rowsHtml(live.history)}</tbody>
    </table>
    <p class="note small">Oldest first; the queue keeps the newest attempts (historyAttempts) and the one that ended DONE. An edit of the payload is listed where it was made, its note in the error column.</p>
    </div>`;
}

/** A JSON value of the task (its result, its progress) pretty-printed; drawn hidden while it has none. */
function jsonSection(title: string, id: string, shown: boolean, text: string, note: string): Html {
  return html`<section data-live-show="has${title}" ${shown ? "" : "hidden"}><h2>${title}</h2>
    <p class="note" data-live-text="${id}Note">${note}</p>
    <pre id="${id}" data-live-text="${id}">${text}</pre></section>`;
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
