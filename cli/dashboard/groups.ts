// The dashboard's groups page (docs/dashboard.md, "Groups"): a queue's groups (its tenants,
// customers, accounts: docs/groups.md) with what waits, what is parked behind the group's limits and
// what runs, the stuck first. The groups hash is read in pages (queue.admin.groups, one HSCAN step
// each), at most GROUPS_READ_PAGES per view, and filtered by name on the server; a link reads on
// from where a view stopped. Group names come from Redis and are input: Hono's `html` template
// escapes them, and every link encodes them; the live page builds its rows from the same values
// with textContent (live-rows.ts).
import { html } from "hono/html";
import { duration } from "../../shared/text.js";
import type { GroupStats } from "../../shared/types.js";
import { stuckFirst } from "../group-order.js";
import { counted } from "../output.js";
import { clock } from "./live.js";
import { type LiveRow, rowsHtml } from "./live-rows.js";
import { layout, liveNote, nameFilter, type PageContext } from "./pages.js";
import type { DashboardQueue } from "./queue.js";

/** About how many groups one read of the groups hash returns (HSCAN's COUNT). */
export const GROUPS_PAGE_COUNT = 1000;

/** Most reads of the groups hash one view makes; then it stops and offers to read on. */
export const GROUPS_READ_PAGES = 10;

/** Most groups one view shows, the stuck first. */
export const GROUPS_SHOWN_MAX = 500;

/** Longest name filter read (a group is at most 128 characters). */
const FILTER_MAX = 128;

/** A group as the page shows it. */
export type GroupRow = GroupStats;

export interface GroupsView {
  /** The groups shown: those read that match the filter, the stuck first, at most GROUPS_SHOWN_MAX. */
  groups: GroupRow[];
  /** How many groups read match the filter. */
  matching: number;
  /** How many groups were read. */
  read: number;
  /** How many reads of the groups hash this view made. */
  pages: number;
  /** The name filter (a substring, any case), "" for none. */
  filter: string;
  /** Where this view started reading ("0": the start). */
  cursor: string;
  /** Where to read on from, when the view stopped before the end of the hash. */
  next: string | undefined;
}

/** The name filter of a request's `?group=`: trimmed, at most FILTER_MAX characters. */
export function groupFilterOf(value: string | undefined): string {
  return (value ?? "").trim().slice(0, FILTER_MAX);
}

/**
 * Reads the queue's groups from `cursor` (a cursor queue.admin.groups returned; it throws
 * InvalidInputError for anything else) in at most `readsMax` reads (GROUPS_READ_PAGES; the live
 * page's poll: 1), and keeps those whose
 * name contains `filter` (any case).
 */
export async function readGroups(
  queue: Pick<DashboardQueue, "admin">,
  filter: string,
  cursor: string,
  readsMax = GROUPS_READ_PAGES,
): Promise<GroupsView> {
  const needle = filter.toLowerCase();
  const matching: GroupRow[] = [];
  let read = 0;
  let pages = 0;
  let next: string | undefined = cursor;
  while (next !== undefined && pages < readsMax) {
    const page: { groups: GroupRow[]; next: string | undefined } = await queue.admin.groups({
      cursor: next,
      count: GROUPS_PAGE_COUNT,
    });
    pages++;
    read += page.groups.length;
    for (const group of page.groups) if (group.group.toLowerCase().includes(needle)) matching.push(group);
    next = page.next;
  }
  matching.sort(stuckFirst);
  return {
    groups: matching.slice(0, GROUPS_SHOWN_MAX),
    matching: matching.length,
    read,
    pages,
    filter,
    cursor,
    next,
  };
}

/** The groups page's live values (the page is drawn from them; its script polls them). */
export interface GroupsLiveValues {
  /** The header row (the oldest waiting column shows when a group has parked tasks). */
  head: LiveRow[];
  rows: LiveRow[];
  hasRows: boolean;
  summary: string;
  /** Where to read on from, "" when the view read to the end (drawn at load only: a view that reads on does not update). */
  readOn: string;
  asOf: string;
}

