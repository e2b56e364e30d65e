import { App, Duration, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { Topic } from "aws-cdk-lib/aws-sns";
import { describe, expect, it } from "vitest";
import { QUEUE_METRICS } from "../../functions/metric-names.js";
import { LeaseQueue } from "../../infra/lease-queue.js";
import { onlyResource, REQUIRED_PROPS, SKIP_BUNDLING, synth } from "./synth.js";

/** The alarm whose description contains `words`. */
function alarm(template: Template, words: string) {
  return onlyResource(template, "AWS::CloudWatch::Alarm", {
    Properties: { AlarmDescription: Match.stringLikeRegexp(words) },
  }).properties;
}

/** A reclaimer metric as an alarm names it: the dimension set Powertools Metrics publishes. */
const queueMetric = (name: string, queue = "default", period = 60) => ({
  MetricStat: {
    Metric: {
      Namespace: "leaseq",
      MetricName: name,
      Dimensions: [
        { Name: "queue", Value: queue },
        { Name: "service", Value: "leaseq-reclaimer" },
      ],
    },
    Period: period,
    Stat: "Maximum",
  },
});

/** An SQS metric of `queue` (a template resource) as an alarm names it. */
const sqsMetric = (name: string, queue: { logicalId: string }) => ({
  Namespace: "AWS/SQS",
  MetricName: name,
  Dimensions: [{ Name: "QueueName", Value: { "Fn::GetAtt": [queue.logicalId, "QueueName"] } }],
});

/** A Lambda metric of `fn` (a template resource) as an alarm names it. */
const lambdaMetric = (name: string, fn: { logicalId: string }) => ({
  Namespace: "AWS/Lambda",
  MetricName: name,
  Dimensions: [{ Name: "FunctionName", Value: { Ref: fn.logicalId } }],
});

describe("alarms", () => {
  it("fires when messages are visible in the dead-letter queue", () => {
    const { template } = synth();
    const dlq = onlyResource(template, "AWS::SQS::Queue", { Properties: { MessageRetentionPeriod: 1_209_600 } });
    expect(alarm(template, "dead-letter")).toMatchObject({
      ...sqsMetric("ApproximateNumberOfMessagesVisible", dlq),
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      Threshold: 1,
    });
  });

  it("fires when a task has waited more than a minute in the task queue (the intake is not taking it)", () => {
    const { template } = synth();
    const queue = onlyResource(template, "AWS::SQS::Queue", { Properties: { RedrivePolicy: Match.anyValue() } });
    expect(alarm(template, "task queue")).toMatchObject({
      ...sqsMetric("ApproximateAgeOfOldestMessage", queue),
      ComparisonOperator: "GreaterThanThreshold",
      Threshold: 60,
      EvaluationPeriods: 2,
    });
  });

  it("fires when the oldest ready task is older than the threshold", () => {
    const { template } = synth({ queueName: "orders", oldestReadyAgeAlarmMs: 90_000 });
    expect(alarm(template, "ready task has waited")).toMatchObject({
      Metrics: [queueMetric("oldestReadyAgeMs", "orders")],
      ComparisonOperator: "GreaterThanThreshold",
      Threshold: 90_000,
      TreatMissingData: "notBreaching",
    });
  });

  it("fires when the FAILED count grows between two reclaimer runs", () => {
    const { template } = synth();
    expect(alarm(template, "moved to FAILED")).toMatchObject({
      Metrics: [
        { Expression: "DIFF(failed)", ReturnData: true },
        { Id: "failed", ReturnData: false, ...queueMetric("failed") },
      ],
      ComparisonOperator: "GreaterThanThreshold",
      Threshold: 0,
    });
  });

  it("fires when a lease is overdue by more than two reclaim periods", () => {
    const { template } = synth({ reclaimSchedule: Duration.minutes(2) });
    expect(alarm(template, "lease is overdue")).toMatchObject({
      Metrics: [queueMetric("mostOverdueLeaseMs", "default", 120)],
      Threshold: 240_000,
    });
  });

  it("fires when the reclaimer is not invoked, missing data counting as not invoked", () => {
    const { template } = synth();
    const reclaimer = onlyResource(template, "AWS::Lambda::Function", {
      Properties: { Description: Match.stringLikeRegexp("^leaseq reclaimer") },
    });
    expect(alarm(template, "has not run")).toMatchObject({
      ...lambdaMetric("Invocations", reclaimer),
      Statistic: "Sum",
      ComparisonOperator: "LessThanThreshold",
      Threshold: 1,
      EvaluationPeriods: 3,
      TreatMissingData: "breaching",
    });
    expect(alarm(template, "reclaimer failed")).toMatchObject({
      ...lambdaMetric("Errors", reclaimer),
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      Threshold: 1,
      EvaluationPeriods: 2,
    });
  });

  it("have no actions and no topic without alarmEmail or alarmTopic", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::CloudWatch::Alarm", 7);
    template.resourceCountIs("AWS::SNS::Topic", 0);
    template.allResourcesProperties("AWS::CloudWatch::Alarm", { AlarmActions: Match.absent() });
  });

  it("notify a new TLS-only topic with an email subscription when alarmEmail is given", () => {
    const { template } = synth({ alarmEmail: "oncall@example.com" });
    const topic = onlyResource(template, "AWS::SNS::Topic");
    template.hasResourceProperties("AWS::SNS::Subscription", {
      Protocol: "email",
      Endpoint: "oncall@example.com",
      TopicArn: { Ref: topic.logicalId },
    });
    template.hasResourceProperties("AWS::SNS::TopicPolicy", {
      PolicyDocument: {
        Statement: [Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } })],
      },
    });
    template.allResourcesProperties("AWS::CloudWatch::Alarm", {
      AlarmActions: [{ Ref: topic.logicalId }],
      OKActions: [{ Ref: topic.logicalId }],
    });
  });

  it("notify an existing topic when alarmTopic is given", () => {
    const stack = new Stack(new App({ context: SKIP_BUNDLING }), "Existing");
    const arn = "arn:aws:sns:eu-west-1:123456789012:oncall";
    new LeaseQueue(stack, "Queue", { ...REQUIRED_PROPS, alarmTopic: Topic.fromTopicArn(stack, "Oncall", arn) });
    const template = Template.fromStack(stack);
    template.resourceCountIs("AWS::SNS::Topic", 0);
    template.allResourcesProperties("AWS::CloudWatch::Alarm", { AlarmActions: [arn], OKActions: [arn] });
  });
});

