// A task type's payload schema (any Standard Schema: zod and valibot here) on the worker's side:
// ingest dead-letters a payload it rejects, naming the fields and never echoing the payload; a task
// that reached Redis another way fails at once instead of running; the handler gets the schema's output.
import { Logger } from "@aws-lambda-powertools/logger";
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { LocalSqs } from "../../dev/standins/sqs/index.js";
import { defineTasks } from "../../functions/tasks.js";
import { createWorker } from "../../functions/worker.js";
import { ConfigError } from "../../shared/errors.js";
import { Queue } from "../../shared/queue.js";
import { captureStdout, functionEnv, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { closeLocalSqs, openLocalSqs } from "../helpers/local-sqs.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const SECRET = "s3cr3t-payload-never-logged";
const tcp = adapters[0];

describe("payload schemas in the worker", () => {
  const { open } = storeFixture(tcp);
  let sqs: LocalSqs;
  beforeAll(async () => ({ sqs } = await openLocalSqs()));
  afterAll(() => closeLocalSqs({ sqs }));

  /** A worker whose types record what their handlers received. */
  async function setup() {
    const received: Array<{ id: string; payload: unknown }> = [];
    const tasks = defineTasks({
      types: {
        email: {
          leaseMs: 5_000,
          schema: z.object({ to: z.string(), tags: z.array(z.string()).default([]) }),
          handler: (task) => void received.push({ id: task.id, payload: task.payload }),
        },
        resize: {
          leaseMs: 5_000,
          schema: v.object({ width: v.pipe(v.string(), v.transform(Number), v.number()) }),
          handler: (task) => void received.push({ id: task.id, payload: task.payload }),
        },
      },
    });
    const name = uniqueQueueName("schemas");
    const worker = createWorker({
      tasks,
      env: functionEnv(tcp, name, { LEASEQ_DLQ_URL: sqs.deadLetterQueueUrl, LEASEQ_SQS_ENDPOINT: sqs.endpoint }),
      logger: new Logger({ serviceName: "schemas" }),
    });
    const run = async (...records: ReturnType<typeof sqsRecord>[]) => {
      const before = sqs.deadLetters.length;
      const { result, lines } = await captureStdout(() => worker(sqsEvent(...records), lambdaContext()));
      return { result, lines, letters: sqs.deadLetters.slice(before) };
    };
    return { queue: new Queue(await open(), { name }), run, received };
  }

  it("dead-letters at ingest the tasks whose payload the schema rejects, naming the fields, never the payload", async () => {
    const { queue, run, received } = await setup();
    const { result, lines, letters } = await run(
      sqsRecord(
        {
          tasks: [
            { id: "good", type: "email", payload: { to: "a@example.com" } },
            { id: "bad-to", type: "email", payload: { to: 42, tags: [SECRET, 7] } },
            { id: "bad-width", type: "resize", payload: { width: { secret: SECRET } } },
          ],
        },
        "mixed",
      ),
    );
    expect(result.batchItemFailures).toEqual([]);
    expect(letters).toHaveLength(1);
    expect(letters[0].messageAttributes.LeaseqReason?.StringValue).toBe(
      'tasks[1]: payload of task type "email" fails its schema at payload.to, payload.tags[1]; tasks[2]: payload of task type "resize" fails its schema at payload.width',
    );
    expect(JSON.parse(letters[0].body).tasks.map((task: { id: string }) => task.id)).toEqual(["bad-to", "bad-width"]);
    expect(lines.join("\n")).not.toContain(SECRET);
    expect(await queue.admin.inspect("bad-to")).toBeUndefined();
    expect(received).toEqual([{ id: "good", payload: { to: "a@example.com", tags: [] } }]);
  });

  it("fails at once, without running the handler, a task whose payload the schema rejects; the handler gets the schema's output", async () => {
    const { queue, run, received } = await setup();
    // Straight into Redis: no producer and no ingest checked these.
    await queue.enqueue(
      [
        { id: "bad-email", type: "email", payload: { tags: ["x"] } },
        { id: "bad-resize", type: "resize", payload: { width: 64 } },
        { id: "good-resize", type: "resize", payload: { width: "64" } },
      ],
      { now: Date.now() },
    );
    const { result } = await run(sqsRecord({}));
    expect(result.batchItemFailures).toEqual([]);
    expect(received).toEqual([{ id: "good-resize", payload: { width: 64 } }]);
    const badEmail = await queue.admin.inspect("bad-email");
    expect(badEmail).toMatchObject({ state: "failed", attempts: 1 });
    expect(badEmail?.lastError).toMatch(
      /^PermanentError: payload of task type "email" fails its schema: payload\.to: .*expected string/,
    );
    const badResize = await queue.admin.inspect("bad-resize");
    expect(badResize).toMatchObject({ state: "failed", attempts: 1 });
    expect(badResize?.lastError).toMatch(/fails its schema: payload\.width: Invalid type: Expected string/);
    expect(await queue.admin.inspect("good-resize")).toMatchObject({ state: "done" });
  });

  it("refuses at declaration a schema that is not a Standard Schema, naming the type", () => {
    expect(() =>
      defineTasks({ types: { email: { schema: { parse: () => ({}) } as never, handler: () => {} } } }),
    ).toThrow(ConfigError);
    expect(() =>
      defineTasks({ types: { email: { schema: { parse: () => ({}) } as never, handler: () => {} } } }),
    ).toThrow(/task type "email": schema must be a Standard Schema/);
  });
});
