// The numbers a queue's overview keeps up to date while it is open (docs/dashboard.md, "Live
// updates"). The page marks each live element with the name of its value (data-live-text: its text;
// data-live-show, data-live-hide: shown or hidden by it); the page script polls
// /q/<queue>/live.json, these values of one stats call, and writes them into those elements. The
// page is first drawn from the same values, so the two cannot drift apart.
import { duration } from "../../shared/text.js";
import type { QueueStats } from "../../shared/types.js";

/** How often an open overview reads its numbers again, unless the dashboard is told otherwise. */
export const REFRESH_MS_DEFAULT = 5000;

/** The values of a queue's overview, by the names its live elements give. */
export interface LiveValues {
  ready: number;
  scheduled: number;
  leased: number;
  done: number;
  failed: number;
  corrupt: number;
  /** How long the oldest READY task has waited, as text; "" when none waits. */
  oldestReady: string;
  /** Scheduled tasks already due (0: the note is hidden). */
  dueScheduled: number;
  /** How far the most overdue lease is past its deadline, as text; "" when none is. */
  mostOverdue: string;
  paused: boolean;
  /** The task types paused on their own, ", " between them; "" when none is. */
  pausedTypes: string;
  /** The queue or some of its types are paused: the state line is highlighted. */
  pausedAny: boolean;
  /** When the values were read, UTC to the second ("2025-01-31 12:00:00"). */
  asOf: string;
}

/** A time as the pages write "as of": UTC to the second. */
export function clock(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/** The overview's values of `stats`, read at `now`. */
export function liveValues(stats: QueueStats, now: number): LiveValues {
  return {
    ready: stats.ready,
    scheduled: stats.scheduled,
    leased: stats.leased,
    done: stats.done,
    failed: stats.failed,
    corrupt: stats.corrupt,
    oldestReady: stats.ready > 0 ? duration(stats.oldestReadyAgeMs) : "",
    dueScheduled: stats.dueScheduled,
    mostOverdue: stats.mostOverdueLeaseMs > 0 ? duration(stats.mostOverdueLeaseMs) : "",
    paused: stats.paused,
    pausedTypes: stats.pausedTypes.join(", "),
    pausedAny: stats.paused || stats.pausedTypes.length > 0,
    asOf: clock(now),
  };
}
