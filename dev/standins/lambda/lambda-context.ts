import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";

/**
 * A Lambda context for one local invocation of `functionName`, with `timeoutMs` to run. Once
 * `shuttingDown()` is true it reports no time left, so the worker stops claiming and releases the
 * tasks it claimed but has not started, exactly as it does before a real timeout.
 */
export function lambdaContext(functionName: string, timeoutMs: number, shuttingDown: () => boolean): Context {
  const deadlineMs = Date.now() + timeoutMs;
  const unsupported = () => {
    throw new Error("the local stack supports async handlers only (no callback-style done/fail/succeed)");
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: "256",
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: "local",
    getRemainingTimeInMillis: () => (shuttingDown() ? 0 : Math.max(0, deadlineMs - Date.now())),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}
