// Schedules in a typed declaration compile, a wrong type or payload does not, and the declaration
// keeps its types' names and payloads for the producer. (Untyped, a schedule of an undeclared type is
// refused by defineTasks at run time, with the declared names: test/infra/settings.test.ts.)
import { defineTasks, type Task, type TaskDefinitions, type TaskPayloads } from "leaseq/lambda";

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

// A schedule's type must be a declared one, and its payload that type's: a compile error, not a
// fallback to untyped definitions.
export const wrongPayload = defineTasks({
  types: { report: { handler: async (_task: Task<{ full: boolean }>) => {} } },
  // @ts-expect-error full is a boolean
  schedules: { nightly: { cron: "0 3 * * *", type: "report", payload: { full: "yes" } } },
});
export const wrongType = defineTasks({
  types: { report: { handler: async (_task: Task<{ full: boolean }>) => {} } },
  // @ts-expect-error no type "reprot" is declared
  schedules: { nightly: { cron: "0 3 * * *", type: "reprot", payload: { full: true } } },
});
// Definitions typed as a whole (built elsewhere) and untyped handlers still compile.
export const untyped = defineTasks({
  types: { report: { handler: async (task) => console.log(task.payload) } },
  schedules: { nightly: { cron: "0 3 * * *", type: "report", payload: { any: 1 } } },
});
declare const built: TaskDefinitions;
export const fromBuilt = defineTasks(built);
