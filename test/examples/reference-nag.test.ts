import { App, Aspects, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { suppressNagFindings } from "../../examples/reference/nag.js";
import { LeaseqStack } from "../../examples/reference/stack.js";
import { defineTasks } from "../../functions/tasks.js";
import { LeaseQueue } from "../../infra/lease-queue.js";
import type { LeaseQueueProps } from "../../infra/settings.js";
import { REQUIRED_PROPS, SKIP_BUNDLING } from "../infra/synth.js";

/** The reference stack checked by cdk-nag AwsSolutions, as examples/reference/app.ts does it. */
function checked(props: Partial<LeaseQueueProps>, suppress = true): Stack {
  const app = new App({ context: SKIP_BUNDLING });
  const stack = new LeaseqStack(app, "Nag", { leaseQueue: props });
  if (suppress) suppressNagFindings(stack.leaseQueue);
  // cdk-nag 2.x is an Aspect that reports through Annotations: findings are read back from them.
  Aspects.of(app).add(new AwsSolutionsChecks());
  return stack;
}

const findings = (stack: Stack, kind: "findError" | "findWarning") =>
  Annotations.fromStack(stack)
    [kind]("*", Match.stringLikeRegexp("AwsSolutions-"))
    .map((m) => `${m.id}: ${String(m.entry.data).split(":")[0]}`);

/** The cdk-nag suppressions recorded in the template's resource metadata: rule id and reason. */
function suppressions(stack: Stack): Array<{ id: string; reason: string }> {
  const resources: Record<
    string,
    { Metadata?: { cdk_nag?: { rules_to_suppress?: Array<{ id: string; reason: string }> } } }
  > = Template.fromStack(stack).toJSON().Resources;
  return Object.values(resources).flatMap((resource) => resource.Metadata?.cdk_nag?.rules_to_suppress ?? []);
}

describe("cdk-nag AwsSolutions", () => {
  for (const [name, props] of [
    ["with a created secret and an alarm email", { alarmEmail: "oncall@example.com" }],
    [
      "with an imported secret and no alarm topic",
      { upstashSecretArn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:leaseq/upstash-AbC123" },
    ],
    ["on Node.js 24", { runtime: 24 }],
    [
      "on a queue another deployment shares (acceptTypes: sends to wake queues by tag)",
      { tasks: defineTasks({ types: { echo: { handler: () => {} } }, acceptTypes: ["report"] }) },
    ],
  ] as const) {
    it(`finds no unsuppressed error or warning ${name}`, () => {
      const stack = checked(props);
      expect(findings(stack, "findError")).toEqual([]);
      expect(findings(stack, "findWarning")).toEqual([]);
    });
  }

  it("finds nothing unsuppressed in two queues sharing one secret, each given its own suppressions", () => {
    const app = new App({ context: SKIP_BUNDLING });
    const stack = new Stack(app, "Shared");
    const emails = new LeaseQueue(stack, "Emails", { ...REQUIRED_PROPS, queueName: "emails" });
    const ledger = new LeaseQueue(stack, "Ledger", { ...REQUIRED_PROPS, queueName: "ledger", secret: emails.secret });
    for (const leaseQueue of [emails, ledger]) suppressNagFindings(leaseQueue);
    Aspects.of(app).add(new AwsSolutionsChecks());
    expect(findings(stack, "findError")).toEqual([]);
    expect(findings(stack, "findWarning")).toEqual([]);
    expect(suppressions(stack).filter((s) => s.id === "AwsSolutions-SMG4")).toHaveLength(1);
  });

  it("would fail without the suppressions: they are needed, not decoration", () => {
    const stack = checked({}, false);
    expect(findings(stack, "findError").sort()).toEqual([
      "/Nag/LeaseQueue/Intake/Resource: AwsSolutions-L1",
      "/Nag/LeaseQueue/Reclaimer/Resource: AwsSolutions-L1",
      "/Nag/LeaseQueue/UpstashSecret/Resource: AwsSolutions-SMG4",
      "/Nag/LeaseQueue/WakeQueue/Resource: AwsSolutions-SQS3",
      "/Nag/LeaseQueue/Worker/Resource: AwsSolutions-L1",
    ]);
  });

  it("suppresses only the Node.js runtime version, the rotation of a created secret and the wake queue's dead-letter queue, each with its reason", () => {
    const recorded = suppressions(checked({}));
    expect(recorded.map((s) => s.id).sort()).toEqual([
      "AwsSolutions-L1",
      "AwsSolutions-L1",
      "AwsSolutions-L1",
      "AwsSolutions-SMG4",
      "AwsSolutions-SQS3",
    ]);
    for (const { reason } of recorded) expect(reason.length).toBeGreaterThan(80);
  });
});
