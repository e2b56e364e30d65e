import { App, Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { Topic } from "aws-cdk-lib/aws-sns";
import { describe, expect, it } from "vitest";
import { propsFromContext } from "../../examples/reference/context.js";
import { LeaseqStack } from "../../examples/reference/stack.js";
import { defineTasks } from "../../functions/tasks.js";
import { LeaseQueue } from "../../infra/lease-queue.js";
import { type LeaseQueueProps, LeaseQueuePropsError, resolveSettings } from "../../infra/settings.js";
import { problems, REQUIRED_PROPS, SKIP_BUNDLING } from "./synth.js";

describe("prop validation", () => {
  it("accepts the defaults and the AWS limits' edges", () => {
    expect(problems({})).toEqual([]);
    expect(
      problems({
        batchSize: 10_000,
        maxBatchingWindow: Duration.seconds(300),
        maxConcurrency: 1000,
        maxReceiveCount: 1,
        workerTimeout: Duration.seconds(900),
        reclaimSchedule: Duration.minutes(60),
        tasks: defineTasks({ types: { big: { leaseMs: 895_000, handler: () => {} } } }),
      }),
    ).toEqual([]);
  });

  it("reports every problem in one error naming the prop, the allowed range and the value given", () => {
    const build = () =>
      new LeaseQueue(new Stack(new App({ context: SKIP_BUNDLING }), "Bad"), "Queue", {
        ...REQUIRED_PROPS,
        queueName: "orders:eu",
        deployment: "orders/eu",
        batchSize: 11,
        maxConcurrency: 1,
        maxReceiveCount: 0,
        reclaimSchedule: Duration.seconds(30),
        dashboardName: "my dashboard",
      });
    expect(build).toThrow(LeaseQueuePropsError);
    expect(build).toThrow(
      [
        "LeaseQueue: 7 invalid prop(s):",
        '  - queueName must be 1-64 characters of A-Z a-z 0-9 _ . -, got "orders:eu"',
        '  - deployment must be 1-64 characters of A-Z a-z 0-9 _ . - (not "0" or "1"), got "orders/eu"',
        "  - batchSize must be an integer from 1 to 10 (up to 10000 needs maxBatchingWindow ≥ 1 s), got 11",
        "  - reclaimSchedule must be whole minutes from 1 to 60 (EventBridge rates are at least 1 minute), got 30 seconds",
        '  - dashboardName must be 1-255 characters of A-Z a-z 0-9 _ -, got "my dashboard"',
        "  - maxConcurrency must be an integer from 2 to 1000, got 1",
        "  - maxReceiveCount must be an integer from 1 to 1000, got 0",
      ].join("\n"),
    );
  });

  it("requires every declared lease to fit the worker timeout minus the margin, listing each type", () => {
    const handler = () => {};
    expect(
      problems({
        workerTimeout: Duration.seconds(60),
        tasks: defineTasks({
          types: { ok: { leaseMs: 30_000, handler }, slow: { leaseMs: 120_000, handler }, usual: { handler } },
        }),
      }),
    ).toEqual([
      'task type "slow": leaseMs 120000 cannot fit the worker timeout of 60 s minus the 5000 ms margin (at most 55000 ms); shorten it or raise workerTimeout (at most 900 s)',
      'task type "usual": timeoutMs (the default) 60000 cannot fit the worker timeout of 60 s minus the 5000 ms margin (at most 55000 ms); shorten it or raise workerTimeout (at most 900 s)',
    ]);
    // A run longer than Lambda allows is refused with the real limit, and what to do instead.
    expect(
      problems({
        workerTimeout: Duration.minutes(15),
        tasks: defineTasks({ types: { "import-file": { timeoutMs: 900_000, heartbeatMs: 30_000, handler } } }),
      }),
    ).toEqual([
      'task type "import-file": timeoutMs 900000 cannot fit the worker timeout of 900 s minus the 5000 ms margin (at most 895000 ms); a Lambda invocation lasts at most 15 minutes, so no run may take longer than 895000 ms: split the work into tasks (an ordered group runs them one after another), and let heartbeatMs, not the timeout, say how soon a crash is noticed',
    ]);
    // A 12-minute import with a 30 s heartbeat fits a 15-minute worker.
    expect(
      problems({
        workerTimeout: Duration.minutes(15),
        tasks: defineTasks({ types: { "import-file": { timeoutMs: 720_000, heartbeatMs: 30_000, handler } } }),
      }),
    ).toEqual([]);
    // A 280 s lease fits a 300 s worker (the default timeout).
    expect(problems({ tasks: defineTasks({ types: { long: { leaseMs: 280_000, handler } } }) })).toEqual([]);
  });

  it("reports a task declaration's own problems, a missing entry file and missing required props", () => {
    expect(
      problems({
        tasks: { types: { "bad type": { leaseMs: 10, handler: () => {} } } },
        workerEntry: "no/such/worker.ts",
      }),
    ).toEqual([
      'tasks: task type name "bad type" must be 1-64 characters of A-Z a-z 0-9 _ . -',
      'tasks: task type "bad type": leaseMs must be an integer from 1000 to 86400000 ms, got 10',
      expect.stringMatching(/^workerEntry: no file at .*no\/such\/worker\.ts \(given "no\/such\/worker\.ts"\)$/),
    ]);
    expect(
      (() => {
        try {
          resolveSettings({} as LeaseQueueProps);
          return [];
        } catch (error) {
          return (error as LeaseQueuePropsError).problems;
        }
      })(),
    ).toEqual([
      "tasks is required: the defineTasks(...) result your worker entry runs",
      "workerEntry is required: the path of your worker entry file (it exports handler = createWorker({ tasks }))",
    ]);
  });

  it("checks timeouts, memory, batching window and schedule against the AWS limits", () => {
    expect(
      problems({
        workerTimeout: Duration.minutes(16),
        reclaimerTimeout: Duration.millis(1500),
        workerMemoryMb: 64,
        reclaimerMemoryMb: 20_000,
        maxBatchingWindow: Duration.minutes(6),
        reclaimSchedule: Duration.minutes(90),
        claimBatchSize: 0,
      }),
    ).toEqual([
      "workerTimeout must be whole seconds from 1 s to 900 s, got 16 minutes",
      "reclaimerTimeout must be whole seconds from 1 s to 900 s, got 1 second 500 millis",
      "maxBatchingWindow must be whole seconds from 0 s to 300 s, got 6 minutes",
      "reclaimSchedule must be whole minutes from 1 to 60 (EventBridge rates are at least 1 minute), got 1 hour 30 minutes",
      "workerMemoryMb must be an integer from 128 to 10240 MB, got 64",
      "reclaimerMemoryMb must be an integer from 128 to 10240 MB, got 20000",
      "claimBatchSize must be an integer from 1 to 100, got 0",
    ]);
  });

  it("takes runtime 22 or 24 and refuses any other, naming both", () => {
    expect(problems({ runtime: 22 })).toEqual([]);
    expect(problems({ runtime: 24 })).toEqual([]);
    expect(problems({ runtime: 20 as never })).toEqual([
      "runtime must be 22 or 24 (the Node.js major version: Lambda nodejs<N>.x, esbuild target node<N>), got 20",
    ]);
    expect(problems({ runtime: "nodejs24.x" as never })).toEqual([
      'runtime must be 22 or 24 (the Node.js major version: Lambda nodejs<N>.x, esbuild target node<N>), got "nodejs24.x"',
    ]);
  });

  it("checks the secret ARN and the alarm settings", () => {
    const stack = new Stack();
    expect(
      problems({
        upstashSecretArn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:leaseq",
        alarmEmail: "oncall",
        alarmTopic: Topic.fromTopicArn(stack, "T", "arn:aws:sns:eu-west-1:123456789012:t"),
        oldestReadyAgeAlarmMs: 10,
        leaseOverdueAlarmMs: 1.5,
      }),
    ).toEqual([
      'upstashSecretArn must be a complete Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>), got "arn:aws:secretsmanager:eu-west-1:123456789012:secret:leaseq"',
      'alarmEmail must be an email address, got "oncall"',
      'alarmEmail and alarmTopic are exclusive: give one or neither, got both (alarmEmail "oncall")',
      "oldestReadyAgeAlarmMs must be an integer from 1000 to 86400000 ms, got 10",
      "leaseOverdueAlarmMs must be an integer from 1000 to 86400000 ms, got 1.5",
    ]);
  });
});

describe("alarm props", () => {
  it("takes the oldest waiting age under its name or its former one, not both", () => {
    expect(problems({ oldestWaitingAgeAlarmMs: 60_000 })).toEqual([]);
    expect(problems({ oldestReadyAgeAlarmMs: 60_000 })).toEqual([]);
    expect(resolveSettings({ ...REQUIRED_PROPS, oldestReadyAgeAlarmMs: 60_000 }).oldestWaitingAgeAlarmMs).toBe(60_000);
    expect(problems({ oldestWaitingAgeAlarmMs: 999 })).toEqual([
      "oldestWaitingAgeAlarmMs must be an integer from 1000 to 86400000 ms, got 999",
    ]);
    expect(problems({ oldestWaitingAgeAlarmMs: 60_000, oldestReadyAgeAlarmMs: 90_000 })).toEqual([
      "oldestWaitingAgeAlarmMs and oldestReadyAgeAlarmMs (its former name) are exclusive: give oldestWaitingAgeAlarmMs only, got both (oldestReadyAgeAlarmMs 90000)",
    ]);
  });

  it("applies the failed-rate defaults, its window rounded up to whole reclaimer runs", () => {
    const settings = (props: Partial<LeaseQueueProps>) => resolveSettings({ ...REQUIRED_PROPS, ...props });
    expect(settings({}).failedRateAlarm).toEqual({ percent: 1, periodMinutes: 15, minFailed: 5 });
    expect(settings({ reclaimSchedule: Duration.minutes(4) }).failedRateAlarm).toMatchObject({ periodMinutes: 16 });
    expect(settings({ reclaimSchedule: Duration.minutes(60) }).failedRateAlarm).toMatchObject({ periodMinutes: 60 });
    expect(settings({ failedRateAlarm: { percent: 0 } }).failedRateAlarm).toEqual({
      percent: 0,
      periodMinutes: 15,
      minFailed: 5,
    });
    expect(settings({ failedRateAlarm: false }).failedRateAlarm).toBe(false);
    expect(settings({ functionAlarms: {} }).functionAlarms).toEqual({
      errorPercent: 5,
      throttlePercent: 10,
      breachingMinutes: 3,
      windowMinutes: 5,
    });
    // A window shorter than the default 3 breaching minutes takes them all.
    expect(settings({ functionAlarms: { windowMinutes: 2 } }).functionAlarms).toMatchObject({ breachingMinutes: 2 });
    expect(settings({ functionAlarms: false }).functionAlarms).toBe(false);
  });

  it("refuses a failed-rate alarm it cannot build, naming the field, what is allowed and the value", () => {
    expect(
      problems({
        reclaimSchedule: Duration.minutes(5),
        failedRateAlarm: { percent: 100, periodMinutes: 12, minFailed: 0 },
      }),
    ).toEqual([
      "failedRateAlarm.periodMinutes must be whole minutes from 5 to 1440, a multiple of reclaimSchedule (5 min: each window holds whole reclaimer runs), got 12",
      "failedRateAlarm.percent must be a number from 0 up to (not including) 100: the alarm fires above it, got 100",
      "failedRateAlarm.minFailed must be an integer from 1 to 1000000, got 0",
    ]);
    expect(problems({ failedRateAlarm: { percent: -1, periodMinutes: 1441 } })).toEqual([
      "failedRateAlarm.periodMinutes must be whole minutes from 1 to 1440, a multiple of reclaimSchedule (1 min: each window holds whole reclaimer runs), got 1441",
      "failedRateAlarm.percent must be a number from 0 up to (not including) 100: the alarm fires above it, got -1",
    ]);
    expect(problems({ failedRateAlarm: { percent: Number.NaN, periodMinutes: 2.5, minFailed: 1.5 } })).toEqual([
      "failedRateAlarm.periodMinutes must be whole minutes from 1 to 1440, a multiple of reclaimSchedule (1 min: each window holds whole reclaimer runs), got 2.5",
      "failedRateAlarm.percent must be a number from 0 up to (not including) 100: the alarm fires above it, got NaN",
      "failedRateAlarm.minFailed must be an integer from 1 to 1000000, got 1.5",
    ]);
    expect(problems({ failedRateAlarm: { percent: "2" as never, precent: 2 } as never })).toEqual([
      'failedRateAlarm has no field "precent"; its fields: percent, periodMinutes, minFailed',
      'failedRateAlarm.percent must be a number from 0 up to (not including) 100: the alarm fires above it, got "2"',
    ]);
    expect(problems({ failedRateAlarm: true as never })).toEqual([
      "failedRateAlarm must be false (no such alarm) or an object of percent, periodMinutes, minFailed, got true",
    ]);
  });

  it("refuses function alarms it cannot build, naming the field, what is allowed and the value", () => {
    expect(
      problems({
        functionAlarms: {
          errorPercent: 150,
          throttlePercent: Number.POSITIVE_INFINITY,
          breachingMinutes: 6,
          windowMinutes: 5,
        },
      }),
    ).toEqual([
      "functionAlarms.errorPercent must be a number from 0 up to (not including) 100: the alarm fires above it, got 150",
      "functionAlarms.throttlePercent must be a number from 0 up to (not including) 100: the alarm fires above it, got Infinity",
      "functionAlarms.breachingMinutes must be an integer from 1 to 5 (at most windowMinutes), got 6",
    ]);
    // A refused window is reported once; breachingMinutes is held to the widest window meanwhile.
    expect(problems({ functionAlarms: { breachingMinutes: 0, windowMinutes: 61 } })).toEqual([
      "functionAlarms.windowMinutes must be an integer from 1 to 60, got 61",
      "functionAlarms.breachingMinutes must be an integer from 1 to 60 (at most windowMinutes), got 0",
    ]);
    expect(problems({ functionAlarms: null as never })).toEqual([
      "functionAlarms must be false (no such alarm) or an object of errorPercent, throttlePercent, breachingMinutes, windowMinutes, got null",
    ]);
  });

  it("reports an alarm problem with the others in one error", () => {
    const build = () =>
      new LeaseQueue(new Stack(new App({ context: SKIP_BUNDLING }), "Bad"), "Queue", {
        ...REQUIRED_PROPS,
        maxConcurrency: 1,
        failedRateAlarm: { percent: 101 },
      });
    expect(build).toThrow(
      [
        "LeaseQueue: 2 invalid prop(s):",
        "  - failedRateAlarm.percent must be a number from 0 up to (not including) 100: the alarm fires above it, got 101",
        "  - maxConcurrency must be an integer from 2 to 1000, got 1",
      ].join("\n"),
    );
  });
});

describe("context (cdk deploy -c key=value)", () => {
  it("reaches the construct, numbers converted from strings", () => {
    const app = new App({
      context: {
        ...SKIP_BUNDLING,
        queueName: "orders",
        batchSize: "5",
        maxConcurrency: "4",
        maxReceiveCount: "2",
        workerTimeoutSeconds: "120",
        reclaimScheduleMinutes: "2",
        alarmEmail: "oncall@example.com",
        fifo: "true",
        runtime: "24",
      },
    });
    const stack = new LeaseqStack(app, "Context", { leaseQueue: propsFromContext(app.node) });
    const template = Template.fromStack(stack);
    template.hasResourceProperties("AWS::Lambda::EventSourceMapping", { BatchSize: 5 });
    template.hasResourceProperties("AWS::Lambda::EventSourceMapping", { ScalingConfig: { MaximumConcurrency: 4 } });
    template.hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 720 });
    template.hasResourceProperties("AWS::SQS::Queue", { FifoQueue: true });
    template.hasResourceProperties("AWS::Events::Rule", { ScheduleExpression: "rate(2 minutes)" });
    template.hasResourceProperties("AWS::SNS::Subscription", { Endpoint: "oncall@example.com" });
    template.allResourcesProperties("AWS::Lambda::Function", { Runtime: "nodejs24.x" });
    expect(stack.leaseQueue.settings).toMatchObject({ queueName: "orders", maxReceiveCount: 2 });
  });

  it("reports a value that is not a number with the context key's prop", () => {
    const app = new App({ context: { ...SKIP_BUNDLING, batchSize: "ten" } });
    expect(() => new LeaseqStack(app, "Context", { leaseQueue: propsFromContext(app.node) })).toThrow(
      "batchSize must be an integer from 1 to 10 (up to 10000 needs maxBatchingWindow ≥ 1 s), got NaN",
    );
  });

  it("synthesizes an environment-agnostic stack: no account or region needed", () => {
    const stack = new LeaseqStack(new App({ context: SKIP_BUNDLING }), "Agnostic");
    expect(stack.environment).toBe("aws://unknown-account/unknown-region");
  });
});

