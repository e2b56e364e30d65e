import { randomUUID } from "node:crypto";
import type { Context, ScheduledEvent, SQSEvent, SQSRecord } from "aws-lambda";
import { inject } from "vitest";
import type { Adapter } from "./stores.js";

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

/** The environment a function needs to reach the test Redis over `adapter`. */
export function functionEnv(
  adapter: Adapter,
  queue: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  const connection: Record<string, string> =
    adapter.name === "upstash"
      ? { UPSTASH_REDIS_REST_URL: inject("upstashUrl"), UPSTASH_REDIS_REST_TOKEN: inject("upstashToken") }
      : { REDIS_URL: inject("redisUrl") };
  return { LEASEQ_QUEUE: queue, LEASEQ_CLOCK_SKEW_MS: "0", ...connection, ...extra };
}

/**
 * This process's environment without any Redis connection variable: a child given it plus
 * functionEnv() sees exactly one connection, as the connection rule requires.
 */
export function envWithoutConnection(): Record<string, string | undefined> {
  const env = { ...process.env };
  for (const name of ["REDIS_URL", "UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "UPSTASH_SECRET_ARN"])
    delete env[name];
  return env;
}

/** Runs `fn` and returns what it wrote to stdout (Powertools logs and EMF go there). */
export async function captureStdout<T>(
  fn: () => Promise<T>,
  options: { stderr?: boolean } = {},
): Promise<{ result: T; lines: string[] }> {
  const chunks: string[] = [];
  // Powertools writes WARN and ERROR lines to stderr: `stderr: true` collects those too.
  const streams = options.stderr ? [process.stdout, process.stderr] : [process.stdout];
  const writes = streams.map((stream) => stream.write.bind(stream));
  for (const stream of streams) {
    stream.write = ((chunk: string | Uint8Array, ..._rest: unknown[]) => {
      chunks.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString());
      return true;
    }) as typeof stream.write;
  }
  try {
    const result = await fn();
    return { result, lines: chunks.join("").split("\n").filter(Boolean) };
  } finally {
    streams.forEach((stream, i) => {
      stream.write = writes[i];
    });
  }
}
