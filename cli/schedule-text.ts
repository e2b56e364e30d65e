// How a schedule reads to an operator, in `leaseq schedules list` and on the dashboard's schedules page.
import type { ScheduleInfo } from "../shared/queue-schedules.js";
import type { ScheduleDefinition } from "../shared/schedules.js";

/** When a definition's slots are: `cron "0 3 * * *" Europe/Berlin` or `every 60 s`. */
export function whenOf(definition: ScheduleDefinition): string {
  if (definition.every !== undefined) {
    return definition.every % 1000 === 0 ? `every ${definition.every / 1000} s` : `every ${definition.every} ms`;
  }
  return `cron "${definition.cron ?? ""}" ${definition.tz ?? "UTC"}`;
}

const iso = (ms: number | undefined) => (ms === undefined ? "–" : new Date(ms).toISOString());

/** The next slot: its time, "paused", or "none" (a cron that never fires again). */
export function nextOf(info: ScheduleInfo): string {
  if (info.paused) return "paused";
  if (info.aside !== undefined) return "set aside";
  return info.nextSlotMs === undefined ? "none" : iso(info.nextSlotMs);
}

/** The last slot made and its task's state ("gone" once the task is trimmed or deleted); "–" before the first. */
export function lastOf(info: ScheduleInfo): string {
  if (info.lastTaskId === undefined) return "–";
  const at = info.lastSlotMs === undefined ? info.lastTaskId : iso(info.lastSlotMs);
  return `${at} ${info.lastTaskState ?? "gone"}`;
}

/** Who set a schedule: "deploy <owner>" (the deployment whose declaration owns it), or "run-time". */
export function setBy(info: Pick<ScheduleInfo, "declared" | "owner">): string {
  if (!info.declared) return "run-time";
  return info.owner === undefined || info.owner === "1" ? "deploy" : `deploy ${info.owner}`;
}
