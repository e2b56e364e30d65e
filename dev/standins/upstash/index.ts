// A local Upstash-compatible REST endpoint in front of a real redis-server, so the real
// @upstash/redis client (and leaseq's Upstash adapter) can run offline. It speaks the subset of
// the Upstash REST protocol the client uses: POST /, /pipeline and /multi-exec with JSON bodies.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Runner, runCommand, runPipeline, runTransaction } from "./execute.js";
import { Faults } from "./faults.js";
import { BadRequestError, type Outcome, parseJsonKeepingNumbers, toCommand, toCommands } from "./json.js";
import { ConnectionPool } from "./pool.js";
import { outcomeBody } from "./reply-body.js";
import { parseRedisUrl } from "./resp.js";
import { ScriptRewriter } from "./scripts.js";

export { type ArmedFault, type FaultAction, type FaultRule, Faults } from "./faults.js";

export interface UpstashEndpointOptions {
  /** The real Redis behind the endpoint, `redis://[user:password@]host:port[/db]`. */
  redisUrl: string;
  /** The bearer token clients must present; default: a fresh random one. */
  token?: string;
  /** Port on 127.0.0.1; default 0 (any free port). */
  port?: number;
  /** Largest request body accepted, in bytes; larger ones get 413. Default 10 MiB. */
  maxBodyBytes?: number;
  /** Connections to Redis, at most; each request borrows one. Default 8. */
  poolSize?: number;
  /** Fault injection rules; default: an empty set (no faults). */
  faults?: Faults;
}

/** A running endpoint: the values to use as UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN. */
export interface UpstashEndpoint {
  url: string;
  token: string;
  faults: Faults;
  /** Stops listening, drops open HTTP connections and closes the Redis connections. */
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Starts the endpoint on 127.0.0.1 (never another interface); resolves once it listens. */
export async function startUpstashEndpoint(options: UpstashEndpointOptions): Promise<UpstashEndpoint> {
  const token = options.token ?? randomBytes(24).toString("base64url");
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const faults = options.faults ?? new Faults();
  const pool = new ConnectionPool(parseRedisUrl(options.redisUrl), options.poolSize ?? 8);
  const scripts = new ScriptRewriter();
  const context: Context = { token: Buffer.from(`Bearer ${token}`), maxBodyBytes, faults, pool, scripts };

  const server = createServer((request, response) => {
    // Aborts when the client goes away before its answer is written, so the request's Redis
    // connection is closed and replaced, and a request still queued for one leaves the queue.
    const left = new AbortController();
    response.once("close", () => {
      if (!response.writableFinished) left.abort(new Error("the HTTP client closed the connection"));
    });
    handle(context, request, response, left.signal).catch((error: unknown) => {
      // Redis unreachable (or a bug): the client gets a 500 it can retry, never a hung request.
      if (!response.headersSent && !left.signal.aborted) {
        send(response, 500, errorJson(`endpoint error: ${(error as Error).message}`));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    faults,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      pool.close();
    },
  };
}

interface Context {
  token: Buffer;
  maxBodyBytes: number;
  faults: Faults;
  pool: ConnectionPool;
  scripts: ScriptRewriter;
}

type Route = "command" | "pipeline" | "multi-exec";
const ROUTES: Record<string, Route> = { "/": "command", "/pipeline": "pipeline", "/multi-exec": "multi-exec" };

async function handle(
  context: Context,
  request: IncomingMessage,
  response: ServerResponse,
  signal: AbortSignal,
): Promise<void> {
  if (!authorized(context.token, request.headers.authorization)) {
    request.resume();
    return send(response, 401, errorJson("Unauthorized: send the header Authorization: Bearer <token>"));
  }
  const path = (request.url ?? "/").split("?")[0];
  const route = ROUTES[path];
  if (route === undefined || request.method !== "POST") {
    request.resume();
    const status = route === undefined ? 404 : 405;
    return send(
      response,
      status,
      errorJson(`${request.method} ${path} is not supported: POST /, /pipeline or /multi-exec`),
    );
  }
  const body = await readBody(request, context.maxBodyBytes);
  if (body === undefined) {
    response.setHeader("Connection", "close");
    return send(response, 413, errorJson(`request body larger than ${context.maxBodyBytes} bytes (maxBodyBytes)`));
  }
  let commands: string[][];
  try {
    const parsed = parseJsonKeepingNumbers(body);
    commands = route === "command" ? [toCommand(parsed, "the body")] : toCommands(parsed);
  } catch (error) {
    if (!(error instanceof BadRequestError)) throw error;
    return send(response, 400, errorJson(error.message));
  }

  const fault = context.faults.take(commands);
  const injected = errorJson(
    fault?.kind === "status" ? (fault.error ?? `injected fault: HTTP ${fault.status}`) : "injected fault",
  );
  if (fault?.kind === "status" && !fault.apply) return send(response, fault.status, injected);
  const base64 = String(request.headers["upstash-encoding"]).toLowerCase() === "base64";
  const runner: Runner = { pool: context.pool, scripts: context.scripts, signal };
  const [status, json] = await execute(runner, route, commands, base64);
  if (signal.aborted) return; // nobody to answer
  if (fault?.kind === "drop") {
    response.socket?.destroy();
    return;
  }
  if (fault?.kind === "delay") await new Promise((resolve) => setTimeout(resolve, fault.ms));
  if (fault?.kind === "status") return send(response, fault.status, injected);
  send(response, status, json);
}

async function execute(runner: Runner, route: Route, commands: string[][], base64: boolean): Promise<[number, Buffer]> {
  if (route === "command") {
    const outcome: Outcome = await runCommand(runner, commands[0]);
    // A failed single command is HTTP 400, which @upstash/redis turns into a thrown UpstashError.
    return ["error" in outcome ? 400 : 200, await outcomeBody(outcome, base64)];
  }
  const outcomes = route === "pipeline" ? await runPipeline(runner, commands) : await runTransaction(runner, commands);
  if (!Array.isArray(outcomes)) return [400, await outcomeBody(outcomes, base64)];
  return [200, await outcomeBody(outcomes, base64)];
}

function authorized(expected: Buffer, header: string | undefined): boolean {
  const given = Buffer.from(header ?? "");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The body as text, or undefined when it is larger than `maxBytes` (the rest is read and discarded). */
async function readBody(request: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  const declared = Number(request.headers["content-length"]);
  let tooLarge = Number.isFinite(declared) && declared > maxBytes;
  const chunks: Buffer[] = [];
  let size = 0;
  // Draining rather than closing at once lets the client finish sending and read the 413.
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) tooLarge = true;
    if (!tooLarge) chunks.push(chunk);
  }
  return tooLarge ? undefined : Buffer.concat(chunks).toString("utf8");
}

function errorJson(message: string): string {
  return JSON.stringify({ error: message });
}

function send(response: ServerResponse, status: number, json: string | Buffer): void {
  response.writeHead(status, { "Content-Type": "application/json" }).end(json);
}
