import { Duration } from "aws-cdk-lib";
import { Match, type Template } from "aws-cdk-lib/assertions";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import { describe, expect, it } from "vitest";
import { onlyResource, synth } from "./synth.js";

const worker = (template: Template) =>
  onlyResource(template, "AWS::Lambda::Function", {
    Properties: { Description: Match.stringLikeRegexp("^leaseq worker") },
  });
const reclaimer = (template: Template) =>
  onlyResource(template, "AWS::Lambda::Function", {
    Properties: { Description: Match.stringLikeRegexp("^leaseq reclaimer") },
  });

/** Every IAM policy statement in the template. */
function statements(template: Template): Array<Record<string, unknown>> {
  return Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
    (policy) => policy.Properties.PolicyDocument.Statement,
  );
}

describe("worker function", () => {
  it("runs Node.js 22 on ARM64 from the bundled index.mjs with the default timeout and memory", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::Lambda::Function", 2);
    expect(worker(template).properties).toMatchObject({
      Runtime: "nodejs22.x",
      Architectures: ["arm64"],
      Handler: "index.handler",
      Timeout: 300,
      MemorySize: 256,
    });
  });

  it("is fed by the queue with batch size, window, partial batch failures and maximum concurrency", () => {
    const { template } = synth({ batchSize: 50, maxBatchingWindow: Duration.seconds(2), maxConcurrency: 7 });
    const queue = onlyResource(template, "AWS::SQS::Queue", { Properties: { RedrivePolicy: Match.anyValue() } });
    const mapping = onlyResource(template, "AWS::Lambda::EventSourceMapping");
    expect(mapping.properties).toEqual({
      EventSourceArn: { "Fn::GetAtt": [queue.logicalId, "Arn"] },
      FunctionName: { Ref: worker(template).logicalId },
      BatchSize: 50,
      MaximumBatchingWindowInSeconds: 2,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      ScalingConfig: { MaximumConcurrency: 7 },
    });
  });

  it("defaults to 10 records, no batching window and 10 concurrent invocations", () => {
    const mapping = onlyResource(synth().template, "AWS::Lambda::EventSourceMapping");
    expect(mapping.properties).toMatchObject({ BatchSize: 10, ScalingConfig: { MaximumConcurrency: 10 } });
    expect(mapping.properties.MaximumBatchingWindowInSeconds).toBeUndefined();
  });

  it("gets the queue name, the secret ARN, its task policies and timeout, both queues and the metrics settings, and nothing else", () => {
    const { template } = synth({ queueName: "orders", claimBatchSize: 20 });
    const secret = onlyResource(template, "AWS::SecretsManager::Secret");
    const dlq = onlyResource(template, "AWS::SQS::Queue", { Properties: { MessageRetentionPeriod: 1_209_600 } });
    const queue = onlyResource(template, "AWS::SQS::Queue", { Properties: { RedrivePolicy: Match.anyValue() } });
    expect(worker(template).properties.Environment).toEqual({
      Variables: {
        LEASEQ_QUEUE: "orders",
        UPSTASH_SECRET_ARN: { Ref: secret.logicalId },
        LEASEQ_CLAIM_BATCH: "20",
        LEASEQ_TASKS: "parallel;echo:30000:3:1000:60000,send-webhook:30000:5:2000:300000;",
        LEASEQ_WORKER_TIMEOUT_MS: "300000",
        LEASEQ_DLQ_URL: { Ref: dlq.logicalId },
        // Its own queue: where it sends the wake-up it arranges as it stops (docs/wake-ups.md).
        LEASEQ_QUEUE_URL: { Ref: queue.logicalId },
        POWERTOOLS_SERVICE_NAME: "leaseq-worker",
        POWERTOOLS_METRICS_NAMESPACE: "leaseq",
      },
    });
  });

  it("may send to the dead-letter queue and to its own queue (wake-ups), the reclaimer to that queue only", () => {
    const { template } = synth();
    const dlq = onlyResource(template, "AWS::SQS::Queue", { Properties: { MessageRetentionPeriod: 1_209_600 } });
    const queue = onlyResource(template, "AWS::SQS::Queue", { Properties: { RedrivePolicy: Match.anyValue() } });
    const sends = statements(template).filter((statement) =>
      [statement.Action].flat().some((action) => String(action).startsWith("sqs:Send")),
    );
    expect(sends).toEqual([
      expect.objectContaining({
        Action: "sqs:SendMessage",
        Resource: [{ "Fn::GetAtt": [dlq.logicalId, "Arn"] }, { "Fn::GetAtt": [queue.logicalId, "Arn"] }],
      }),
      expect.objectContaining({ Action: "sqs:SendMessage", Resource: { "Fn::GetAtt": [queue.logicalId, "Arn"] } }),
    ]);
  });
});

