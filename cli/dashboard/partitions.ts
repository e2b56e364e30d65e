// A partitioned queue on the dashboard (docs/partitions.md, docs/dashboard.md "Partitions"): its
// figures as one queue's (sumStats: counts summed, ages the oldest of any partition) and its last
// hour summed, and the overview's table of its partitions, a row each with its counts and a link to
// its pages. The rows are declared as data (live-rows.ts): drawn by the server, sent again by the
// overview's live.json.
import { html } from "hono/html";
import { sumStats } from "../../shared/sum-stats.js";
import { duration } from "../../shared/text.js";
import type { QueueHistory, QueueStats } from "../../shared/types.js";
import { type LiveRow, rowsHtml } from "./live-rows.js";
import { mapLimited, partitionBase, type ServedQueue } from "./queue.js";

/** Partitions read at once. */
const PARTITIONS_PARALLEL = 8;

/** The counts the table shows of each partition, in its columns' order. */
const COUNTED = ["ready", "scheduled", "leased", "done", "failed"] as const;

/** Each partition's stats at `now`, by number, and their sum. */
export async function servedStats(
  served: ServedQueue,
  now: number,
): Promise<{ total: QueueStats; partitions: Array<{ partition: number; stats: QueueStats }> }> {
  const partitions = await mapLimited(served.partitions, PARTITIONS_PARALLEL, async ({ partition, queue }) => ({
    partition,
    stats: await queue.stats({ now }),
  }));
  return { total: sumStats(partitions.map((each) => each.stats)), partitions };
}

/** The queue's DONE and FAILED per minute over the last hour at `now`: its partitions' summed. */
export async function servedHistory(served: ServedQueue, now: number): Promise<QueueHistory> {
  const each = await mapLimited(served.partitions, PARTITIONS_PARALLEL, ({ queue }) =>
    queue.admin.history({ now, minutes: 60 }),
  );
  const [first] = each;
  const add = (series: "done" | "failed") =>
    first[series].map((_, minute) => each.reduce((total, history) => total + (history[series][minute] ?? 0), 0));
  return { startMs: first.startMs, bucketMs: first.bucketMs, done: add("done"), failed: add("failed") };
}

/** The overview's rows of the partitions: number (a link to its pages), counts (links to its lists), oldest ready, paused. */
export function partitionRows(
  queueName: string,
  partitions: Array<{ partition: number; stats: QueueStats }>,
): LiveRow[] {
  return partitions.map(({ partition, stats }) => {
    const base = partitionBase(queueName, partition);
    return {
      data: { partitionRow: String(partition) },
      cells: [
        { text: `partition ${partition}`, field: "partition", href: `${base}/`, linkFlag: "partitionLink" },
        ...COUNTED.map((state) => ({
          text: String(stats[state]),
          className: "num",
          field: state,
          href: `${base}/tasks/${state}`,
        })),
        { text: stats.ready > 0 ? duration(stats.oldestReadyAgeMs) : "", className: "num", field: "oldestReady" },
        stats.paused
          ? { text: "paused", field: "paused", spanClass: "badge paused" }
          : { text: "running", field: "paused", spanClass: "note" },
      ],
    };
  });
}

/** The overview's table of the partitions (`rows`: partitionRows), which its live values redraw. */
export function partitionsTable(rows: LiveRow[]) {
  return html`<h2 id="partitions">Partitions</h2>
      <p class="note">Counts summed above, ages the oldest of any partition. Each partition's task lists, tasks, groups, schedules and actions are on its pages.</p>
      <table class="partitions" data-partitions-table>
        <thead><tr><th>partition</th>${COUNTED.map((state) => html`<th class="num">${state}</th>`)}<th class="num">oldest ready</th><th>state</th></tr></thead>
        <tbody data-live-rows="partitionRows">${rowsHtml(rows)}</tbody>
      </table>`;
}
