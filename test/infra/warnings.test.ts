import { App, Annotations as ConstructAnnotations, Duration, Stack } from "aws-cdk-lib";
import { Annotations, Match } from "aws-cdk-lib/assertions";
import { Topic } from "aws-cdk-lib/aws-sns";
import { describe, expect, it } from "vitest";
import { defineTasks } from "../../functions/tasks.js";
import { LeaseQueue } from "../../infra/lease-queue.js";
import { type LeaseQueueProps, resolveSettings } from "../../infra/settings.js";
import { LEASE_QUEUE_WARNINGS, synthWarnings } from "../../infra/warnings.js";
import { REQUIRED_PROPS, SKIP_BUNDLING } from "./synth.js";

/** A stack holding one LeaseQueue "Jobs" with `props`. */
function queueStack(props: Partial<LeaseQueueProps>) {
  const stack = new Stack(new App({ context: SKIP_BUNDLING }), "Warned");
  const leaseQueue = new LeaseQueue(stack, "Jobs", { ...REQUIRED_PROPS, queueName: "jobs", ...props });
  return { stack, leaseQueue };
}

/** The warnings synth prints for `stack`, as "<path>: <message>". */
const warnings = (stack: Stack) =>
  Annotations.fromStack(stack)
    .findWarning("*", Match.anyValue())
    .map((message) => `${message.id}: ${String(message.entry.data)}`);

const handler = () => {};
/** One type with a 10-minute lease beside types of half a minute. */
const oneLongType = defineTasks({
  types: {
    echo: { leaseMs: 30_000, handler },
    "send-webhook": { leaseMs: 20_000, handler },
    report: { leaseMs: 600_000, handler },
  },
});

describe("synth warnings", () => {
  it("alarms without an action: names the props that give them one", () => {
    const { stack } = queueStack({});
    expect(warnings(stack)).toEqual([
      '/Warned/Jobs: the 12 alarms of queue "jobs" notify nobody: pass alarmEmail (an address, subscribed to a new SNS topic) or alarmTopic (an SNS topic of yours) to LeaseQueue [ack: leaseq:alarmsWithoutActions]',
    ]);
  });

  it("none with alarmEmail or alarmTopic", () => {
    expect(warnings(queueStack({ alarmEmail: "oncall@example.com" }).stack)).toEqual([]);
    const stack = new Stack(new App({ context: SKIP_BUNDLING }), "Topic");
    const alarmTopic = new Topic(stack, "Oncall");
    new LeaseQueue(stack, "Jobs", { ...REQUIRED_PROPS, alarmTopic });
    expect(warnings(stack)).toEqual([]);
  });

  it("one long lease: names the type, the worker and visibility timeouts it sets, and suggests a queue of its own", () => {
    const { stack } = queueStack({
      alarmEmail: "oncall@example.com",
      tasks: oneLongType,
      workerTimeout: Duration.minutes(11),
    });
    expect(warnings(stack)).toEqual([
      '/Warned/Jobs: task type "report" has a 600 s lease, more than 4 times the next longest ("echo", 30 s): this one type sets the worker timeout of queue "jobs" (660 s; the other types need 35 s) and the wake queue\'s visibility timeout (6 times that, 3960 s), and, unless its own concurrency leaves the other types slots, its long runs hold the worker slots they wait for. Consider a LeaseQueue of its own for "report" (docs/deploy.md, "When to split queues") [ack: leaseq:oneLongLease]',
    ]);
  });

  it("memory per task: names the concurrency, the memory, what to raise it to, and the tasks at once", () => {
    const { stack } = queueStack({
      alarmEmail: "oncall@example.com",
      workerMemoryMb: 256,
      tasks: defineTasks({ concurrency: 20, types: { echo: { handler } } }),
    });
    expect(warnings(stack)).toEqual([
      '/Warned/Jobs: the worker of queue "jobs" runs up to 20 tasks at once (the declaration\'s concurrency) in 256 MB, 12.8 MB each beside Node.js itself: raise workerMemoryMb (at least 320 MB) or lower concurrency. At most maxConcurrency (10) × 20 tasks run at once (docs/deploy.md, "Memory and concurrency") [ack: leaseq:memoryPerTask]',
    ]);
    // The defaults (256 MB, concurrency 10) are quiet.
    expect(warnings(queueStack({ alarmEmail: "oncall@example.com" }).stack)).toEqual([]);
  });

  it("can be acknowledged by id, on the queue or a scope above it", () => {
    const { stack, leaseQueue } = queueStack({ tasks: oneLongType, workerTimeout: Duration.minutes(11) });
    ConstructAnnotations.of(leaseQueue).acknowledgeWarning(LEASE_QUEUE_WARNINGS.oneLongLease, "reports are rare");
    ConstructAnnotations.of(stack).acknowledgeWarning(LEASE_QUEUE_WARNINGS.alarmsWithoutActions, "a test stack");
    expect(warnings(stack)).toEqual([]);
  });
});

describe("the one-long-lease rule", () => {
  /** The ids synthWarnings returns for these leases (ms), alarms given so only the lease rule speaks. */
  const leaseWarnings = (leases: Record<string, number>) => {
    const types = Object.fromEntries(Object.entries(leases).map(([name, leaseMs]) => [name, { leaseMs, handler }]));
    const settings = resolveSettings({
      ...REQUIRED_PROPS,
      alarmEmail: "oncall@example.com",
      workerTimeout: Duration.minutes(15),
      tasks: defineTasks({ types }),
    });
    return synthWarnings(settings, 7).map((warning) => warning.id);
  };

  it("warns when the longest lease is more than 4 times the next longest and over a minute", () => {
    expect(leaseWarnings({ short: 30_000, long: 120_001 })).toEqual([LEASE_QUEUE_WARNINGS.oneLongLease]);
    expect(leaseWarnings({ a: 10_000, b: 10_000, long: 840_000 })).toEqual([LEASE_QUEUE_WARNINGS.oneLongLease]);
  });

  it("is quiet at 4 times or less, for leases of a minute or less, for one type, and for two equally long types", () => {
    expect(leaseWarnings({ short: 30_000, long: 120_000 })).toEqual([]);
    expect(leaseWarnings({ short: 5_000, long: 60_000 })).toEqual([]);
    expect(leaseWarnings({ long: 840_000 })).toEqual([]);
    expect(leaseWarnings({ short: 10_000, long: 600_000, alsoLong: 600_000 })).toEqual([]);
  });
});
