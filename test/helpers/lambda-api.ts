import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback HTTP server standing in for the Lambda API: answers every request `status` (202, as
 * Lambda accepts an async invoke; a 429 or 500 plays a throttled or failing API) and records it, so
 * a test can assert what the reclaimer's drain invocation sent (path, invocation type, body).
 */
export async function recordingLambdaApi(status = 202) {
  const calls: Array<{ url: string; headers: IncomingMessage["headers"]; body: string }> = [];
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      calls.push({ url: request.url ?? "", headers: request.headers, body });
      const answer = status === 202 ? "" : JSON.stringify({ Type: "Service", message: `stand-in answered ${status}` });
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (status === 429) headers["x-amzn-errortype"] = "TooManyRequestsException";
      if (status >= 500) headers["x-amzn-errortype"] = "ServiceException";
      response.writeHead(status, headers).end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, calls, close: () => new Promise((resolve) => server.close(resolve)) };
}
