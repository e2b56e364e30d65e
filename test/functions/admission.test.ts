// One admission on every path that makes a task (docs/design.md, "Admission"): the library's
// enqueue, the typed producer's enqueue and send (through the intake), a raw SQS message through the
// intake, the CLI, a schedule's slots and its run-now, and leaseq/testing's worker each admit and
// refuse exactly the same tasks of a queue a worker's cold start configured: a declared type, a
// payload within the cap, an id of the allowed characters. The paths come from one list, so a new
// one is checked against every case. The payload schema is checked where the declaration is loaded
// (the producer, the intake, the worker, leaseq/testing), not by the library, the CLI or the planner.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Logger } from "@aws-lambda-powertools/logger";
import { SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { createProducer } from "../../functions/producer.js";
import { defineTasks } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import type { TaskInput } from "../../shared/types.js";
import { createTestWorker } from "../../testing/test-worker.js";
import { runCli } from "../cli/cli-run.js";
import { captureStdout, functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { adapters, redisUrl, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const tasks = defineTasks({ types: { job: { handler: async () => {} } } });
const adapter = adapters[0];

/** The cases: what every path must answer for the task. */
const CASES: Array<{ name: string; task: TaskInput; admitted: boolean; hasId?: boolean }> = [
  { name: "a declared type", task: { id: "ok-1", type: "job", payload: { n: 1 } }, admitted: true, hasId: true },
  { name: "a type not declared", task: { id: "typo-1", type: "jbo", payload: {} }, admitted: false, hasId: true },
  {
    name: "a payload over the cap",
    task: { id: "big-1", type: "job", payload: "x".repeat(300_000) },
    admitted: false,
    hasId: true,
  },
  { name: "an id outside its characters", task: { id: "a b", type: "job", payload: {} }, admitted: false, hasId: true },
];

type Outcome = "admitted" | "refused";
interface Context {
  queue: Queue;
  name: string;
  /** Runs the worker (intake role) on one SQS message body; whether it enqueued the task. */
  intake(body: unknown): Promise<boolean>;
  sqs: LocalSqs;
  client: SQSClient;
  dir: string;
}

/** Every path that makes a task, each answering whether it admitted `task` (made it, with its id). */
const PATHS: Record<string, (ctx: Context, task: TaskInput) => Promise<Outcome>> = {
  "library enqueue": async ({ queue }, task) =>
    queue.enqueue([task], { now: Date.now() }).then(
      ([result]) => (result.status === "ok" ? "admitted" : "refused"),
      () => "refused",
    ),
  "typed producer enqueue": async ({ queue, sqs, client }, task) => {
    const producer = createProducer({ queueUrl: sqs.queueUrl, client, tasks });
    return producer.enqueue(queue, [task as never]).then(
      ({ results }) => (results[0].status === "ok" ? "admitted" : "refused"),
      () => "refused",
    );
  },
  "typed producer send, through the intake": async ({ sqs, client, intake }, task) => {
    sqs.queue.purge();
    const producer = createProducer({ queueUrl: sqs.queueUrl, client, tasks });
    const sent = await producer.send([task as never]).then(
      () => true,
      () => false,
    );
    if (!sent) return "refused";
    const [message] = sqs.queue.all();
    return (await intake(JSON.parse(message.body))) ? "admitted" : "refused";
  },
  "a message sent by other code, through the intake": async ({ intake }, task) =>
    (await intake({ tasks: [task] })) ? "admitted" : "refused",
  "the CLI's enqueue": async ({ name, dir }, task) => {
    const file = join(dir, `${task.id?.replace(/\W/g, "_")}.json`);
    writeFileSync(file, JSON.stringify(task.payload ?? {}));
    const run = await runCli(["enqueue", "--type", task.type, "--id", task.id ?? "", "--payload", `@${file}`], {
      REDIS_URL: redisUrl(),
      LEASEQ_QUEUE: name,
    });
    return run.code === 0 ? "admitted" : "refused";
  },
  "leaseq/testing's worker": async (_ctx, task) => {
    const worker = createTestWorker({ tasks, redisUrl: redisUrl() });
    try {
      return await worker.enqueue([task as never]).then(
        ([result]) => (result.status === "ok" ? "admitted" : "refused"),
        () => "refused",
      );
    } finally {
      await worker.close();
    }
  },
};

/**
 * Sets a schedule making `task`'s type and payload every `everyMs`, runs `use` on it, removes it:
 * "refused" when the schedule cannot be set.
 */
async function withSchedule(
  queue: Queue,
  task: TaskInput,
  everyMs: number,
  use: (name: string) => Promise<Outcome>,
): Promise<Outcome> {
  const name = `s${everyMs}-${task.id?.replace(/\W/g, "")}`;
  const definition = { every: everyMs, type: task.type, payload: task.payload as never };
  const set = await queue.schedules.set(name, definition, { now: Date.now() }).then(
    () => true,
    () => false,
  );
  if (!set) return "refused";
  try {
    return await use(name);
  } finally {
    await queue.schedules.remove(name, { now: Date.now() });
  }
}

/** The paths that make tasks with ids of their own (a schedule's slot): every case but the id's. */
const SLOT_PATHS: Record<string, (ctx: Context, task: TaskInput) => Promise<Outcome>> = {
  "a schedule's slots": ({ queue }, task) =>
    withSchedule(queue, task, 20_000, async () => {
      const plan = await queue.schedules.plan({ now: Date.now(), horizonMs: 70_000 });
      return plan.made > 0 ? "admitted" : "refused";
    }),
  "a schedule's run-now": ({ queue }, task) =>
    withSchedule(queue, task, 3_600_000, (name) =>
      queue.schedules.runNow(name, { now: Date.now() }).then(
        (ran): Outcome => (ran ? "admitted" : "refused"),
        (): Outcome => "refused",
      ),
    ),
};

describe("one admission on every path that makes a task", () => {
  const { open } = storeFixture(adapter);
  const context = {} as Context;
  let worker: ReturnType<typeof createWorker>;

  beforeAll(async () => {
    context.sqs = new LocalSqs(async () => undefined);
    await context.sqs.listen();
    context.client = new SQSClient({
      endpoint: context.sqs.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    context.dir = mkdtempSync(join(tmpdir(), "leaseq-admission-"));
    context.name = uniqueQueueName("admit");
    context.queue = new Queue(await open(), { name: context.name });
    worker = createWorker({
      tasks,
      env: functionEnv(adapter, context.name, {
        LEASEQ_DLQ_URL: context.sqs.deadLetterQueueUrl,
        LEASEQ_SQS_ENDPOINT: context.sqs.endpoint,
      }),
      logger: new Logger({ serviceName: "admission", logLevel: "SILENT" }),
    });
    context.intake = async (body) => {
      await captureStdout(() => worker(sqsEvent(sqsRecord(body)), lambdaContext()));
      const enqueued = (body as { tasks?: TaskInput[] }).tasks?.[0]?.id;
      if (enqueued === undefined) return false;
      // An id no task may have was never enqueued (inspect refuses to look it up).
      return (await context.queue.admin.inspect(enqueued).catch(() => undefined)) !== undefined;
    };
    // The worker's cold start configures the queue from its declaration, as on AWS.
    await context.intake({ tasks: [] });
  });
  afterAll(async () => {
    await worker.close();
    context.client.destroy();
    await context.sqs.close();
    rmSync(context.dir, { recursive: true, force: true });
  });

  const rows = [
    ...Object.keys(PATHS).flatMap((path) => CASES.map((c) => [path, c.name] as const)),
    ...Object.keys(SLOT_PATHS).flatMap((path) =>
      CASES.filter((c) => c.name !== "an id outside its characters").map((c) => [path, c.name] as const),
    ),
  ];

  it.each(rows)("%s: %s", async (path, caseName) => {
    const found = CASES.find((c) => c.name === caseName);
    if (!found) throw new Error(caseName);
    // Each path its own id, so one path's task is not another's duplicate.
    const slug = path.replace(/\W+/g, "-");
    const task = { ...found.task, id: found.task.id === "a b" ? "a b" : `${found.task.id}-${slug}` };
    const run = PATHS[path] ?? SLOT_PATHS[path];
    expect(await run(context, task)).toBe(found.admitted ? "admitted" : "refused");
  });
});
