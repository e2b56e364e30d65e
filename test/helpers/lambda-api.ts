import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback HTTP server standing in for the Lambda API: answers every request 202 and records it,
 * so a test can assert what the reclaimer's kick sent (path, invocation type, body).
 */
export async function recordingLambdaApi() {
  const calls: Array<{ url: string; headers: IncomingMessage["headers"]; body: string }> = [];
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      calls.push({ url: request.url ?? "", headers: request.headers, body });
      response.writeHead(202, { "content-type": "application/json" }).end("");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, calls, close: () => new Promise((resolve) => server.close(resolve)) };
}