describe("declared schedules at synth", () => {
  const handler = () => {};
  it("refuses a cron croner cannot read and a zone that does not exist, each named", () => {
    const found = problems({
      tasks: {
        types: { report: { handler } },
        schedules: {
          typo: { cron: "0 25 * * *", type: "report" },
          mars: { cron: "0 3 * * *", tz: "Mars/Olympus", type: "report" },
          nightly: { cron: "0 3 * * *", tz: "Europe/Berlin", type: "report" },
        },
      } as unknown as LeaseQueueProps["tasks"],
    });
    expect(found).toHaveLength(2);
    expect(found[0]).toMatch(
      /^tasks: defineTasks: schedule "typo": 1 problem: cron "0 25 \* \* \*" is not valid: .*hour/i,
    );
    expect(found[1]).toMatch(/^tasks: defineTasks: schedule "mars": 1 problem: tz must be an IANA time zone/);
  });

  it("refuses a schedule finer than the reclaimer's period allows, and says the bound", () => {
    const tasks = defineTasks({
      types: { report: { handler } },
      schedules: { fine: { every: 30_000, type: "report" } },
    });
    expect(problems({ tasks, reclaimSchedule: Duration.minutes(60) })).toEqual([
      'tasks: schedule "fine" is finer than the reclaimer\'s period allows: with reclaimSchedule 60 min a schedule may have at most 100 slots in 3610 s (one every 36100 ms or more)',
    ]);
    // With the default period of a minute, every 30 s is fine.
    expect(problems({ tasks })).toEqual([]);
  });

  it("refuses, in defineTasks, a schedule of a type that is not declared and a name that cannot make task ids", () => {
    expect(() =>
      defineTasks({
        types: { report: { handler } },
        schedules: { "a@b": { every: 60_000, type: "report" }, other: { every: 60_000, type: "sweep" as "report" } },
      }),
    ).toThrow(
      /schedule name must be 1-64 characters of A-Z a-z 0-9 _ \. -, got "a@b"[\s\S]*schedule "other": type "sweep" is not declared; declared: report/,
    );
  });
});
