// The dashboard's groups page (docs/dashboard.md, "Groups"): a queue's groups (its tenants,
// customers, accounts: docs/groups.md) with what waits, what is parked behind the group's limits and
// what runs, the stuck first. The groups hash is read in pages (queue.admin.groups, one HSCAN step
// each), at most GROUPS_READ_PAGES per view, and filtered by name on the server; a link reads on
// from where a view stopped. Group names come from Redis and are input: Hono's `html` template
// escapes them, and every link encodes them.
import { html } from "hono/html";
import { duration } from "../../shared/text.js";
import type { GroupStats } from "../../shared/types.js";
import { stuckFirst } from "../group-order.js";
import { counted } from "../output.js";
import { clock } from "./live.js";
import { layout, nameFilter, type PageContext } from "./pages.js";
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
 * InvalidInputError for anything else) in at most GROUPS_READ_PAGES reads, and keeps those whose
 * name contains `filter` (any case).
 */
export async function readGroups(
  queue: Pick<DashboardQueue, "admin">,
  filter: string,
  cursor: string,
): Promise<GroupsView> {
  const needle = filter.toLowerCase();
  const matching: GroupRow[] = [];
  let read = 0;
  let pages = 0;
  let next: string | undefined = cursor;
  while (next !== undefined && pages < GROUPS_READ_PAGES) {
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

export function groupsPage(ctx: PageContext, view: GroupsView, now: number) {
  const { groups } = view;
  // The column shows when a group has parked tasks (their age: GroupStats.oldestWaitingAgeMs).
  const withAge = groups.some((group) => group.oldestWaitingAgeMs !== undefined);
  const tasksOf = (state: "ready" | "leased", group: GroupRow) =>
    `${ctx.base}/tasks/${state}?${new URLSearchParams({ type: group.type, group: group.group })}`;
  const row = (group: GroupRow) => html`<tr data-group-row>
      <td data-field="type">${group.type}</td>
      <td data-field="group"><a href="${tasksOf("ready", group)}" data-group-link>${group.group}</a></td>
      <td class="num" data-field="ready">${group.ready}</td>
      <td class="num" data-field="parked">${group.parked > 0 ? html`<span class="warn">${group.parked}</span>` : group.parked}</td>
      <td class="num" data-field="leased">${group.leased > 0 ? html`<a href="${tasksOf("leased", group)}">${group.leased}</a>` : group.leased}</td>
      <td data-field="heldBy">${
        group.heldBy === undefined
          ? ""
          : html`<a class="warn" href="${ctx.base}/task/${encodeURIComponent(group.heldBy)}">${group.heldBy}</a>`
      }</td>
      ${withAge ? html`<td class="num" data-field="oldestWaiting">${group.oldestWaitingAgeMs !== undefined ? duration(group.oldestWaitingAgeMs) : ""}</td>` : ""}
    </tr>`;
  const readOn =
    view.next === undefined
      ? ""
      : html` <a href="${ctx.base}/groups?${new URLSearchParams({ ...(view.filter ? { group: view.filter } : {}), cursor: view.next })}" rel="next" data-read-on>read on →</a>`;
  const from = view.cursor === "0" ? "" : " from where the last view stopped";
  const extent =
    view.next === undefined
      ? `${counted(view.read, "group")} with work read${from}, in ${counted(view.pages, "read")} of the groups hash (to its end)`
      : `${counted(view.read, "group")} with work read${from}, in ${counted(view.pages, "read")} of the groups hash, the most one view makes; more follow`;
  const shown =
    view.matching > groups.length ? `; showing the ${groups.length} most stuck of the ${view.matching} that match` : "";
  const matched = view.filter ? `; ${view.matching} of them contain "${view.filter}"` : "";
  return layout(
    ctx,
    "Groups",
    html`${nameFilter({ action: `${ctx.base}/groups`, label: "group contains", name: "group", value: view.filter, maxLength: FILTER_MAX })}
      <p class="note" data-groups-summary>${extent}${matched}${shown}.${readOn}</p>
      <p class="note">A group is one task type's tasks of one group name. Waiting: its READY tasks, the
        parked ones included; parked: those waiting behind the group's concurrency, rate or order;
        running: leased now; oldest waiting: how long its parked tasks have waited. Groups with nothing
        waiting or running are not listed. The stuck first: held behind a FAILED task, then the longest
        parked, then the most waiting.</p>
      ${
        groups.length > 0
          ? html`<table class="groups">
          <thead><tr><th>type</th><th>group</th><th class="num">waiting</th><th class="num">parked</th><th class="num">running</th><th>held by</th>${withAge ? html`<th class="num">oldest waiting</th>` : ""}</tr></thead>
          <tbody>${groups.map(row)}</tbody>
        </table>`
          : ""
      }
      <p class="note">As of ${clock(now)} UTC. Reload to refresh.</p>`,
  );
}