/** The values of `view` at `now`. */
export function groupsLiveValues(ctx: PageContext, view: GroupsView, now: number): GroupsLiveValues {
  const { groups } = view;
  // The column shows when a group has parked tasks (their age: GroupStats.oldestWaitingAgeMs).
  const withAge = groups.some((group) => group.oldestWaitingAgeMs !== undefined);
  const tasksOf = (state: "ready" | "leased", group: GroupRow) =>
    `${ctx.base}/tasks/${state}?${new URLSearchParams({ type: group.type, group: group.group })}`;
  const row = (group: GroupRow): LiveRow => ({
    data: { groupRow: "" },
    cells: [
      { text: group.type, field: "type" },
      { text: group.group, field: "group", href: tasksOf("ready", group), linkFlag: "groupLink" },
      { text: String(group.ready), className: "num", field: "ready" },
      group.parked > 0
        ? { text: String(group.parked), className: "num", field: "parked", spanClass: "warn" }
        : { text: String(group.parked), className: "num", field: "parked" },
      group.leased > 0
        ? { text: String(group.leased), className: "num", field: "leased", href: tasksOf("leased", group) }
        : { text: String(group.leased), className: "num", field: "leased" },
      group.heldBy === undefined
        ? { text: "", field: "heldBy" }
        : {
            text: group.heldBy,
            field: "heldBy",
            href: `${ctx.base}/task/${encodeURIComponent(group.heldBy)}`,
            linkClass: "warn",
          },
      ...(withAge
        ? [
            {
              text: group.oldestWaitingAgeMs !== undefined ? duration(group.oldestWaitingAgeMs) : "",
              className: "num",
              field: "oldestWaiting",
            },
          ]
        : []),
    ],
  });
  const headers = ["type", "group", "waiting", "parked", "running", "held by", ...(withAge ? ["oldest waiting"] : [])];
  const numeric = new Set(["waiting", "parked", "running", "oldest waiting"]);
  const head: LiveRow = {
    data: {},
    cells: headers.map((text) =>
      numeric.has(text) ? { text, header: true, className: "num" } : { text, header: true },
    ),
  };
  const from = view.cursor === "0" ? "" : " from where the last view stopped";
  const extent =
    view.next === undefined
      ? `${counted(view.read, "group")} with work read${from}, in ${counted(view.pages, "read")} of the groups hash (to its end)`
      : `${counted(view.read, "group")} with work read${from}, in ${counted(view.pages, "read")} of the groups hash, the most one view makes; more follow`;
  const shown =
    view.matching > groups.length ? `; showing the ${groups.length} most stuck of the ${view.matching} that match` : "";
  const matched = view.filter ? `; ${view.matching} of them contain "${view.filter}"` : "";
  return {
    head: [head],
    rows: groups.map(row),
    hasRows: groups.length > 0,
    summary: `${extent}${matched}${shown}.`,
    readOn:
      view.next === undefined
        ? ""
        : `${ctx.base}/groups?${new URLSearchParams({ ...(view.filter ? { group: view.filter } : {}), cursor: view.next })}`,
    asOf: clock(now),
  };
}

/**
 * The groups page. A view of the first read only (from the start, one read of the hash) updates
 * while open, from the poll's one read; a view that read on, or made more reads, stays as loaded.
 */
export function groupsPage(ctx: PageContext, view: GroupsView, now: number) {
  const live = groupsLiveValues(ctx, view, now);
  const follows = view.cursor === "0" && view.pages <= 1;
  const liveUrl = `${ctx.base}/groups/live.json${view.filter ? `?${new URLSearchParams({ group: view.filter })}` : ""}`;
  return layout(
    ctx,
    "Groups",
    html`${nameFilter({ action: `${ctx.base}/groups`, label: "group contains", name: "group", value: view.filter, maxLength: FILTER_MAX })}
      <p class="note" data-groups-summary><span data-live-text="summary">${live.summary}</span>${live.readOn ? html` <a href="${live.readOn}" rel="next" data-read-on>read on →</a>` : ""}</p>
      <p class="note">A group is one task type's tasks of one group name. Waiting: its READY tasks, the
        parked ones included; parked: those waiting behind the group's concurrency, rate or order;
        running: leased now; oldest waiting: how long its parked tasks have waited. Groups with nothing
        waiting or running are not listed. The stuck first: held behind a FAILED task, then the longest
        parked, then the most waiting.</p>
      <table class="groups" data-live-show="hasRows" ${live.hasRows ? "" : "hidden"}>
          <thead data-live-rows="head">${rowsHtml(live.head)}</thead>
          <tbody data-live-rows="rows">${rowsHtml(live.rows)}</tbody>
        </table>
      ${
        follows
          ? liveNote(ctx, liveUrl, live.asOf, "the table")
          : html`<p class="note">As of ${live.asOf} UTC${ctx.refreshMs > 0 ? " (a view past the first read of the groups hash does not update)" : ""}. Reload to refresh.</p>`
      }`,
  );
}
