import { Duration } from "aws-cdk-lib";
import { Match, type Template } from "aws-cdk-lib/assertions";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import { describe, expect, it } from "vitest";
import { REFERENCE_WORKER_ENTRY } from "../../examples/reference/stack.js";
import { bundleOptions } from "../../infra/bundling.js";
import { deploymentOf } from "../../infra/lease-queue.js";
import { deadLetterQueue, onlyResource, statements, synth, taskQueue, wakeQueue } from "./synth.js";

const lambdaFunction = (description: string) => (template: Template) =>
  onlyResource(template, "AWS::Lambda::Function", {
    Properties: { Description: Match.stringLikeRegexp(`^leaseq ${description}`) },
  });
const intake = lambdaFunction("intake");
const worker = lambdaFunction("worker");
const reclaimer = lambdaFunction("reclaimer");
const mappingOf = (template: Template, fnLogicalId: string) =>
  onlyResource(template, "AWS::Lambda::EventSourceMapping", { Properties: { FunctionName: { Ref: fnLogicalId } } });

describe("intake function", () => {
  it("is the worker's bundle in the intake role, with a short timeout", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::Lambda::Function", 3);
    expect(intake(template).properties).toMatchObject({
      Runtime: "nodejs22.x",
      Architectures: ["arm64"],
      Handler: "index.handler",
      Timeout: 30,
      MemorySize: 256,
      Environment: { Variables: { LEASEQ_ROLE: "intake", POWERTOOLS_SERVICE_NAME: "leaseq-intake" } },
    });
    const key = (f: { properties: Record<string, unknown> }) => (f.properties.Code as { S3Key: string }).S3Key;
    expect(key(intake(template))).toBe(key(worker(template)));
  });

  it("is fed by the task queue with batch size, window, partial batch failures and its own maximum concurrency", () => {
    const { template } = synth({
      batchSize: 50,
      maxBatchingWindow: Duration.seconds(2),
      intakeMaxConcurrency: 3,
      maxConcurrency: 7,
    });
    expect(mappingOf(template, intake(template).logicalId).properties).toEqual({
      EventSourceArn: { "Fn::GetAtt": [taskQueue(template).logicalId, "Arn"] },
      FunctionName: { Ref: intake(template).logicalId },
      BatchSize: 50,
      MaximumBatchingWindowInSeconds: 2,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      ScalingConfig: { MaximumConcurrency: 3 },
    });
  });

  it("gets the task policies, the dead-letter and wake queues, the task queue's maxReceiveCount, and no worker timeout (it runs no task)", () => {
    const { template } = synth({ queueName: "orders", maxReceiveCount: 4 });
    const secret = onlyResource(template, "AWS::SecretsManager::Secret");
    expect(intake(template).properties.Environment).toEqual({
      Variables: {
        LEASEQ_QUEUE: "orders",
        // The owner of its declared schedules: the construct's path (docs/schedules.md).
        LEASEQ_DEPLOYMENT: "Test.LeaseQueue",
        UPSTASH_SECRET_ARN: { Ref: secret.logicalId },
        LEASEQ_ROLE: "intake",
        LEASEQ_TASKS: "parallel;echo:30000:10000::3:1000:60000:,send-webhook:30000:10000::5:2000:300000:;;10x3",
        LEASEQ_DLQ_URL: { Ref: deadLetterQueue(template).logicalId },
        // The task queue's redrive policy: a record failing at its 4th receive is dead-lettered with why.
        LEASEQ_MAX_RECEIVE_COUNT: "4",
        LEASEQ_WAKE_QUEUE_URL: { Ref: wakeQueue(template).logicalId },
        POWERTOOLS_SERVICE_NAME: "leaseq-intake",
        POWERTOOLS_METRICS_NAMESPACE: "leaseq",
      },
    });
  });
});

