// The files the dashboard serves besides its pages: uPlot's script and style sheet, read from where
// npm installed the `uplot` package, and the dashboard's own small script and style sheet (served
// as files: the Content-Security-Policy allows no inline script or style).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

export interface Asset {
  type: string;
  body: string;
}

const require = createRequire(import.meta.url);

/**
 * The page script: confirmations of actions, "select all", the chart of a queue and those of every
 * queue, and the live values of a queue's overview (live.ts), a task's page (task-live.ts) and the
 * groups page (groups.ts): one request at a time, every data-refresh-ms while the tab is shown,
 * none while it is hidden, written with textContent only; table rows (live-rows.ts) are built
 * with DOM methods, never from markup.
 */
const APP_JS = `"use strict";
document.addEventListener("submit", function (event) {
  var button = event.submitter;
  var message = (button && button.dataset.confirm) || event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});
document.addEventListener("change", function (event) {
  var box = event.target;
  if (!box.matches || !box.matches("input[data-select-all]")) return;
  box.form.querySelectorAll('input[name="ids"]').forEach(function (each) { each.checked = box.checked; });
});
function drawHistory() {
  var el = document.getElementById("history-chart");
  if (!el || !window.uPlot) return;
  var history = JSON.parse(el.dataset.history);
  var xs = history.done.map(function (_, i) { return (history.startMs + i * history.bucketMs) / 1000; });
  var options = {
    width: Math.max(320, el.clientWidth || 800),
    height: 220,
    scales: { x: { time: true } },
    series: [
      {},
      { label: "done / min", stroke: "#2f7d32", width: 2, fill: "rgba(47,125,50,0.08)" },
      { label: "failed / min", stroke: "#c62828", width: 2 }
    ],
    axes: [{}, { label: "tasks per minute" }]
  };
  new window.uPlot(options, [xs, history.done, history.failed], el);
  el.dataset.drawn = "true";
}
drawHistory();
function drawSparks() {
  if (!window.uPlot) return;
  document.querySelectorAll("[data-spark]").forEach(function (el) {
    var history = JSON.parse(el.dataset.spark);
    var xs = history.done.map(function (_, i) { return (history.startMs + i * history.bucketMs) / 1000; });
    var top = Math.max(1, Math.max.apply(null, history.done.concat(history.failed)));
    // A little room below 0 and above the top, so that a line at either is not cut by the edge.
    new window.uPlot({
      width: 240,
      height: 46,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: true }, y: { range: [-0.06 * top, 1.08 * top] } },
      axes: [{ show: false }, { show: false }],
      series: [
        {},
        { stroke: "#2f7d32", width: 1.5, fill: "rgba(47,125,50,0.12)", points: { show: false } },
        { stroke: "#c62828", width: 1.5, points: { show: false } }
      ]
    }, [xs, history.done, history.failed], el);
    el.dataset.drawn = "true";
  });
}
drawSparks();
function followLive() {
  var source = document.querySelector("[data-live-url]");
  var everyMs = source ? Number(source.dataset.refreshMs) : 0;
  if (!(everyMs > 0)) return;
  var status = source.querySelector("[data-live-status]");
  var timer = null;
  var inFlight = false;
  // Set by an answer that asking again cannot change (401: no valid token; 404: no such queue).
  var stopped = false;
  function apply(values) {
    document.querySelectorAll("[data-live-text]").forEach(function (el) {
      var value = values[el.dataset.liveText];
      if (value !== undefined) el.textContent = String(value);
    });
    document.querySelectorAll("[data-live-show]").forEach(function (el) { el.hidden = !values[el.dataset.liveShow]; });
    document.querySelectorAll("[data-live-hide]").forEach(function (el) { el.hidden = !!values[el.dataset.liveHide]; });
    // data-live-set="a bC": the element's data-a and data-b-c attributes (which the style sheet reads).
    document.querySelectorAll("[data-live-set]").forEach(function (el) {
      el.dataset.liveSet.split(" ").forEach(function (name) { el.dataset[name] = String(values[name]); });
    });
    document.querySelectorAll("[data-live-href]").forEach(function (el) {
      var href = values[el.dataset.liveHref];
      if (typeof href === "string" && isLocal(href)) el.setAttribute("href", href);
    });
    document.querySelectorAll("[data-live-time]").forEach(function (el) {
      var value = values[el.dataset.liveTime];
      if (value) el.replaceChildren(timeOf(value));
    });
    // The page's actions apply to what it was drawn for (data-drawn-as): hidden once that changes.
    document.querySelectorAll("[data-live-same]").forEach(function (el) { el.hidden = values[el.dataset.liveSame] !== el.dataset.drawnAs; });
    document.querySelectorAll("[data-live-changed]").forEach(function (el) { el.hidden = values[el.dataset.liveChanged] === el.dataset.drawnAs; });
    document.querySelectorAll("[data-live-rows]").forEach(function (el) {
      var rows = values[el.dataset.liveRows];
      if (Array.isArray(rows)) el.replaceChildren.apply(el, rows.map(rowOf));
    });
  }
  // A path on this dashboard, nothing else (no scheme, no other host).
  function isLocal(href) { return href.charAt(0) === "/" && href.charAt(1) !== "/" && href.charAt(1) !== "\\\\"; }
  function element(tag, className, text) {
    var el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }
  function timeOf(value) {
    if (!value.iso) return element("span", "note", value.text);
    var el = element("time", "", value.text);
    el.setAttribute("datetime", value.iso);
    el.title = value.iso;
    return el;
  }
  // A row of live-rows.ts's LiveRow, built as rowsHtml draws it, every value as text.
  function rowOf(row) {
    var tr = document.createElement("tr");
    Object.keys(row.data).forEach(function (name) { tr.dataset[name] = row.data[name]; });
    row.cells.forEach(function (cell) {
      var td = element(cell.header ? "th" : "td", cell.className);
      if (cell.field) td.dataset.field = cell.field;
      if (cell.flag) td.dataset[cell.flag] = "";
      if (cell.folded !== undefined) {
        var details = element("details");
        details.append(element("summary", "", cell.text + " \u2026"), element("pre", "", cell.folded));
        td.append(details);
      } else if (cell.iso !== undefined) {
        td.append(timeOf(cell));
      } else if (cell.href !== undefined && isLocal(cell.href)) {
        var link = element("a", cell.linkClass, cell.text);
        link.setAttribute("href", cell.href);
        if (cell.linkFlag) link.dataset[cell.linkFlag] = "";
        td.append(link);
      } else if (cell.spanClass !== undefined) {
        td.append(element("span", cell.spanClass, cell.text));
      } else {
        td.textContent = cell.text;
      }
      tr.append(td);
    });
    return tr;
  }
  function poll() {
    timer = null;
    if (document.hidden || inFlight || stopped) return;
    inFlight = true;
    fetch(source.dataset.liveUrl, { headers: { accept: "application/json" }, cache: "no-store" })
      .then(function (response) {
        if (response.status === 401 || response.status === 404) stopped = true;
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (values) {
        apply(values);
        if (status) status.textContent = "";
      }, function (error) {
        if (status) {
          status.textContent = stopped
            ? " (updates stopped: " + error.message + "; reload the page)"
            : " (the last update failed: " + error.message + "; retrying)";
        }
      })
      .then(function () {
        inFlight = false;
        schedule();
      });
  }
  function schedule() {
    if (!document.hidden && timer === null && !inFlight && !stopped) timer = setTimeout(poll, everyMs);
  }
  // A hidden tab asks nothing; shown again, it reads at once (its numbers are old by then).
  document.addEventListener("visibilitychange", function () {
    clearTimeout(timer);
    timer = null;
    if (!document.hidden) poll();
  });
  schedule();
}
followLive();
`;

