// The dashboard's pages, rendered on the server with Hono's `html` template: every interpolated
// value is escaped, so ids, types, errors and payloads always show as text. No inline script or
// style: the page script and style sheets are files under /assets/ (see assets.ts).
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { duration } from "../../shared/text.js";
import type { ItemResult, ListedTask, QueueHistory, QueueStats, TaskState } from "../../shared/types.js";
import { counted } from "../output.js";
import { clock, type LiveValues, liveValues } from "./live.js";
import { type LiveRow, timeHtml, timeValue } from "./live-rows.js";
import { partitionsTable } from "./partitions.js";
import { STATES } from "./queue.js";

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** What every page knows of the dashboard, queue or not. */
export interface SiteContext {
  /** Where the queues live, without secrets (describeConnection). */
  where: string;
  readOnly: boolean;
  csrf: string;
  /** The dashboard serves every queue of the store ("/" lists them), not one. */
  allQueues: boolean;
  /** How often an open overview, task page or groups page reads its values again (ms); 0: never (live.ts). */
  refreshMs: number;
}

/** A page of one queue. */
export interface PageContext extends SiteContext {
  queueName: string;
  /** Where the pages shown are: the queue's, /q/<segment> (queueBase), or one partition's, /q/<segment>/p/<k>. */
  base: string;
  /**
   * A queue of more than one partition (docs/partitions.md): their numbers, where the queue's
   * overview (their sum) is, and the partition these pages are of (undefined on that overview).
   */
  partitioned?: { partitions: readonly number[]; queueBase: string; partition?: number };
}

const isQueuePage = (ctx: SiteContext | PageContext): ctx is PageContext => "queueName" in ctx;

export function layout(
  ctx: SiteContext | PageContext,
  title: string,
  body: Html,
  options: { chart?: boolean } = {},
): Html {
  const queue = isQueuePage(ctx) ? ctx : undefined;
  const partitioned = queue?.partitioned;
  const partition = partitioned?.partition;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · leaseq${queue ? ` ${queue.queueName}` : ""}${partition === undefined ? "" : ` partition ${partition}`}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css">
${options.chart ? html`<link rel="stylesheet" href="/assets/uplot.css">` : ""}
</head>
<body>
<header>
  <strong>leaseq</strong>
  ${ctx.allQueues ? html`<a href="/" data-all-queues>All queues</a>` : ""}
  ${
    queue
      ? html`<span>queue <b data-queue>${queue.queueName}</b>${partitionLabel(partitioned)} on ${ctx.where}${ctx.readOnly ? html` · <span data-read-only>read-only</span>` : ""}</span>
  ${partitioned ? html`<a href="${partitioned.queueBase}/" data-nav-queue>All partitions</a>` : ""}
  ${
    partitioned && partition === undefined
      ? ""
      : html`<a href="${queue.base}/">Overview</a>
  ${STATES.map((state) => html`<a href="${queue.base}/tasks/${state}">${state}</a>`)}
  <a href="${queue.base}/groups" data-nav-groups>groups</a>
  <a href="${queue.base}/schedules" data-nav-schedules>schedules</a>`
  }
  <form method="get" action="${queue.base}/search" role="search">
    <input type="search" name="id" placeholder="task id" aria-label="task id" required>
    <button type="submit">Find</button>
  </form>`
      : html`<span>${ctx.allQueues ? "every queue" : "dashboard"} on ${ctx.where}${ctx.readOnly ? html` · <span data-read-only>read-only</span>` : ""}</span>`
  }
</header>
<main>
<h1>${title}</h1>
${body}
</main>
${options.chart ? html`<script src="/assets/uplot.js"></script>` : ""}
<script src="/assets/app.js"></script>
</body>
</html>`;
}

/** What the header says after a partitioned queue's name: which partition, or how many. */
function partitionLabel(partitioned: PageContext["partitioned"]): Html | string {
  if (!partitioned) return "";
  const count = partitioned.partitions.length;
  return partitioned.partition === undefined
    ? html` (<span data-partitions>${count} partitions</span>)`
    : html` <span data-partition="${partitioned.partition}">partition ${partitioned.partition}</span> of ${count}`;
}

/** The hidden fields every action form carries. */
export function csrfField(ctx: PageContext): Html {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrf}">`;
}

/** A time as shown: UTC to the second and how long ago (or until), ISO in its title. */
export function time(ms: number, now: number): Html {
  return timeHtml(timeValue(ms, now));
}

/**
 * The "as of" line of a page that updates while open (task, groups): where its script polls
 * (`url`, a live.json) and how often; "Reload to refresh" when the dashboard was told not to poll.
 */
