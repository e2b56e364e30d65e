// Lambda event factories, without vitest: the test helpers re-export them (events.ts), and the
// fixtures that run in a process of their own import them from here.
import { randomUUID } from "node:crypto";
import type { Context, ScheduledEvent, SQSEvent, SQSRecord } from "aws-lambda";

/** An SQS record with `body` (a string is sent as is, anything else as JSON). */
export function sqsRecord(body: unknown, messageId: string = randomUUID()): SQSRecord {
  return {
    messageId,
    receiptHandle: `receipt-${messageId}`,
    body: typeof body === "string" ? body : JSON.stringify(body),
    attributes: {
      ApproximateReceiveCount: "1",
      SentTimestamp: String(Date.now()),
      SenderId: "AIDAEXAMPLE",
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:us-east-1:123456789012:leaseq",
    awsRegion: "us-east-1",
  };
}

export function sqsEvent(...records: SQSRecord[]): SQSEvent {
  return { Records: records };
}

export function scheduledEvent(): ScheduledEvent {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account: "123456789012",
    time: new Date().toISOString(),
    region: "us-east-1",
    resources: ["arn:aws:events:us-east-1:123456789012:rule/leaseq-reclaimer"],
    detail: {},
  };
}

/** A Lambda context whose remaining time is `remainingMs()` (default: 5 minutes, always). */
export function lambdaContext(remainingMs: () => number = () => 300_000): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: "leaseq-worker",
    functionVersion: "$LATEST",
    invokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:leaseq-worker",
    memoryLimitInMB: "512",
    awsRequestId: randomUUID(),
    logGroupName: "/aws/lambda/leaseq-worker",
    logStreamName: "stream",
    getRemainingTimeInMillis: remainingMs,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
