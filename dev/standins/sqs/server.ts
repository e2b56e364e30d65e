import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { SqsBroker } from "./broker.js";
import { SqsError, sqsErrors } from "./errors.js";
import type { Operation } from "./operations.js";
import { messageOperations } from "./ops-messages.js";
import { queueOperations } from "./ops-queues.js";
import type { Input } from "./params.js";

/** The operations the stand-in serves. */
export const operations: Record<string, Operation> = { ...queueOperations, ...messageOperations };

// Real SQS operations it does not serve: they answer UnsupportedOperation rather than "unknown".
const UNSERVED = [
  "AddPermission",
  "CancelMessageMoveTask",
  "CreateQueue",
  "DeleteQueue",
  "ListDeadLetterSourceQueues",
  "ListQueueTags",
  "RemovePermission",
  "SetQueueAttributes",
  "TagQueue",
  "UntagQueue",
];

const JSON_1_0 = "application/x-amz-json-1.0";
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** A listening SQS endpoint. */
export interface SqsServer {
  /** The endpoint for `new SQSClient({ endpoint })`: `http://127.0.0.1:<port>`. */
  url: string;
  /** Ends pending long polls (they answer no messages), stops listening, and waits for open requests. */
  close(): Promise<void>;
}

/**
 * Serves the queues of `broker` over the SQS JSON protocol (AWS JSON 1.0, as @aws-sdk/client-sqs
 * speaks it since 3.446): `POST /` with `X-Amz-Target: AmazonSQS.<Operation>`. Errors carry the
 * `__type` body and the `x-amzn-query-error` header, so the SDK throws its named exceptions.
 * Signatures are not verified, only required: it binds to 127.0.0.1. While it listens, the broker
 * knows its origin, so queue URLs can be given without it (`broker.urlOf`); a fixed `port` gives
 * the same URLs on every start. A broker with a store answers each call once its changes are
 * stored: a message acknowledged to a producer is in Redis. Rejects when the port is taken.
 */
export async function startSqsServer(broker: SqsBroker, port = 0): Promise<SqsServer> {
  const closing = new AbortController();
  const server = createServer((request, response) => {
    // A client that hangs up ends its long poll, so the messages are not received for nobody.
    const gone = new AbortController();
    response.on("close", () => {
      if (!response.writableFinished) gone.abort();
    });
    const signal = AbortSignal.any([gone.signal, closing.signal]);
    handle(request, signal)
      .then((body) => reply(response, 200, body, undefined, closing.signal.aborted))
      .catch((error: unknown) => {
        const sqsError =
          error instanceof SqsError
            ? error
            : new SqsError("InternalError", `local SQS stand-in: ${(error as Error).message}`, "InternalError", 500);
        reply(
          response,
          sqsError.status,
          { __type: `com.amazonaws.sqs#${sqsError.type}`, message: sqsError.message },
          sqsError,
          closing.signal.aborted,
        );
      });
  });

  async function handle(request: IncomingMessage, signal: AbortSignal): Promise<Input> {
    const target = String(request.headers["x-amz-target"] ?? "");
    const contentType = String(request.headers["content-type"] ?? "");
    if (request.method !== "POST" || request.url?.split("?")[0] !== "/" || !contentType.startsWith(JSON_1_0)) {
      throw new SqsError(
        "InvalidAction",
        `local SQS stand-in: ${request.method} ${request.url} (${contentType || "no content type"}) is not served; it speaks the SQS JSON protocol only: POST / with Content-Type ${JSON_1_0} and X-Amz-Target AmazonSQS.<Operation>, as @aws-sdk/client-sqs 3.446 and later send`,
      );
    }
    if (!String(request.headers.authorization ?? "").startsWith("AWS4-HMAC-SHA256 ")) {
      throw new SqsError(
        "MissingAuthenticationToken",
        "Request is missing Authentication Token: sign it with SigV4 (any credentials do locally)",
        "MissingAuthenticationToken",
        403,
      );
    }
    const operation = target.startsWith("AmazonSQS.") ? target.slice("AmazonSQS.".length) : "";
    const run = Object.hasOwn(operations, operation) ? operations[operation] : undefined;
    if (run === undefined) throw unknownOperation(target, operation);
    const output = await run(await readJson(request), { broker, origin: url, signal });
    await broker.settled();
    return output;
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      const reason = error.code === "EADDRINUSE" ? "it is in use (another stand-in still running?)" : error.message;
      reject(new Error(`the SQS stand-in cannot listen on 127.0.0.1:${port}: ${reason}`, { cause: error }));
    });
    server.listen(port, "127.0.0.1", resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  broker.addOrigin(url);
  return {
    url,
    close: async () => {
      broker.removeOrigin(url);
      closing.abort();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function unknownOperation(target: string, operation: string): SqsError {
  const supported = `it supports ${Object.keys(operations).sort().join(", ")}`;
  if (UNSERVED.includes(operation)) {
    return sqsErrors.unsupportedOperation(`local SQS stand-in: ${operation} is not supported; ${supported}`);
  }
  return new SqsError(
    "UnknownOperationException",
    `local SQS stand-in: unknown operation ${JSON.stringify(target || "(no X-Amz-Target)")}; ${supported}`,
    "UnknownOperation",
  );
}

async function readJson(request: IncomingMessage): Promise<Input> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of request) {
    bytes += (chunk as Buffer).length;
    if (bytes > MAX_REQUEST_BYTES)
      throw new SqsError("RequestEntityTooLarge", "The request is too large.", "RequestEntityTooLarge", 413);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  let input: unknown;
  try {
    input = text === "" ? {} : JSON.parse(text);
  } catch {
    throw new SqsError("SerializationException", "The request body is not valid JSON.");
  }
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new SqsError("SerializationException", "The request body must be a JSON object.");
  }
  return input as Input;
}

function reply(response: ServerResponse, status: number, body: unknown, error?: SqsError, closing = false): void {
  if (response.destroyed) return;
  const headers: Record<string, string> = { "Content-Type": JSON_1_0, "x-amzn-RequestId": randomUUID() };
  // Once the server closes, an answer ends its connection, so a kept-alive socket does not hold close() up.
  if (closing) headers.Connection = "close";
  // The SDK (awsQueryCompatible) reads the error code from this header before `__type`.
  if (error) headers["x-amzn-query-error"] = `${error.queryCode};${error.status >= 500 ? "Receiver" : "Sender"}`;
  response.writeHead(status, headers).end(JSON.stringify(body));
}
