// Table rows a live page redraws (docs/dashboard.md, "Live updates"): the task page's attempts, the
// groups page's groups. A row is declared once, as data: the server draws the page's first rows
// from it (rowsHtml, Hono's `html` escaping every value) and live.json sends the same data, from
// which the page script builds the rows with DOM methods and textContent only. Nothing in a row is
// markup: an error, a group name, whatever Redis holds, stays text either way.
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { duration } from "../../shared/text.js";
import { clock } from "./live.js";

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** A time as the pages show it: UTC to the second and how long ago (or until); no `iso` when none. */
export interface TimeValue {
  text: string;
  /** The ISO time (a <time>'s datetime and title); undefined: no time, shown as "–". */
  iso?: string;
}

/** `ms` as shown at `now`; "–" for no time (0, or not finite). */
export function timeValue(ms: number, now: number): TimeValue {
  if (!Number.isFinite(ms) || ms <= 0) return { text: "–" };
  const delta = now - ms;
  const relative = delta >= 0 ? `${duration(delta)} ago` : `in ${duration(-delta)}`;
  return { text: `${clock(ms)} (${relative})`, iso: new Date(ms).toISOString() };
}

/** A time value as markup: a <time>, or a "–" note when there is none. */
export function timeHtml(value: TimeValue): Html {
  return value.iso === undefined
    ? html`<span class="note">${value.text}</span>`
    : html`<time datetime="${value.iso}" title="${value.iso}">${value.text}</time>`;
}

/** One cell: its text, and how it is wrapped. Every name here is the server's, never data. */
export interface LiveCell {
  text: string;
  /** A header cell (<th>). */
  header?: boolean;
  /** The cell's class. */
  className?: string;
  /** Its data-field attribute (what tests and users find it by). */
  field?: string;
  /** A bare data attribute of the cell, as a dataset name ("error": data-error). */
  flag?: string;
  /** The text is a link to this path on the dashboard (it starts with "/"). */
  href?: string;
  /** The link's class. */
  linkClass?: string;
  /** A bare data attribute of the link, as a dataset name ("groupLink": data-group-link). */
  linkFlag?: string;
  /** The text is in a <span> of this class. */
  spanClass?: string;
  /** The text is a time: in a <time> with this ISO datetime. */
  iso?: string;
  /** The text is the first line of this longer text: folded, all of it in a <pre> a click away. */
  folded?: string;
}

/** One row: its data attributes (by dataset name) and cells. */
export interface LiveRow {
  data: Record<string, string>;
  cells: LiveCell[];
}

/** "groupRow" -> "group-row": a dataset name as its attribute's. */
const kebab = (name: string) => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

function cellContent(cell: LiveCell): Html | string {
  if (cell.folded !== undefined)
    return html`<details><summary>${cell.text} …</summary><pre>${cell.folded}</pre></details>`;
  if (cell.iso !== undefined) return html`<time datetime="${cell.iso}" title="${cell.iso}">${cell.text}</time>`;
  if (cell.href !== undefined) {
    return html`<a${cell.linkClass ? html` class="${cell.linkClass}"` : ""} href="${cell.href}"${cell.linkFlag ? html` data-${kebab(cell.linkFlag)}` : ""}>${cell.text}</a>`;
  }
  if (cell.spanClass !== undefined) return html`<span class="${cell.spanClass}">${cell.text}</span>`;
  return cell.text;
}

/** The rows as markup, as the page script builds them from the same data. */
export function rowsHtml(rows: LiveRow[]): Html[] {
  return rows.map((row) => {
    const data = Object.entries(row.data).map(([name, value]) => html` data-${kebab(name)}="${value}"`);
    const cells = row.cells.map((cell) => {
      const tag = cell.header ? "th" : "td";
      return html`<${tag}${cell.className ? html` class="${cell.className}"` : ""}${cell.field ? html` data-field="${cell.field}"` : ""}${cell.flag ? html` data-${kebab(cell.flag)}` : ""}>${cellContent(cell)}</${tag}>`;
    });
    return html`<tr${data}>${cells}</tr>`;
  });
}
