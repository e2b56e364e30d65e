import { Duration } from "aws-cdk-lib";
import { Match, type Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { defineTasks } from "../../functions/tasks.js";
import { deadLetterQueue, statements, synth, taskQueue, wakeQueue } from "./synth.js";

const tlsOnly = (queueLogicalId: string) => ({
  PolicyDocument: {
    Statement: [
      {
        Action: "sqs:*",
        Effect: "Deny",
        Principal: { AWS: "*" },
        Condition: { Bool: { "aws:SecureTransport": "false" } },
        Resource: { "Fn::GetAtt": [queueLogicalId, "Arn"] },
      },
    ],
  },
  Queues: [{ Ref: queueLogicalId }],
});

/** The statements of the template's role policies that allow sending to wake queues tagged `queueName`. */
function taggedSends(template: Template, queueName: string) {
  type Condition = { StringEquals?: Record<string, string> } | undefined;
  return statements(template).filter(
    (statement) => (statement.Condition as Condition)?.StringEquals?.["aws:ResourceTag/leaseq-queue"] === queueName,
  );
}

describe("SQS queues", () => {
  it("tags the wake queue with its queue's name; on a queue deployments share (acceptTypes), each function may send to the wake queues of that queue only", () => {
    const tasks = defineTasks({ types: { echo: { handler: () => {} } }, acceptTypes: ["report"] });
    const shared = synth({ queueName: "shared", tasks });
    expect(wakeQueue(shared.template).properties.Tags).toContainEqual({ Key: "leaseq-queue", Value: "shared" });
    const sends = taggedSends(shared.template, "shared");
    expect(sends).toHaveLength(3); // the intake, the worker and the reclaimer
    for (const statement of sends) expect(statement.Action).toBe("sqs:SendMessage");
    // A queue one deployment runs alone: no such permission.
    const alone = synth({ queueName: "alone" });
    expect(wakeQueue(alone.template).properties.Tags).toContainEqual({ Key: "leaseq-queue", Value: "alone" });
    expect(taggedSends(alone.template, "alone")).toEqual([]);
  });

  it("creates an encrypted task queue whose redrive policy points at an encrypted dead-letter queue, and an encrypted wake queue", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::SQS::Queue", 3);
    const dlq = deadLetterQueue(template);
    expect(dlq.properties.SqsManagedSseEnabled).toBe(true);
    expect(taskQueue(template).properties).toMatchObject({
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: { "Fn::GetAtt": [dlq.logicalId, "Arn"] }, maxReceiveCount: 5 },
    });
    expect(wakeQueue(template).properties).toMatchObject({ SqsManagedSseEnabled: true });
    expect(wakeQueue(template).properties.RedrivePolicy).toBeUndefined();
  });

  it("denies every request without TLS on every queue", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::SQS::QueuePolicy", 3);
    for (const queue of [taskQueue(template), deadLetterQueue(template), wakeQueue(template)]) {
      template.hasResourceProperties("AWS::SQS::QueuePolicy", tlsOnly(queue.logicalId));
    }
  });

  it("takes maxReceiveCount from props", () => {
    const { template } = synth({ maxReceiveCount: 3 });
    template.hasResourceProperties("AWS::SQS::Queue", { RedrivePolicy: Match.objectLike({ maxReceiveCount: 3 }) });
  });

  it("derives the task queue's visibility timeout from the intake's timeout and the wake queue's from the worker's (6 times each)", () => {
    const defaults = synth().template;
    expect(taskQueue(defaults).properties.VisibilityTimeout).toBe(180);
    expect(wakeQueue(defaults).properties.VisibilityTimeout).toBe(1800);
    const given = synth({ workerTimeout: Duration.seconds(120), intakeTimeout: Duration.seconds(10) }).template;
    expect(taskQueue(given).properties.VisibilityTimeout).toBe(60);
    expect(wakeQueue(given).properties.VisibilityTimeout).toBe(720);
  });

  it("with fifo, makes the task queue and its dead-letter queue FIFO, without content-based deduplication, and keeps the wake queue standard (wake-ups are delayed)", () => {
    const { template } = synth({ fifo: true });
    for (const queue of [taskQueue(template), deadLetterQueue(template)]) {
      expect(queue.properties).toMatchObject({ FifoQueue: true, ContentBasedDeduplication: false });
    }
    expect(wakeQueue(template).properties.FifoQueue).toBeUndefined();
  });

  it("refuses a batching window with fifo, and more than 10 records a batch", () => {
    expect(() => synth({ fifo: true, maxBatchingWindow: Duration.seconds(1), batchSize: 100 })).toThrow(
      /maxBatchingWindow is not supported with fifo[\s\S]*batchSize must be an integer from 1 to 10 \(a FIFO queue\), got 100/,
    );
  });
});
