import { fileURLToPath } from "node:url";
import { CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { LeaseQueue, type LeaseQueueProps } from "leaseq/cdk";
import tasks from "./tasks.js";

/** The reference deployment's worker entry (./worker.ts), as a user's own entry would be. */
export const REFERENCE_WORKER_ENTRY = fileURLToPath(new URL("./worker.ts", import.meta.url));

/** The reference deployment: one LeaseQueue and the outputs a user needs after `cdk deploy`. */
export class LeaseqStack extends Stack {
  readonly leaseQueue: LeaseQueue;

  constructor(scope: Construct, id: string, props: StackProps & { leaseQueue?: Partial<LeaseQueueProps> } = {}) {
    super(scope, id, props);
    this.leaseQueue = new LeaseQueue(this, "LeaseQueue", {
      tasks,
      workerEntry: REFERENCE_WORKER_ENTRY,
      ...props.leaseQueue,
    });
    const { queue, deadLetterQueue, wakeQueue, worker, reclaimer, monitoring, secret } = this.leaseQueue;
    new CfnOutput(this, "QueueUrl", { value: queue.queueUrl, description: 'Task queue: send {"tasks":[...]} here' });
    new CfnOutput(this, "WakeQueueUrl", {
      value: wakeQueue.queueUrl,
      description: "Wake-ups start workers: LEASEQ_WAKE_QUEUE_URL for producer.enqueue and leaseq resume",
    });
    new CfnOutput(this, "DeadLetterQueueUrl", {
      value: deadLetterQueue.queueUrl,
      description: "Invalid input and messages out of receives: leaseq dlq show / redrive",
    });
    new CfnOutput(this, "WorkerFunctionName", { value: worker.functionName });
    new CfnOutput(this, "ReclaimerFunctionName", { value: reclaimer.functionName });
    new CfnOutput(this, "DashboardName", { value: monitoring.dashboard.dashboardName });
    new CfnOutput(this, "UpstashSecretArn", {
      value: secret.secretArn,
      description: 'Put {"url":"https://...upstash.io","token":"..."} here',
    });
  }
}