describe("dashboard", () => {
  it("shows every queue metric the reclaimer publishes and the functions' errors, throttles and durations", () => {
    const { template } = synth({ dashboardName: "leaseq-orders" });
    const dashboard = onlyResource(template, "AWS::CloudWatch::Dashboard").properties;
    expect(dashboard.DashboardName).toBe("leaseq-orders");
    const body = JSON.stringify(dashboard.DashboardBody);
    for (const name of Object.keys(QUEUE_METRICS)) {
      expect(body).toContain(
        `\\"leaseq\\",\\"${name}\\",\\"queue\\",\\"default\\",\\"service\\",\\"leaseq-reclaimer\\"`,
      );
    }
    for (const name of ["Errors", "Throttles", "Duration"]) expect(body).toContain(`\\"AWS/Lambda\\",\\"${name}\\"`);
    expect(body).toContain("ApproximateNumberOfMessagesVisible");
  });

  it("is named in the stack outputs with the queue URL and both function names", () => {
    const { template } = synth();
    const dashboard = onlyResource(template, "AWS::CloudWatch::Dashboard");
    const queue = onlyResource(template, "AWS::SQS::Queue", { Properties: { RedrivePolicy: Match.anyValue() } });
    template.hasOutput("DashboardName", { Value: { Ref: dashboard.logicalId } });
    template.hasOutput("QueueUrl", { Value: { Ref: queue.logicalId } });
    for (const [output, words] of [
      ["WorkerFunctionName", "^leaseq worker"],
      ["ReclaimerFunctionName", "^leaseq reclaimer"],
    ]) {
      const fn = onlyResource(template, "AWS::Lambda::Function", {
        Properties: { Description: Match.stringLikeRegexp(words) },
      });
      template.hasOutput(output, { Value: { Ref: fn.logicalId } });
    }
  });
});