describe("reclaimer function", () => {
  it("runs Node.js 22 on ARM64 and knows the worker it starts with a drain invocation", () => {
    const { template } = synth();
    expect(reclaimer(template).properties).toMatchObject({
      Runtime: "nodejs22.x",
      Architectures: ["arm64"],
      Handler: "index.handler",
      Timeout: 60,
      Environment: {
        Variables: {
          LEASEQ_WORKER_FUNCTION: { Ref: worker(template).logicalId },
          LEASEQ_RECLAIM_PERIOD_MS: "60000",
          POWERTOOLS_SERVICE_NAME: "leaseq-reclaimer",
        },
      },
    });
  });

  it("runs every minute by default, with a short retry policy", () => {
    const { template } = synth();
    const rule = onlyResource(template, "AWS::Events::Rule");
    expect(rule.properties).toMatchObject({
      ScheduleExpression: "rate(1 minute)",
      State: "ENABLED",
      Targets: [
        {
          Arn: { "Fn::GetAtt": [reclaimer(template).logicalId, "Arn"] },
          RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 },
        },
      ],
    });
    template.hasResourceProperties("AWS::Lambda::Permission", {
      Action: "lambda:InvokeFunction",
      Principal: "events.amazonaws.com",
      FunctionName: { "Fn::GetAtt": [reclaimer(template).logicalId, "Arn"] },
      SourceArn: { "Fn::GetAtt": [rule.logicalId, "Arn"] },
    });
  });

  it("takes the schedule rate from props", () => {
    const rule = onlyResource(synth({ reclaimSchedule: Duration.minutes(5) }).template, "AWS::Events::Rule");
    expect(rule.properties.ScheduleExpression).toBe("rate(5 minutes)");
  });

  it("may invoke exactly the worker function: no wildcard, no version or alias", () => {
    const { template } = synth();
    const invokes = statements(template).filter((s) => JSON.stringify(s.Action).includes("lambda:"));
    expect(invokes).toEqual([
      {
        Action: "lambda:InvokeFunction",
        Effect: "Allow",
        Resource: { "Fn::GetAtt": [worker(template).logicalId, "Arn"] },
      },
    ]);
  });
});

describe("both functions", () => {
  it("have their own code asset (a shared asset cache once gave the reclaimer the worker's bundle)", () => {
    const { template } = synth();
    const key = (fn: { properties: Record<string, unknown> }) => (fn.properties.Code as { S3Key: string }).S3Key;
    expect(key(worker(template))).not.toBe(key(reclaimer(template)));
  });

  it("do not retry asynchronous invocations: the next tick replaces a failed one", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::Lambda::EventInvokeConfig", 2);
    for (const fn of [worker(template), reclaimer(template)]) {
      template.hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
        FunctionName: { Ref: fn.logicalId },
        MaximumRetryAttempts: 0,
        MaximumEventAgeInSeconds: 60,
      });
    }
  });

  it("log to their own log group with retention, writable only by their own role", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::Logs::LogGroup", 2);
    template.allResourcesProperties("AWS::Logs::LogGroup", { RetentionInDays: 30 });
    for (const fn of [worker(template), reclaimer(template)]) {
      const logGroupId = (fn.properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
      const roleId = (fn.properties.Role as { "Fn::GetAtt": string[] })["Fn::GetAtt"][0];
      template.hasResourceProperties("AWS::IAM::Policy", {
        Roles: [{ Ref: roleId }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            {
              Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
              Effect: "Allow",
              Resource: { "Fn::GetAtt": [logGroupId, "Arn"] },
            },
          ]),
        },
      });
    }
    // No AWS managed policy (AWSLambdaBasicExecutionRole would allow writing to every log group).
    template.allResourcesProperties("AWS::IAM::Role", { ManagedPolicyArns: Match.absent() });
  });

  it("take the log retention from props", () => {
    synth({ logRetention: RetentionDays.ONE_WEEK }).template.allResourcesProperties("AWS::Logs::LogGroup", {
      RetentionInDays: 7,
    });
  });

  it("have no IAM statement with a wildcard resource", () => {
    for (const statement of statements(synth().template)) {
      expect(JSON.stringify(statement.Resource)).not.toMatch(/\*/);
    }
  });
});
