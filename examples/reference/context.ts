import { Duration } from "aws-cdk-lib";
import type { Node } from "constructs";
import type { LeaseQueueProps, NodeRuntime } from "leaseq/cdk";

/**
 * LeaseQueue props from `cdk deploy -c key=value`. Every value arrives as a string; numbers are
 * converted here and checked by the construct, which names the prop and the value given.
 */
export function propsFromContext(node: Node): Partial<LeaseQueueProps> {
  const text = (key: string): string | undefined => {
    const value = node.tryGetContext(key);
    return value === undefined || value === "" ? undefined : String(value);
  };
  const number = (key: string): number | undefined => {
    const value = text(key);
    return value === undefined ? undefined : Number(value);
  };
  const seconds = number("workerTimeoutSeconds");
  const minutes = number("reclaimScheduleMinutes");
  const window = number("maxBatchingWindowSeconds");
  const fifo = text("fifo");
  return {
    // "true" or "false"; anything else reaches the construct as given and is refused there.
    fifo: fifo === undefined ? undefined : fifo === "true" ? true : fifo === "false" ? false : (fifo as never),
    queueName: text("queueName"),
    upstashSecretArn: text("upstashSecretArn"),
    alarmEmail: text("alarmEmail"),
    dashboardName: text("dashboardName"),
    batchSize: number("batchSize"),
    maxConcurrency: number("maxConcurrency"),
    maxReceiveCount: number("maxReceiveCount"),
    claimBatchSize: number("claimBatchSize"),
    // 22 or 24; any other number reaches the construct as given and is refused there.
    runtime: number("runtime") as NodeRuntime | undefined,
    workerTimeout: seconds === undefined ? undefined : Duration.seconds(seconds),
    maxBatchingWindow: window === undefined ? undefined : Duration.seconds(window),
    reclaimSchedule: minutes === undefined ? undefined : Duration.minutes(minutes),
  };
}
