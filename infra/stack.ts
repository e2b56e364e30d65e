import { CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { TASK_POLICIES } from "../functions/policies.js";
import { LeaseQueue } from "./lease-queue.js";
import type { LeaseQueueProps } from "./settings.js";

/**
 * Lease of each task type the worker runs, in ms, from the task declarations in functions/
 * (pure data plus handlers, no imports from shared/): the construct checks each against the worker
 * timeout at synth, so a type whose lease outlives the invocation fails `cdk synth`, not production.
 */
export const REFERENCE_TASK_LEASES_MS: Record<string, number> = Object.fromEntries(
  Object.entries(TASK_POLICIES).map(([type, policy]) => [type, policy.leaseMs]),
);

/** The reference deployment: one LeaseQueue and the outputs a user needs after `cdk deploy`. */
export class LeaseqStack extends Stack {
  readonly leaseQueue: LeaseQueue;

  constructor(scope: Construct, id: string, props: StackProps & { leaseQueue?: LeaseQueueProps } = {}) {
    super(scope, id, props);
    this.leaseQueue = new LeaseQueue(this, "LeaseQueue", {
      taskLeasesMs: REFERENCE_TASK_LEASES_MS,
      ...props.leaseQueue,
    });
    const { queue, worker, reclaimer, monitoring, secret } = this.leaseQueue;
    new CfnOutput(this, "QueueUrl", { value: queue.queueUrl, description: 'SQS queue: send {"tasks":[...]} here' });
    new CfnOutput(this, "WorkerFunctionName", { value: worker.functionName });
    new CfnOutput(this, "ReclaimerFunctionName", { value: reclaimer.functionName });
    new CfnOutput(this, "DashboardName", { value: monitoring.dashboard.dashboardName });
    new CfnOutput(this, "UpstashSecretArn", {
      value: secret.secretArn,
      description: 'Put {"url":"https://...upstash.io","token":"..."} here',
    });
  }
}
