import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { sqsDeadLetterSender } from "../../functions/dead-letter.js";
import { functionSqsClient } from "../../functions/wake.js";
import { sqsRecord } from "../helpers/events.js";
import { runBin, runCli } from "./cli-run.js";

describe("leaseq dlq, through @aws-sdk/client-sqs against the SQS stand-in", { timeout: 60_000 }, () => {
  let sqs: LocalSqs;
  const env = () => ({ LEASEQ_SQS_ENDPOINT: sqs.endpoint, LEASEQ_DLQ_URL: sqs.deadLetterQueueUrl });
  beforeAll(async () => {
    sqs = new LocalSqs(async () => undefined);
    await sqs.listen();
    // What the worker sends for a record it can never enqueue.
    const sender = sqsDeadLetterSender(sqs.deadLetterQueueUrl, functionSqsClient(sqs.endpoint));
    await sender.send({
      record: sqsRecord('{"task": []}', "source-1"),
      body: '{"task": []}',
      reason: 'unknown top-level field "task"',
    });
    await sender.send({
      record: sqsRecord({ tasks: [{ type: "ok" }, { type: "fax" }] }, "source-2"),
      body: JSON.stringify({ tasks: [{ type: "fax" }] }),
      reason: 'tasks[1]: task type "fax" is not declared by this worker; declared: ok',
      taskIndexes: [1],
    });
  });
  afterAll(async () => {
    await sqs.close();
  });

  it("show lists each dead letter with its reason, source message and task indexes, and leaves them there", async () => {
    const run = await runCli(["dlq", "show", "--json", "--body"], env());
    expect(run.code, run.stderr).toBe(0);
    const rows = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .sort((a, b) => a.sourceMessageId.localeCompare(b.sourceMessageId));
    expect(rows).toEqual([
      expect.objectContaining({
        reason: 'unknown top-level field "task"',
        sourceMessageId: "source-1",
        body: '{"task": []}',
      }),
      expect.objectContaining({
        reason: 'tasks[1]: task type "fax" is not declared by this worker; declared: ok',
        sourceMessageId: "source-2",
        taskIndexes: "1",
        body: '{"tasks":[{"type":"fax"}]}',
      }),
    ]);
    expect(sqs.deadLetters).toHaveLength(2); // still there
    const text = await runCli(["dlq", "show"], env());
    expect(text.stdout).toContain('  unknown top-level field "task"');
  });

  it("redrive moves every dead letter back to the queue it feeds", async () => {
    const run = await runCli(["dlq", "redrive", "--wait"], env());
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`redriving ${sqs.deadLetterQueueUrl} to ${sqs.queueUrl}`);
    expect(run.stdout).toContain("COMPLETED: 2 messages moved");
    expect(sqs.deadLetters).toHaveLength(0);
    expect(sqs.stats().visible).toBe(2);
    const empty = await runCli(["dlq", "show"], env());
    expect(empty).toMatchObject({ code: 0, stdout: "" });
    expect(empty.stderr).toContain("the dead-letter queue is empty\n");
  });

  it("exits 2 when no dead-letter queue is named", async () => {
    const run = await runCli(["dlq", "show"], { LEASEQ_SQS_ENDPOINT: sqs.endpoint });
    expect(run).toMatchObject({
      code: 2,
      stderr: "leaseq: no dead-letter queue given: pass --dlq-url URL or set LEASEQ_DLQ_URL\n",
    });
  });
});

describe("leaseq dlq show, of a message the redrive policy moved", { timeout: 60_000 }, () => {
  it("says no reason was recorded, how many times the function received it, and where to look", async () => {
    const sqs = new LocalSqs(async () => undefined, { maxReceiveCount: 2 });
    await sqs.listen();
    try {
      sqs.send('{"tasks":[{"type":"job"}]}');
      // Received twice and never deleted (the function failed each time); the third receive moves it.
      for (let receive = 0; receive < 3; receive++) sqs.queue.receive(10, 0);
      expect(sqs.deadLetters.map((letter) => letter.deadLetteredBy)).toEqual(["redrive"]);
      const run = await runCli(["dlq", "show"], {
        LEASEQ_SQS_ENDPOINT: sqs.endpoint,
        LEASEQ_DLQ_URL: sqs.deadLetterQueueUrl,
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.split("\n")[1]).toBe(
        "  no reason recorded: received 2 times (the function failed each time; see its logs)",
      );
    } finally {
      await sqs.close();
    }
  });
});

describe("leaseq dlq, the built bin in a process of its own", { timeout: 60_000 }, () => {
  it("prints its output and no AWS SDK warning about the Node version (Node 20)", async () => {
    const sqs = new LocalSqs(async () => undefined, { maxReceiveCount: 2 });
    await sqs.listen();
    try {
      sqs.send('{"tasks":[{"type":"job"}]}');
      for (let receive = 0; receive < 3; receive++) sqs.queue.receive(10, 0);
      // `dlq show` builds an SQSClient: where the SDK warns on Node 20.
      const run = await runBin(["dlq", "show"], {
        LEASEQ_SQS_ENDPOINT: sqs.endpoint,
        LEASEQ_DLQ_URL: sqs.deadLetterQueueUrl,
      });
      expect(run.stderr).not.toContain("NodeVersionSupportWarning");
      expect(run).toMatchObject({ code: 0, stderr: "" });
      expect(run.stdout).toContain("  no reason recorded: received 2 times");
    } finally {
      await sqs.close();
    }
  });
});
