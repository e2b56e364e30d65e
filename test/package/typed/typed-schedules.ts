// Schedules in a typed declaration compile, and the declaration keeps its types' names and payloads
// for the producer. (A schedule of an undeclared type is refused by defineTasks at run time, with the
// declared names: test/infra/settings.test.ts.)
import { defineTasks, type Task, type TaskPayloads } from "leaseq/lambda";

export const scheduled = defineTasks({
  types: {
    report: { handler: async (_task: Task<{ full: boolean }>) => {} },
    sweep: { handler: () => {} },
  },
  schedules: {
    nightly: { cron: "0 3 * * *", tz: "Europe/Berlin", type: "report", payload: { full: true } },
    often: { every: 60_000, type: "sweep", overlap: "skip", catchUp: { max: 3 } },
  },
});

// The declaration with schedules is still the typed one: its payloads are the handlers'.
export const payload: TaskPayloads<typeof scheduled>["report"] = { full: true };
// @ts-expect-error full is a boolean
export const wrong: TaskPayloads<typeof scheduled>["report"] = { full: "yes" };