export function liveNote(ctx: PageContext, url: string, asOf: string, what: string): Html {
  const line = html`As of <span data-live-text="asOf">${asOf}</span> UTC`;
  return ctx.refreshMs > 0
    ? html`<p class="note" data-live-url="${url}" data-refresh-ms="${ctx.refreshMs}">${line}; ${what} updates every ${ctx.refreshMs / 1000} s while this tab is shown<span data-live-status></span>.</p>`
    : html`<p class="note">${line}. Reload to refresh.</p>`;
}

/**
 * A queue's overview at `now`. With `partitions` (partitions.ts partitionRows), a partitioned
 * queue's: `stats` their sum, its counts leading to the table of the partitions, and no controls
 * (a partition is paused and resumed on its own page).
 */
export function overviewPage(
  ctx: PageContext,
  stats: QueueStats,
  history: QueueHistory,
  now: number,
  partitions?: LiveRow[],
) {
  // Drawn from the values live.json sends, into the elements the page script updates (live.ts).
  const live = liveValues(stats, now);
  const card = (state: TaskState, note: Html | string = "", shownBy?: keyof LiveValues) =>
    html`<div class="card"><a href="${partitions ? "#partitions" : `${ctx.base}/tasks/${state}`}"><span class="n" data-live-text="${state}" data-count="${state}">${live[state]}</span><span class="label">${state}</span></a>${note ? html`<div class="note" data-live-show="${shownBy}" ${shownBy && !live[shownBy] ? "hidden" : ""}>${note}</div>` : ""}</div>`;
  const hiddenWhen = (hidden: boolean) => (hidden ? "hidden" : "");
  const pauseStatus = html`<p class="state" data-live-set="paused pausedAny" data-paused="${String(live.paused)}" data-paused-any="${String(live.pausedAny)}">
          <span data-live-show="paused" ${hiddenWhen(!live.paused)}><b>The queue is paused</b>: workers claim nothing.</span>
          <span data-live-hide="paused" ${hiddenWhen(live.paused)}>The queue is running.</span>
          <span data-live-show="pausedTypes" ${hiddenWhen(!live.pausedTypes)}> Paused types: <b data-live-text="pausedTypes">${live.pausedTypes}</b>.</span>
        </p>`;
  // Both buttons are drawn, the one that does not apply hidden: the live values swap them when
  // the queue is paused or resumed elsewhere.
  const controls = ctx.readOnly
    ? ""
    : partitions
      ? html`<p class="note">Pause and resume the queue, or a task type, on each partition's page: a partition is paused on its own.</p>`
      : html`<div class="actions">
          <form method="post" action="${ctx.base}/action" class="inline">
            ${csrfField(ctx)}<input type="hidden" name="back" value="${ctx.base}/">
            <button id="resume-queue" name="action" value="resume" data-live-show="paused" ${hiddenWhen(!live.paused)} data-confirm="Resume the queue ${ctx.queueName}?">Resume queue</button>
            <button id="pause-queue" name="action" value="pause" class="danger" data-live-hide="paused" ${hiddenWhen(live.paused)} data-confirm="Pause the queue ${ctx.queueName}? Workers will claim nothing until it is resumed.">Pause queue</button>
          </form>
          <form method="post" action="${ctx.base}/action" class="inline">
            ${csrfField(ctx)}<input type="hidden" name="back" value="${ctx.base}/">
            <input type="text" name="type" placeholder="task type" aria-label="task type" required>
            <button name="action" value="pause" data-confirm="Pause this task type?">Pause type</button>
            <button name="action" value="resume" data-confirm="Resume this task type?">Resume type</button>
          </form>
        </div>`;
  const chart = html`<div id="history-chart" data-history="${JSON.stringify(history)}"></div>
    <p class="note">Last hour: ${sum(history.done)} done, ${sum(history.failed)} failed (as the page was loaded).</p>`;
  const asOf = html`As of <span data-live-text="asOf">${live.asOf}</span> UTC`;
  const freshness =
    ctx.refreshMs > 0
      ? html`<p class="note" data-live-url="${ctx.base}/live.json" data-refresh-ms="${ctx.refreshMs}">${asOf}; the numbers above update every ${ctx.refreshMs / 1000} s while this tab is shown<span data-live-status></span>.</p>`
      : html`<p class="note">${asOf}. Reload to refresh.</p>`;
  return layout(
    ctx,
    "Overview",
    html`<div class="cards">
        ${card("ready", html`oldest waiting <span data-oldest-ready data-live-text="oldestReady">${live.oldestReady}</span>`, "oldestReady")}
        ${card("scheduled", html`<span data-live-text="dueScheduled">${live.dueScheduled}</span> due`, "dueScheduled")}
        ${card("leased", html`<span class="warn">most overdue <span data-overdue data-live-text="mostOverdue">${live.mostOverdue}</span></span>`, "mostOverdue")}
        ${card("done")}
        ${card("failed")}
        ${card("corrupt", html`<span class="warn">records that cannot be read</span>`, "corrupt")}
      </div>
      ${partitions ? partitionsTable(partitions) : ""}
      <h2>State</h2>
      ${pauseStatus}
      ${controls}
      <h2>Done and failed per minute</h2>
      ${chart}
      ${freshness}`,
    { chart: history !== undefined },
  );
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** What a listed task's score means in each state. */
const SCORE_LABEL: Record<TaskState, string> = {
  ready: "rank",
  scheduled: "due",
  leased: "lease until",
  done: "finished",
  failed: "failed",
  corrupt: "set aside",
};

/** Actions offered on tasks in each state (requeue: FAILED; cancel: not yet finished; delete: not leased). */
export function actionsFor(state: TaskState): Array<"requeue" | "cancel" | "delete"> {
  const actions: Array<"requeue" | "cancel" | "delete"> = [];
  if (state === "failed") actions.push("requeue");
  if (state === "ready" || state === "scheduled" || state === "leased") actions.push("cancel");
  if (state !== "leased") actions.push("delete");
  return actions;
}

/** The label of each task action's button. */
export const ACTION_LABEL = { requeue: "Requeue", cancel: "Cancel", delete: "Delete", skip: "Skip" };

export interface ListFilter {
  type?: string;
  /** The task's group, exactly (the groups page links its groups' tasks so). */
  group?: string;
  error?: string;
  olderThan?: string;
}

export interface ListView {
  state: TaskState;
  tasks: ListedTask[];
  filter: ListFilter;
  filtered: boolean;
  /** Unfiltered: the offset of this page; filtered: the cursor it started at. */
  offset: number;
  limit: number;
  /** The link to the next page, if any. */
  nextHref: string | undefined;
  prevHref: string | undefined;
  total: number;
  now: number;
  /** The current page's address, to come back to after an action. */
  self: string;
}

export function listPage(ctx: PageContext, view: ListView) {
  const { state, tasks, filter, now } = view;
  const actions = ctx.readOnly ? [] : actionsFor(state);
  const scoreCell = (task: ListedTask) => (state === "ready" ? String(task.score) : time(task.score, now));
  const filterFields = html`<input type="hidden" name="state" value="${state}">
    <input type="hidden" name="type" value="${filter.type ?? ""}">
    <input type="hidden" name="group" value="${filter.group ?? ""}">
    <input type="hidden" name="error" value="${filter.error ?? ""}">
    <input type="hidden" name="olderThan" value="${filter.olderThan ?? ""}">`;
  const rows = tasks.map(
    (task) => html`<tr data-id="${task.id}">
      ${actions.length > 0 ? html`<td><input type="checkbox" name="ids" value="${task.id}" aria-label="select ${task.id}"></td>` : ""}
      <td><a href="${ctx.base}/task/${encodeURIComponent(task.id)}">${task.id}</a></td>
      <td>${task.type}</td>
      <td>${task.attempts}</td>
      <td>${scoreCell(task)}</td>
      <td class="error">${task.lastError}</td>
    </tr>`,
  );
  const description = view.filtered
    ? html`${tasks.length} matching of the entries from ${view.offset} on (of ${view.total} ${state}).`
    : html`Tasks ${tasks.length === 0 ? 0 : view.offset + 1}–${view.offset + tasks.length} of ${view.total} ${state}.`;
  return layout(
    ctx,
    `Tasks ${state}`,
    html`<form method="get" action="${ctx.base}/tasks/${state}" class="filters">
        <label>type <input type="text" name="type" value="${filter.type ?? ""}"></label>
        <label>group <input type="text" name="group" value="${filter.group ?? ""}"></label>
        <label>error contains <input type="text" name="error" value="${filter.error ?? ""}"></label>
        ${
          state === "ready" || state === "leased"
            ? ""
            : html`<label>${state === "scheduled" ? "overdue by more than" : "older than"} <input type="text" name="olderThan" value="${filter.olderThan ?? ""}" placeholder="e.g. 5m, 2h, 1d"></label>`
        }
        <button type="submit">Filter</button>
        ${view.filtered ? html`<a href="${ctx.base}/tasks/${state}">clear</a>` : ""}
      </form>
      <p class="note" data-list-summary>${description}</p>
      ${actions.length > 0 ? html`<form method="post" action="${ctx.base}/action">${csrfField(ctx)}<input type="hidden" name="back" value="${view.self}"><input type="hidden" name="state" value="${state}">` : ""}
        ${
          actions.length > 0
            ? html`<div class="actions">selected:
              ${actions.map((action) => html`<button name="action" value="${action}" ${action === "delete" ? html`class="danger"` : ""} data-confirm="${ACTION_LABEL[action]} the selected tasks?">${ACTION_LABEL[action]} selected</button>`)}
            </div>`
            : ""
        }
        <table>
          <thead><tr>${actions.length > 0 ? html`<th><input type="checkbox" data-select-all aria-label="select all"></th>` : ""}<th>id</th><th>type</th><th>attempts</th><th>${SCORE_LABEL[state]}</th><th>last error</th></tr></thead>
          <tbody>${rows}</tbody>
        </table>
      ${actions.length > 0 ? html`</form>` : ""}
      <div class="pager">
        ${view.prevHref ? html`<a href="${view.prevHref}" rel="prev">← previous</a>` : ""}
        ${view.nextHref ? html`<a href="${view.nextHref}" rel="next">next →</a>` : ""}
      </div>
      ${
        actions.length > 0
          ? html`<form method="post" action="${ctx.base}/action" class="actions">
            ${csrfField(ctx)}<input type="hidden" name="back" value="${view.self}">
            ${filterFields}<input type="hidden" name="scope" value="matching">
            all ${state} tasks ${view.filtered ? "matching this filter" : ""}:
            ${actions.map((action) => html`<button name="action" value="${action}" class="danger" data-confirm="${ACTION_LABEL[action]} ALL ${state} tasks${view.filtered ? " matching the filter" : ""}?">${ACTION_LABEL[action]} all</button>`)}
          </form>`
          : ""
      }`,
  );
}

export function resultPage(ctx: PageContext, title: string, summary: string, results: ItemResult[], back: string) {
  const counts = new Map<string, number>();
  for (const result of results) counts.set(result.status, (counts.get(result.status) ?? 0) + 1);
  return layout(
    ctx,
    title,
    html`<p class="flash" data-result>${summary}${results.length > 0 ? html` — ${[...counts].map(([status, n], i) => html`${i > 0 ? ", " : ""}<b data-status="${status}">${n}</b> ${status}`)}` : ""}</p>
      <p><a href="${back}" data-back>← back</a></p>
      ${
        results.length > 0
          ? html`<table><thead><tr><th>id</th><th>status</th></tr></thead><tbody>
            ${results.slice(0, 1000).map((result) => html`<tr><td><a href="${ctx.base}/task/${encodeURIComponent(result.id)}">${result.id}</a></td><td>${result.status}</td></tr>`)}
          </tbody></table>${results.length > 1000 ? html`<p class="note">(first 1000 of ${results.length} shown)</p>` : ""}`
          : ""
      }`,
  );
}

/** A page saying `message`, with `links` (paths on this dashboard) and one back to the overview. */
export function messagePage(
  ctx: SiteContext | PageContext,
  title: string,
  message: string,
  links: ReadonlyArray<{ href: string; text: string }> = [],
) {
  const home = isQueuePage(ctx) ? `${ctx.base}/` : "/";
  return layout(
    ctx,
    title,
    html`<p data-message>${message}</p>${links.length > 0 ? html`<ul data-links>${links.map((link) => html`<li><a href="${link.href}">${link.text}</a></li>`)}</ul>` : ""}<p><a href="${home}">← overview</a></p>`,
  );
}

/** A queue's line on the all-queues overview. */
export interface QueueRow {
  name: string;
  /** Where its pages are (queueBase). */
  base: string;
  /** How many partitions it has (docs/partitions.md): `stats` and `history` are their sums. */
  partitions: number;
  stats?: QueueStats;
  history?: QueueHistory;
  /** Why its stats could not be read (redacted). */
  error?: string;
}

export interface QueuesView {
  rows: QueueRow[];
  /** How many queues the store has. */
  found: number;
  /** How many of them match the name filter. */
  matching: number;
  /** How many of those were read (the rest are past the cap of queues read per page). */
  read: number;
  /** Most rows shown: the busiest. */
  shownMax: number;
  /** The name filter (a substring), "" for none. */
  filter: string;
  now: number;
}

/** The overview of every queue: one line each with its counts, pausing and last hour. */
export function queuesPage(ctx: SiteContext, view: QueuesView) {
  const { rows, now } = view;
  const count = (row: QueueRow, state: TaskState, note: Html | string = "") =>
    html`<td class="num"><a href="${row.partitions > 1 ? `${row.base}/#partitions` : `${row.base}/tasks/${state}`}" data-count="${state}">${row.stats?.[state] ?? ""}</a>${note ? html`<div class="note small">${note}</div>` : ""}</td>`;
  const state = (stats: QueueStats) => {
    const types = stats.pausedTypes;
    const typesNote =
      types.length > 0
        ? html`<div class="small">types paused: ${types.map((type, i) => html`${i > 0 ? ", " : ""}<b data-paused-type>${type}</b>`)}</div>`
        : "";
    return stats.paused
      ? html`<td data-paused="true"><span class="badge paused">paused</span>${typesNote}</td>`
      : html`<td data-paused="false"><span class="note">running</span>${typesNote}</td>`;
  };
  const line = (row: QueueRow) => {
    const link = html`<a href="${row.base}/" data-queue-link>${row.name}</a>${row.partitions > 1 ? html`<div class="note small" data-partitions="${row.partitions}">${row.partitions} partitions</div>` : ""}`;
    if (!row.stats) {
      return html`<tr data-queue-row="${row.name}"><td>${link}</td><td colspan="8" class="error">${row.error ?? "unreadable"}</td></tr>`;
    }
    const stats = row.stats;
    const history = row.history;
    return html`<tr data-queue-row="${row.name}">
      <td class="name">${link}</td>
      ${count(row, "ready", stats.ready > 0 ? html`oldest <span data-oldest-ready>${duration(stats.oldestReadyAgeMs)}</span>` : "")}
      ${count(row, "scheduled", stats.dueScheduled > 0 ? `${stats.dueScheduled} due` : "")}
      ${count(row, "leased", stats.mostOverdueLeaseMs > 0 ? html`<span class="warn">overdue <span data-overdue>${duration(stats.mostOverdueLeaseMs)}</span></span>` : "")}
      ${count(row, "done")}
      ${count(row, "failed")}
      ${count(row, "corrupt", stats.corrupt > 0 ? html`<span class="warn">unreadable</span>` : "")}
      ${state(stats)}
      <td class="hour">${
        history
          ? html`<div class="spark" data-spark="${JSON.stringify(history)}"></div><div class="small"><span data-hour-done>${sum(history.done)}</span> done · <span data-hour-failed>${sum(history.failed)}</span> failed</div>`
          : html`<span class="note small">no history</span>`
      }</td>
    </tr>`;
  };
  const shown = rows.length;
  const summary =
    view.found === 0
      ? html`No leaseq queue on this backend yet.`
      : shown < view.matching
        ? html`Showing the <b>${shown} busiest</b> of ${view.matching} queues${view.filter ? " matching the filter" : ""} (by their tasks, all states together)${view.read < view.matching ? `; only the first ${view.read} by name were read` : ""}. Filter by name to see the others.`
        : html`${counted(view.matching, "queue")}${view.filter ? ` matching "${view.filter}" of ${view.found}` : ""}.`;
  return layout(
    ctx,
    "All queues",
    html`${nameFilter({ action: "/", label: "name contains", name: "name", value: view.filter, maxLength: 64 })}
      <p class="note" data-queues-summary>${summary}</p>
      ${
        shown > 0
          ? html`<table class="queues">
          <thead><tr><th>queue</th><th class="num">ready</th><th class="num">scheduled</th><th class="num">leased</th><th class="num">done</th><th class="num">failed</th><th class="num">corrupt</th><th>state</th><th>last hour: <span class="done-key">done</span> and <span class="failed-key">failed</span> per minute</th></tr></thead>
          <tbody>${rows.map(line)}</tbody>
        </table>`
          : ""
      }
      <p class="note">As of ${clock(now)} UTC. Reload to refresh.</p>`,
    { chart: rows.some((row) => row.history !== undefined) },
  );
}

/** A page's filter by name (the queues', the groups'): one text field, a Filter button, and a clear link while one is set. */
export function nameFilter(field: { action: string; label: string; name: string; value: string; maxLength: number }) {
  return html`<form method="get" action="${field.action}" class="filters">
        <label>${field.label} <input type="text" name="${field.name}" value="${field.value}" maxlength="${field.maxLength}"></label>
        <button type="submit">Filter</button>
        ${field.value ? html`<a href="${field.action}">clear</a>` : ""}
      </form>`;
}
