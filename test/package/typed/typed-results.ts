// A user's typed results: `defineTasks` keeps what each handler returns, and `queue.result` and
// `queue.waitFor` given the declaration and a type read that type's result as the handler returns
// it. Each `@ts-expect-error` line must be a type error and every other line must compile.
import type { Queue, TaskResults } from "leaseq";
import { defineTasks, type Task } from "leaseq/lambda";

export const tasks = defineTasks({
  types: {
    import: {
      keepResult: true,
      handler: async (task: Task<{ file: string }>) => ({ rows: 3, output: `s3://out/${task.payload.file}` }),
    },
    count: { keepResult: true, handler: () => 42 },
    notify: { handler: async (_task: Task<{ to: string }>) => {} },
  },
});

declare const queue: Queue;
const imported = await queue.result("imp-1", { tasks, type: "import" });
const rows: number | undefined = imported?.result?.rows;
const output: string | undefined = imported?.result?.output;
const counted = await queue.waitFor("count-1", { tasks, type: "count", timeoutMs: 1_000 });
const count: number | undefined = counted?.result;
// Without the declaration: the result is what the caller says, unknown by default.
const loose = await queue.result("imp-1");
const anything: unknown = loose?.result;
const declared: TaskResults<typeof tasks>["import"] = { rows: 1, output: "s3://out/a.csv" };
void [rows, output, count, anything, declared];

// @ts-expect-error the handler returns no `bytes`
void imported?.result?.bytes;
// @ts-expect-error a count's result is a number
const wrong: string | undefined = counted?.result;
// @ts-expect-error a type the declaration lacks
await queue.result("imp-1", { tasks, type: "imprt" });
// @ts-expect-error waitFor still needs its timeout
await queue.waitFor("imp-1", { tasks, type: "import" });
void wrong;
