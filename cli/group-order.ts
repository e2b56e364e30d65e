import type { GroupStats } from "../shared/types.js";

/**
 * The order `leaseq groups`, `stats --groups` and the dashboard's groups page list groups in, the
 * stuck first: held behind a FAILED task (they need an operator), then those whose parked tasks
 * have waited longest (docs/groups.md, "Stuck groups"), then the most READY, the most leased, and
 * by type and name.
 */
export function stuckFirst(a: GroupStats, b: GroupStats): number {
  const held = (group: GroupStats) => (group.heldBy === undefined ? 0 : 1);
  const age = (group: GroupStats) => group.oldestWaitingAgeMs ?? -1;
  return (
    held(b) - held(a) ||
    age(b) - age(a) ||
    b.ready - a.ready ||
    b.leased - a.leased ||
    byText(a.type, b.type) ||
    byText(a.group, b.group)
  );
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
