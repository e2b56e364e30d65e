// The mixed benchmark's task types (bench/mixed/run.ts): per-tenant ordered imports of a few
// seconds (the minutes of an ETL service, scaled down) and short pings with a deadline. Each handler
// notes its start and end in a Redis list (MIXED_EVENTS_URL, MIXED_EVENTS_KEY), so the run can be
// read after the fact, whatever process ran it and whether it was killed.
import { Redis } from "ioredis";
import { defineTasks } from "../../functions/tasks.js";

/** How long a lease lives without a heartbeat in this run: how soon a killed import runs again. */
export const MIXED_HEARTBEAT_MS = 4_000;

let events: Redis | undefined;
const note = (event: Record<string, unknown>) => {
  events ??= new Redis(process.env.MIXED_EVENTS_URL ?? "redis://127.0.0.1:6379");
  return events.rpush(process.env.MIXED_EVENTS_KEY ?? "mixed:events", JSON.stringify({ ...event, pid: process.pid }));
};

export const mixedTasks = defineTasks({
  concurrency: 10,
  types: {
    import: {
      // One slot of each invocation kept for the short tasks, as a service with webhooks beside
      // long imports would declare it: a short task never waits for an import to end.
      concurrency: 9,
      // Long enough for the stuck tenant's import (bench/mixed/run.ts, phase 3).
      timeoutMs: 120_000,
      heartbeatMs: MIXED_HEARTBEAT_MS,
      group: { ordered: true },
      handler: async (task) => {
        await note({ kind: "start", id: task.id, group: task.group, attempt: task.attempt, at: Date.now() });
        await new Promise((resolve) => setTimeout(resolve, (task.payload as { workMs: number }).workMs));
        await note({ kind: "end", id: task.id, at: Date.now() });
      },
    },
    ping: {
      timeoutMs: 5_000,
      handler: async (task) => {
        await note({ kind: "ping", id: task.id, sentAt: (task.payload as { sentAt: number }).sentAt, at: Date.now() });
      },
    },
  },
});