const APP_CSS = `
:root { font-family: system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
body { margin: 0; }
[hidden] { display: none !important; }
header { background: #1d2330; color: #fff; padding: 10px 20px; display: flex; gap: 8px 16px; align-items: center; flex-wrap: wrap; }
header a { color: #cfe0ff; text-decoration: none; }
header strong { font-size: 1.1em; }
header form { margin-left: auto; }
main { padding: 16px 20px; max-width: 1200px; }
h1 { font-size: 1.3em; margin: 0.3em 0 0.6em; }
h2 { font-size: 1.1em; margin: 1.2em 0 0.5em; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 10px 16px; min-width: 110px; }
.card a { color: inherit; text-decoration: none; }
.card .n { font-size: 1.8em; font-weight: 600; display: block; }
.card .label { color: #5a6475; }
.note { color: #5a6475; }
.warn { color: #a15c00; }
.paused, .state[data-paused-any=true] { background: #fff3e0; border: 1px solid #f0b46a; padding: 8px 12px; border-radius: 6px; }
.state[data-paused-any=false] { color: #5a6475; }
.flash { background: #e8f5e9; border: 1px solid #9ccc9f; padding: 8px 12px; border-radius: 6px; }
table { border-collapse: collapse; background: #fff; width: 100%; }
th, td { border-bottom: 1px solid #e3e6ea; padding: 5px 8px; text-align: left; vertical-align: top; font-size: 0.93em; }
td.error { max-width: 420px; overflow-wrap: anywhere; color: #8a1c1c; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: #fff; padding: 12px; border: 1px solid #dde1e7; border-radius: 6px; }
dt { color: #5a6475; }
dd { margin: 0; overflow-wrap: anywhere; }
pre { background: #fff; border: 1px solid #dde1e7; padding: 10px; overflow: auto; max-height: 480px; white-space: pre-wrap; overflow-wrap: anywhere; }
form.inline { display: inline; }
.actions { display: flex; gap: 8px; flex-wrap: wrap; margin: 10px 0; align-items: center; }
button { cursor: pointer; padding: 4px 10px; }
button.danger { color: #a11; }
input[type=text], input[type=search], select { padding: 3px 6px; }
.filters { display: flex; gap: 10px; flex-wrap: wrap; align-items: end; margin-bottom: 10px; }
.filters label { display: flex; flex-direction: column; font-size: 0.85em; color: #5a6475; }
#history-chart { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 8px; }
.pager { margin: 10px 0; display: flex; gap: 14px; }
table.queues td { vertical-align: middle; }
table.queues td.name { font-weight: 600; overflow-wrap: anywhere; max-width: 260px; }
th.num, td.num { text-align: right; }
td.num a { color: inherit; text-decoration: none; font-variant-numeric: tabular-nums; }
td.num a:hover, td.name a:hover { text-decoration: underline; }
td.hour { width: 250px; }
.small { font-size: 0.82em; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 0.85em; font-weight: 600; }
.badge.paused { background: #fff3e0; border: 1px solid #f0b46a; color: #8a4b00; }
.badge.aside { background: #fdecea; border: 1px solid #e57373; color: #8a1c1c; }
.spark { height: 46px; }
.done-key { color: #2f7d32; font-weight: 600; }
.failed-key { color: #c62828; font-weight: 600; }
table.attempts td.error, table.attempts td.note { max-width: 560px; }
table.attempts pre { margin: 4px 0 0; max-height: 320px; color: #8a1c1c; }
table.attempts summary { cursor: pointer; }
.outcome { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 0.85em; font-weight: 600; background: #eef0f3; color: #3c4656; }
.outcome.done { background: #e8f5e9; color: #2f6b32; }
.outcome.failed, .outcome.expired { background: #fdecea; color: #8a1c1c; }
.outcome.retried { background: #fff3e0; color: #8a4b00; }
.outcome.edited { background: #e3ecfb; color: #24467a; }
details.edit { margin: 12px 0; background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 8px 12px; }
details.edit summary { cursor: pointer; font-weight: 600; }
details.edit textarea { width: 100%; box-sizing: border-box; font-family: ui-monospace, monospace; font-size: 0.9em; }
`;

function fromPackage(specifier: string): () => string {
  let cached: string | undefined;
  return () => {
    cached ??= readFileSync(require.resolve(specifier), "utf8");
    return cached;
  };
}

const uplotJs = fromPackage("uplot/dist/uPlot.iife.min.js");
const uplotCss = fromPackage("uplot/dist/uPlot.min.css");

/** The served assets by file name (under /assets/). */
export const ASSETS: Record<string, () => Asset> = {
  "uplot.js": () => ({ type: "text/javascript; charset=utf-8", body: uplotJs() }),
  "uplot.css": () => ({ type: "text/css; charset=utf-8", body: uplotCss() }),
  "app.js": () => ({ type: "text/javascript; charset=utf-8", body: APP_JS }),
  "app.css": () => ({ type: "text/css; charset=utf-8", body: APP_CSS }),
};
