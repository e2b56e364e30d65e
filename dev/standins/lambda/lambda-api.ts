import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A function the stand-in can invoke: gets the parsed payload, returns the result. */
export type LocalFunction = (event: unknown) => Promise<unknown>;

/** The running stand-in: point LEASEQ_LAMBDA_ENDPOINT (the SDK's endpoint) at `url`. */
export interface LocalLambdaApi {
  url: string;
  /** Invocations received per function name. */
  invocations(): Record<string, number>;
  /** Async (Event) invocations still running. */
  inFlight(): number;
  /** Stops accepting invocations and waits for the running ones. */
  close(): Promise<void>;
}

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/**
 * A loopback stand-in for the Lambda Invoke API, as @aws-sdk/client-lambda calls it: POST
 * /2015-03-31/functions/{name}/invocations. `X-Amz-Invocation-Type: Event` answers 202 at once and
 * runs the function in the background (the reclaimer's drain invocation); RequestResponse answers
 * 200 with the result; DryRun 204. Requests are not signature-checked: it only binds to 127.0.0.1.
 */
export async function startLambdaApi(functions: Record<string, LocalFunction>): Promise<LocalLambdaApi> {
  const counts: Record<string, number> = {};
  const running = new Set<Promise<unknown>>();

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      reply(response, 500, { Type: "Service", message: `local Lambda API: ${(error as Error).message}` });
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const match = INVOKE_PATH.exec(request.url?.split("?")[0] ?? "");
    if (request.method !== "POST" || !match) {
      reply(response, 404, { Type: "User", message: `local Lambda API: no route ${request.method} ${request.url}` });
      return;
    }
    // The SDK sends a name or an ARN; the name is the last colon-separated part of an ARN.
    const name = decodeURIComponent(match[1]).split(":").at(-1) ?? "";
    const run = functions[name];
    if (run === undefined) {
      reply(response, 404, { Type: "User", message: `Function not found: ${name}` }, "ResourceNotFoundException");
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let event: unknown;
    try {
      event = text === "" ? {} : JSON.parse(text);
    } catch {
      reply(
        response,
        400,
        { Type: "User", message: "Could not parse request body into json" },
        "InvalidRequestContentException",
      );
      return;
    }
    const type = request.headers["x-amz-invocation-type"] ?? "RequestResponse";
    if (type === "DryRun") {
      reply(response, 204);
      return;
    }
    counts[name] = (counts[name] ?? 0) + 1;
    if (type === "Event") {
      reply(response, 202);
      // As Lambda's async invoke: the caller is not told how it went; the function logs its own errors.
      const job = run(event).catch(() => {});
      running.add(job);
      void job.finally(() => running.delete(job));
      return;
    }
    try {
      reply(response, 200, (await run(event)) ?? null);
    } catch (error) {
      response.setHeader("X-Amz-Function-Error", "Unhandled");
      reply(response, 200, { errorType: (error as Error).name, errorMessage: (error as Error).message });
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    invocations: () => ({ ...counts }),
    inFlight: () => running.size,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(running);
    },
  };
}

function reply(response: ServerResponse, status: number, body?: unknown, errorType?: string): void {
  if (errorType) response.setHeader("x-amzn-ErrorType", errorType);
  if (body === undefined) {
    response.writeHead(status).end();
    return;
  }
  response.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(body));
}
