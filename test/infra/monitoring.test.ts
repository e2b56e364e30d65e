import { App, type CfnElement, Duration, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { Topic } from "aws-cdk-lib/aws-sns";
import { describe, expect, it } from "vitest";
import type { LeaseqStack } from "../../examples/reference/stack.js";
import { QUEUE_METRICS } from "../../functions/metric-names.js";
import { ALARM_DESCRIPTION_MAX_CHARS, type LeaseQueueAlarms } from "../../infra/alarms.js";
import { LeaseQueue } from "../../infra/lease-queue.js";
import { type AlarmProperties, evaluate, fires, longestDescription } from "./alarm-math.js";
import { onlyResource, REQUIRED_PROPS, SKIP_BUNDLING, synth } from "./synth.js";

/** The synthesized properties of one of the stack's alarms, by its name in `LeaseQueue.alarms`. */
function alarmOf(synthesized: { stack: LeaseqStack; template: Template }, name: keyof LeaseQueueAlarms) {
  const alarm = synthesized.stack.leaseQueue.alarms[name];
  if (alarm === undefined) throw new Error(`no alarm ${name}`);
  const logicalId = synthesized.stack.getLogicalId(alarm.node.defaultChild as CfnElement);
  return synthesized.template.toJSON().Resources[logicalId].Properties as AlarmProperties & Record<string, unknown>;
}

/** The function whose description starts with `leaseq <role>`. */
const lambdaOf = (template: Template, role: string) =>
  onlyResource(template, "AWS::Lambda::Function", {
    Properties: { Description: Match.stringLikeRegexp(`^leaseq ${role}`) },
  });

/** A reclaimer metric as an alarm names it: the dimension set Powertools Metrics publishes. */
const queueMetric = (name: string, queue = "default", period = 60, stat = "Maximum") => ({
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
    Stat: stat,
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

/** The same metric as one query of a metric-math alarm. */
const lambdaQuery = (id: string, name: string, fn: { logicalId: string }, period = 60) => ({
  Id: id,
  ReturnData: false,
  MetricStat: { Metric: lambdaMetric(name, fn), Period: period, Stat: "Sum" },
});

/** An alarm description as the template holds it: its text, the names it resolves at deploy shown as `<Ref>`. */
function descriptionText(alarm: Record<string, unknown>): string {
  const description = alarm.AlarmDescription as string | { "Fn::Join": [string, unknown[]] };
  if (typeof description === "string") return description;
  return description["Fn::Join"][1].map((part) => (typeof part === "string" ? part : "<Ref>")).join("");
}

const DEFAULT_ALARMS = 12;

describe("alarms", () => {
  it("fires when messages are visible in the dead-letter queue, and names the queue's URL for leaseq dlq show", () => {
    const synthesized = synth();
    const dlq = onlyResource(synthesized.template, "AWS::SQS::Queue", {
      Properties: { MessageRetentionPeriod: 1_209_600 },
    });
    const alarm = alarmOf(synthesized, "deadLetterQueueNotEmpty");
    expect(alarm).toMatchObject({
      ...sqsMetric("ApproximateNumberOfMessagesVisible", dlq),
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      Threshold: 1,
      EvaluationPeriods: 1,
      TreatMissingData: "notBreaching",
    });
    expect(descriptionText(alarm)).toContain("export LEASEQ_DLQ_URL=<Ref>, then leaseq dlq show");
    expect(alarm.AlarmDescription).toMatchObject({
      "Fn::Join": ["", expect.arrayContaining([{ Ref: dlq.logicalId }])],
    });
  });

  it("fires when a task has waited more than a minute in the task queue (the intake is not taking it)", () => {
    const synthesized = synth();
    const queue = onlyResource(synthesized.template, "AWS::SQS::Queue", {
      Properties: { RedrivePolicy: Match.anyValue() },
    });
    expect(alarmOf(synthesized, "intakeBehind")).toMatchObject({
      ...sqsMetric("ApproximateAgeOfOldestMessage", queue),
      ComparisonOperator: "GreaterThanThreshold",
      Threshold: 60,
      EvaluationPeriods: 2,
    });
  });

  it("fires when a task has waited too long to start, parked tasks included, and points to leaseq groups and stats", () => {
    const synthesized = synth({ queueName: "orders" });
    const alarm = alarmOf(synthesized, "oldestWaitingTaskTooOld");
    expect(alarm).toMatchObject({
      Metrics: [queueMetric("oldestWaitingAgeMs", "orders")],
      ComparisonOperator: "GreaterThanThreshold",
      Threshold: 300_000,
      EvaluationPeriods: 1,
      TreatMissingData: "notBreaching",
    });
    const text = descriptionText(alarm);
    expect(text).toContain("waited over 5 min to start, parked tasks included");
    expect(text).toContain("Run: leaseq --queue orders groups (stuck groups first");
    expect(text).toContain("then leaseq --queue orders stats");
    // The threshold is the prop's, under its name or its former one.
    expect(alarmOf(synth({ oldestWaitingAgeAlarmMs: 90_000 }), "oldestWaitingTaskTooOld").Threshold).toBe(90_000);
    const former = alarmOf(synth({ oldestReadyAgeAlarmMs: 600_000 }), "oldestWaitingTaskTooOld");
    expect(former).toMatchObject({ Metrics: [queueMetric("oldestWaitingAgeMs")], Threshold: 600_000 });
  });

  it("fires when more than 1% of the tasks finished in 15 minutes FAILED, at least 5 of them", () => {
    const synthesized = synth();
    const alarm = alarmOf(synthesized, "failedRateHigh");
    expect(alarm).toMatchObject({
      Metrics: [
        { Expression: "IF(failed >= 5, 100 * failed / (done + failed), 0)", ReturnData: true },
        { Id: "failed", ReturnData: false, ...queueMetric("finishedFailed", "default", 900, "Sum") },
        { Id: "done", ReturnData: false, ...queueMetric("finishedDone", "default", 900, "Sum") },
      ],
      ComparisonOperator: "GreaterThanThreshold",
      Threshold: 1,
      EvaluationPeriods: 1,
      TreatMissingData: "notBreaching",
    });
    expect(descriptionText(alarm)).toContain("Run: leaseq --queue default list failed --limit 20");
    // Counts a user would recognize, summed over one 15-minute window of reclaimer runs.
    const window = (failed: number, done: number) => [{ finishedFailed: failed, finishedDone: done }];
    expect(fires(alarm, window(2, 998))).toBe(false); // 2 of 1,000: an ordinary day
    expect(fires(alarm, window(8, 992))).toBe(false); // 0.8%: more than 5, still under the rate
    expect(fires(alarm, window(30, 970))).toBe(true); // 3%
    expect(fires(alarm, window(3, 0))).toBe(false); // 3 of 3, but under minFailed
    expect(fires(alarm, window(5, 0))).toBe(true); // 5 of 5
    expect(evaluate(alarm, { finishedFailed: 0, finishedDone: 0 })).toBe(0); // an idle queue: no division by zero
    expect(fires(alarm, [{}])).toBe(false); // no reclaimer data: reclaimerNotInvoked speaks instead
  });

  it("takes its percent, window and minimum count from failedRateAlarm, the window in whole reclaimer runs", () => {
    const alarm = alarmOf(
      synth({ failedRateAlarm: { percent: 2.5, periodMinutes: 30, minFailed: 20 } }),
      "failedRateHigh",
    );
    expect(alarm).toMatchObject({
      Metrics: [
        { Expression: "IF(failed >= 20, 100 * failed / (done + failed), 0)" },
        queueMetric("finishedFailed", "default", 1800, "Sum"),
        queueMetric("finishedDone", "default", 1800, "Sum"),
      ],
      Threshold: 2.5,
    });
    expect(fires(alarm, [{ finishedFailed: 19, finishedDone: 0 }])).toBe(false);
    expect(fires(alarm, [{ finishedFailed: 26, finishedDone: 974 }])).toBe(true);
    // The default window rounded up to whole runs of a 10-minute schedule: 20 minutes.
    const tenMinutes = alarmOf(synth({ reclaimSchedule: Duration.minutes(10) }), "failedRateHigh");
    expect(tenMinutes.Metrics?.[1]).toMatchObject(queueMetric("finishedFailed", "default", 1200, "Sum"));
  });

  it("has no failed-rate alarm with failedRateAlarm: false", () => {
    const { stack, template } = synth({ failedRateAlarm: false });
    expect(stack.leaseQueue.alarms.failedRateHigh).toBeUndefined();
    template.resourceCountIs("AWS::CloudWatch::Alarm", DEFAULT_ALARMS - 1);
    const alarms = JSON.stringify(template.findResources("AWS::CloudWatch::Alarm"));
    expect(alarms).not.toContain("finishedFailed");
  });

  it("fires when a lease is overdue by more than two reclaim periods", () => {
    const synthesized = synth({ reclaimSchedule: Duration.minutes(2) });
    expect(alarmOf(synthesized, "leasesOverdue")).toMatchObject({
      Metrics: [queueMetric("mostOverdueLeaseMs", "default", 120)],
      Threshold: 240_000,
    });
  });

  it("fires when the reclaimer is not invoked (missing data counting as not invoked), fails or is throttled in 2 runs in a row", () => {
    const synthesized = synth({ reclaimSchedule: Duration.minutes(5) });
    const reclaimer = lambdaOf(synthesized.template, "reclaimer");
    expect(alarmOf(synthesized, "reclaimerNotInvoked")).toMatchObject({
      ...lambdaMetric("Invocations", reclaimer),
      Statistic: "Sum",
      Period: 300,
      ComparisonOperator: "LessThanThreshold",
      Threshold: 1,
      EvaluationPeriods: 3,
      TreatMissingData: "breaching",
    });
    for (const [name, metric] of [
      ["reclaimerErrors", "Errors"],
      ["reclaimerThrottled", "Throttles"],
    ] as const) {
      expect(alarmOf(synthesized, name)).toMatchObject({
        ...lambdaMetric(metric, reclaimer),
        Statistic: "Sum",
        Period: 300,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        Threshold: 1,
        EvaluationPeriods: 2,
        TreatMissingData: "notBreaching",
      });
    }
  });

  it("fires when over 5% of the intake's or the worker's invocations fail in 3 of 5 minutes", () => {
    const synthesized = synth();
    for (const [name, role] of [
      ["intakeErrors", "intake"],
      ["workerErrors", "worker"],
    ] as const) {
      const fn = lambdaOf(synthesized.template, role);
      const alarm = alarmOf(synthesized, name);
      expect(alarm).toMatchObject({
        Metrics: [
          { Expression: "IF(errors > 0, 100 * errors / invocations, 0)", ReturnData: true },
          lambdaQuery("errors", "Errors", fn),
          lambdaQuery("invocations", "Invocations", fn),
        ],
        ComparisonOperator: "GreaterThanThreshold",
        Threshold: 5,
        EvaluationPeriods: 5,
        DatapointsToAlarm: 3,
        TreatMissingData: "notBreaching",
      });
      const minute = (errors: number, invocations: number) => ({ Errors: errors, Invocations: invocations });
      const quiet = minute(0, 200);
      // A Redis failover: two bad minutes, then well again.
      expect(fires(alarm, [quiet, minute(40, 200), minute(12, 200), quiet, quiet])).toBe(false);
      // One failure in a hundred, every minute: under the percent.
      expect(fires(alarm, Array(5).fill(minute(1, 100)))).toBe(false);
      // A worker that fails each time it is started, once a minute: 3 of 5 minutes.
      expect(fires(alarm, [quiet, minute(1, 1), {}, minute(1, 1), minute(1, 1)])).toBe(true);
    }
  });

  it("fires when over 10% of the intake's or the worker's requests are throttled in 3 of 5 minutes", () => {
    const synthesized = synth();
    for (const [name, role] of [
      ["intakeThrottled", "intake"],
      ["workerThrottled", "worker"],
    ] as const) {
      const fn = lambdaOf(synthesized.template, role);
      const alarm = alarmOf(synthesized, name);
      expect(alarm).toMatchObject({
        Metrics: [
          { Expression: "IF(throttles > 0, 100 * throttles / (FILL(invocations, 0) + throttles), 0)" },
          lambdaQuery("throttles", "Throttles", fn),
          lambdaQuery("invocations", "Invocations", fn),
        ],
        ComparisonOperator: "GreaterThanThreshold",
        Threshold: 10,
        EvaluationPeriods: 5,
        DatapointsToAlarm: 3,
        TreatMissingData: "notBreaching",
      });
      const minute = (throttles: number, invocations?: number) => ({ Throttles: throttles, Invocations: invocations });
      expect(fires(alarm, Array(5).fill(minute(5, 95)))).toBe(false); // 5% of requests
      expect(fires(alarm, [minute(0, 50), minute(30, 70), minute(30, 70), minute(30, 70), minute(0, 50)])).toBe(true);
      // Every request throttled: Lambda publishes no Invocations for such a minute.
      expect(evaluate(alarm, minute(12))).toBe(100);
    }
  });

  it("take their percents and minutes from functionAlarms, and functionAlarms: false removes the four", () => {
    const synthesized = synth({
      functionAlarms: { errorPercent: 1, throttlePercent: 50, breachingMinutes: 2, windowMinutes: 10 },
    });
    expect(alarmOf(synthesized, "workerErrors")).toMatchObject({
      Threshold: 1,
      EvaluationPeriods: 10,
      DatapointsToAlarm: 2,
    });
    expect(alarmOf(synthesized, "intakeThrottled")).toMatchObject({
      Threshold: 50,
      EvaluationPeriods: 10,
      DatapointsToAlarm: 2,
    });
    expect(descriptionText(alarmOf(synthesized, "workerErrors"))).toContain("in 2 of the last 10 minutes");

    const off = synth({ functionAlarms: false, failedRateAlarm: false });
    expect(Object.keys(off.stack.leaseQueue.alarms).sort()).toEqual([
      "deadLetterQueueNotEmpty",
      "intakeBehind",
      "leasesOverdue",
      "oldestWaitingTaskTooOld",
      "reclaimerErrors",
      "reclaimerNotInvoked",
      "reclaimerThrottled",
    ]);
    off.template.resourceCountIs("AWS::CloudWatch::Alarm", 7);
  });

  it("each say what to run first, in at most 1024 characters once the names they hold resolve", () => {
    // The longest texts: a queue name of 64 characters, thresholds of many digits.
    const synthesized = synth({
      queueName: "q".repeat(64),
      maxReceiveCount: 1000,
      oldestWaitingAgeAlarmMs: 86_399_999,
      leaseOverdueAlarmMs: 86_399_999,
      failedRateAlarm: { percent: 99.999999, periodMinutes: 1440, minFailed: 999_999 },
      functionAlarms: { errorPercent: 99.999999, throttlePercent: 99.999999, breachingMinutes: 59, windowMinutes: 60 },
    });
    const alarms = Object.values(synthesized.template.findResources("AWS::CloudWatch::Alarm"));
    expect(alarms).toHaveLength(DEFAULT_ALARMS);
    for (const { Properties } of alarms) {
      const text = descriptionText(Properties);
      expect(text.startsWith(`leaseq queue "${"q".repeat(64)}": `)).toBe(true);
      expect(text).toMatch(/Run: |Read the logs of function |leaseq --queue |aws lambda /);
      expect(longestDescription(synthesized.template, Properties.AlarmDescription)).toBeLessThanOrEqual(
        ALARM_DESCRIPTION_MAX_CHARS,
      );
    }
  });

  it("have no actions and no topic without alarmEmail or alarmTopic", () => {
    const { template } = synth();
    template.resourceCountIs("AWS::CloudWatch::Alarm", DEFAULT_ALARMS);
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
    // The FAILED share of finished tasks, and each type's queue wait and run time at p50 and p99:
    // a SEARCH over the worker's EMF of this queue (dimensions service, queue, type).
    expect(body).toContain("IF(done + failed > 0, 100 * failed / (done + failed), 0)");
    for (const name of ["queueWaitMs", "runTimeMs"]) {
      for (const statistic of ["p50", "p99"]) {
        expect(body).toContain(
          `SEARCH('{leaseq,queue,service,type} MetricName=\\\\\\"${name}\\\\\\" service=\\\\\\"leaseq-worker\\\\\\" queue=\\\\\\"default\\\\\\"', '${statistic}', 60)`,
        );
      }
    }
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
