import { Duration } from "aws-cdk-lib";
import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { onlyResource, synth } from "./synth.js";

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

describe("SQS queues", () => {
  it("creates an encrypted queue whose redrive policy points at an encrypted dead-letter queue", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::SQS::Queue", 2);
    const dlq = onlyResource(template, "AWS::SQS::Queue", { Properties: { MessageRetentionPeriod: 1_209_600 } });
    expect(dlq.properties.SqsManagedSseEnabled).toBe(true);
    const queue = onlyResource(template, "AWS::SQS::Queue", { Properties: { RedrivePolicy: Match.anyValue() } });
    expect(queue.properties).toMatchObject({
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: { "Fn::GetAtt": [dlq.logicalId, "Arn"] }, maxReceiveCount: 5 },
    });
  });

  it("denies every request without TLS on both queues", () => {
    const { template } = synth();
    const dlq = onlyResource(template, "AWS::SQS::Queue", { Properties: { MessageRetentionPeriod: 1_209_600 } });
    const queue = onlyResource(template, "AWS::SQS::Queue", { Properties: { RedrivePolicy: Match.anyValue() } });
    template.resourceCountIs("AWS::SQS::QueuePolicy", 2);
    template.hasResourceProperties("AWS::SQS::QueuePolicy", tlsOnly(queue.logicalId));
    template.hasResourceProperties("AWS::SQS::QueuePolicy", tlsOnly(dlq.logicalId));
  });

  it("takes maxReceiveCount from props", () => {
    const { template } = synth({ maxReceiveCount: 3 });
    template.hasResourceProperties("AWS::SQS::Queue", { RedrivePolicy: Match.objectLike({ maxReceiveCount: 3 }) });
  });

  it("derives the visibility timeout as 6 times the worker timeout", () => {
    synth().template.hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 1800 });
    synth({ workerTimeout: Duration.seconds(120) }).template.hasResourceProperties("AWS::SQS::Queue", {
      VisibilityTimeout: 720,
    });
  });
});