describe("worker function", () => {
  it("runs Node.js 22 on ARM64 from the bundled index.mjs with the default timeout and memory", () => {
    const { template } = synth();
    expect(worker(template).properties).toMatchObject({
      Runtime: "nodejs22.x",
      Architectures: ["arm64"],
      Handler: "index.handler",
      Timeout: 300,
      MemorySize: 256,
    });
  });

  it("is started by the wake queue, one wake-up per invocation, up to maxConcurrency at once", () => {
    const { template } = synth({ maxConcurrency: 7 });
    expect(mappingOf(template, worker(template).logicalId).properties).toEqual({
      EventSourceArn: { "Fn::GetAtt": [wakeQueue(template).logicalId, "Arn"] },
      FunctionName: { Ref: worker(template).logicalId },
      BatchSize: 1,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      ScalingConfig: { MaximumConcurrency: 7 },
    });
  });

  it("defaults to 10 records a batch for the intake, no batching window and 10 concurrent invocations each", () => {
    const { template } = synth();
    const intakeMapping = mappingOf(template, intake(template).logicalId);
    expect(intakeMapping.properties).toMatchObject({ BatchSize: 10, ScalingConfig: { MaximumConcurrency: 10 } });
    expect(intakeMapping.properties.MaximumBatchingWindowInSeconds).toBeUndefined();
    expect(mappingOf(template, worker(template).logicalId).properties).toMatchObject({
      ScalingConfig: { MaximumConcurrency: 10 },
    });
  });

  it("gets the queue name, the secret ARN, its task policies and timeout, the dead-letter and wake queues and the metrics settings, and nothing else", () => {
    const { template } = synth({ queueName: "orders", claimBatchSize: 20 });
    const secret = onlyResource(template, "AWS::SecretsManager::Secret");
    expect(worker(template).properties.Environment).toEqual({
      Variables: {
        LEASEQ_QUEUE: "orders",
        // The owner of its declared schedules: the construct's path (docs/schedules.md).
        LEASEQ_DEPLOYMENT: "Test.LeaseQueue",
        UPSTASH_SECRET_ARN: { Ref: secret.logicalId },
        LEASEQ_CLAIM_BATCH: "20",
        LEASEQ_TASKS: "parallel;echo:30000:10000::3:1000:60000:,send-webhook:30000:10000::5:2000:300000:;;10x3",
        LEASEQ_WORKER_TIMEOUT_MS: "300000",
        LEASEQ_DLQ_URL: { Ref: deadLetterQueue(template).logicalId },
        // Where it sends the wake-up it arranges as it stops (docs/wake-ups.md).
        LEASEQ_WAKE_QUEUE_URL: { Ref: wakeQueue(template).logicalId },
        POWERTOOLS_SERVICE_NAME: "leaseq-worker",
        POWERTOOLS_METRICS_NAMESPACE: "leaseq",
      },
    });
  });

  it("names its deployment as given, or by the construct's path (a long one cut, with a digest): the owner of its schedules", () => {
    const { template } = synth({ deployment: "orders-eu" });
    for (const fn of [worker(template), intake(template)]) {
      expect(fn.properties.Environment).toMatchObject({ Variables: { LEASEQ_DEPLOYMENT: "orders-eu" } });
    }
    const long = deploymentOf(`${"Stack".repeat(12)}/Queue`);
    expect(long).toMatch(/^StackStack.{45}-[0-9a-f]{8}$/);
    expect(deploymentOf(`${"Stack".repeat(12)}/Other`)).not.toBe(long);
  });

  it("intake and worker may send to the dead-letter queue and the wake queue, the reclaimer to the wake queue only; nobody to the task queue", () => {
    const { template } = synth();
    const dlq = deadLetterQueue(template).logicalId;
    const wake = wakeQueue(template).logicalId;
    const sends = statements(template).filter((statement) =>
      [statement.Action].flat().some((action) => String(action).startsWith("sqs:Send")),
    );
    const both = {
      Action: "sqs:SendMessage",
      Resource: [{ "Fn::GetAtt": [dlq, "Arn"] }, { "Fn::GetAtt": [wake, "Arn"] }],
    };
    expect(sends).toEqual([
      expect.objectContaining(both),
      expect.objectContaining(both),
      expect.objectContaining({ Action: "sqs:SendMessage", Resource: { "Fn::GetAtt": [wake, "Arn"] } }),
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

describe("the functions", () => {
  it("run Node.js 24 with runtime: 24, all three, their bundles built for node24 (by default Node.js 22 and node22)", () => {
    const { template } = synth({ runtime: 24 });
    for (const fn of [intake(template), worker(template), reclaimer(template)]) {
      expect(fn.properties.Runtime).toBe("nodejs24.x");
    }
    expect(bundleOptions(REFERENCE_WORKER_ENTRY, "out", 24).target).toBe("node24");
    expect(bundleOptions(REFERENCE_WORKER_ENTRY, "out").target).toBe("node22");
  });

  it("have their own code asset (a shared asset cache once gave the reclaimer the worker's bundle)", () => {
    const { template } = synth();
    const key = (fn: { properties: Record<string, unknown> }) => (fn.properties.Code as { S3Key: string }).S3Key;
    expect(key(worker(template))).not.toBe(key(reclaimer(template)));
  });

  it("do not retry asynchronous invocations: the next tick replaces a failed one", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::Lambda::EventInvokeConfig", 3);
    for (const fn of [intake(template), worker(template), reclaimer(template)]) {
      template.hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
        FunctionName: { Ref: fn.logicalId },
        MaximumRetryAttempts: 0,
        MaximumEventAgeInSeconds: 60,
      });
    }
  });

  it("log to their own log group with retention, writable only by their own role", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::Logs::LogGroup", 3);
    template.allResourcesProperties("AWS::Logs::LogGroup", { RetentionInDays: 30 });
    for (const fn of [intake(template), worker(template), reclaimer(template)]) {
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
