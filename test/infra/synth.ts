import { App, type StackProps } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { vi } from "vitest";
import { LeaseqStack, REFERENCE_WORKER_ENTRY } from "../../examples/reference/stack.js";
import { defineTasks } from "../../functions/tasks.js";
import { type LeaseQueueProps, LeaseQueuePropsError, resolveSettings } from "../../infra/settings.js";

// Every infra test file imports this module. The first synth in a worker loads aws-cdk-lib, which
// takes over 10 s on a busy 2-CPU machine; the shared 30 s default timeout is too tight for that.
vi.setConfig({ testTimeout: 120_000 });

/** App context that skips asset bundling: template tests need no esbuild run and no functions/ code. */
export const SKIP_BUNDLING = { "aws:cdk:bundling-stacks": [] };

/** Synthesizes the reference stack with `leaseQueue` props, bundling skipped. */
export function synth(
  leaseQueue: Partial<LeaseQueueProps> = {},
  context: Record<string, unknown> = {},
  stackProps: StackProps = {},
) {
  const app = new App({ context: { ...SKIP_BUNDLING, ...context } });
  const stack = new LeaseqStack(app, "Test", { ...stackProps, leaseQueue });
  return { app, stack, template: Template.fromStack(stack) };
}

/** The single resource of `type` in `template`, or throws when there are none or several. */
export function onlyResource(template: Template, type: string, props: Record<string, unknown> = {}) {
  const found = Object.entries(template.findResources(type, props));
  if (found.length !== 1) throw new Error(`expected one ${type}, found ${found.length}`);
  const [logicalId, resource] = found[0];
  return { logicalId, properties: resource.Properties as Record<string, unknown> };
}

/** The props every LeaseQueue needs: one task type and the reference worker entry. */
export const REQUIRED_PROPS: Pick<LeaseQueueProps, "tasks" | "workerEntry"> = {
  tasks: defineTasks({ types: { echo: { leaseMs: 30_000, handler: () => {} } } }),
  workerEntry: REFERENCE_WORKER_ENTRY,
};

/** The problems resolveSettings reports for `props` (over REQUIRED_PROPS), or [] when it accepts them. */
export function problems(props: Partial<LeaseQueueProps>): string[] {
  try {
    resolveSettings({ ...REQUIRED_PROPS, ...props });
    return [];
  } catch (error) {
    if (error instanceof LeaseQueuePropsError) return error.problems;
    throw error;
  }
}

/** The stack's task queue (its redrive policy), dead-letter queue (14 days) and wake queue (an hour). */
export const taskQueue = (template: Template) =>
  onlyResource(template, "AWS::SQS::Queue", { Properties: { RedrivePolicy: Match.anyValue() } });
export const deadLetterQueue = (template: Template) =>
  onlyResource(template, "AWS::SQS::Queue", { Properties: { MessageRetentionPeriod: 1_209_600 } });
export const wakeQueue = (template: Template) =>
  onlyResource(template, "AWS::SQS::Queue", { Properties: { MessageRetentionPeriod: 3600 } });

/** Every IAM policy statement in the template. */
export function statements(template: Template): Array<Record<string, unknown>> {
  return Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
    (policy) => policy.Properties.PolicyDocument.Statement,
  );
}
