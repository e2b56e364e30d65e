// A server leaseq cannot reach is reported in leaseq's words: the host, the port and the setting
// they came from (never a password or token), why, and what to check; not ioredis's options
// ("maxRetriesPerRequest") or fetch's "fetch failed".
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { connectionFromEnv, openStore } from "../../shared/connection.js";
import { UnreachableError } from "../../shared/errors.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { connectionProblem } from "../../shared/stores/unreachable.js";
import { UpstashStore } from "../../shared/stores/upstash.js";
import { freePort } from "../helpers/redis-server.js";

const REDIS_ADVICE =
  "check that Redis is running there, that REDIS_URL names its host and port (rediss:// for TLS), and that this machine may connect to it (firewall, security group, VPC)";
const UPSTASH_ADVICE =
  "check that UPSTASH_REDIS_REST_URL is the database's REST URL (https://<database>.upstash.io, in the Upstash console) and that this machine can reach it (a Lambda in a VPC needs a NAT gateway)";

const opened: Store[] = [];
const servers: Array<{ server: Server; sockets: Socket[] }> = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  for (const { server, sockets } of servers.splice(0)) {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** The error of the queue's first command (an enqueue) on `store`. */
async function firstCommandError(store: Store): Promise<Error> {
  opened.push(store);
  const queue = new Queue(store, { name: "unreachable" });
  return queue.enqueue([{ id: "a", type: "t" }], { now: Date.now() }).then(
    () => expect.unreachable("the enqueue succeeded") as never,
    (error: Error) => error,
  );
}

/** A TCP server that takes connections and never answers a byte. */
async function silentServer(): Promise<number> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => void sockets.push(socket));
  servers.push({ server, sockets });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

describe("a Redis that cannot be reached over TCP", () => {
  it("names the host, the port and REDIS_URL, says why and what to check, and never the password", async () => {
    const port = await freePort();
    const store = await openStore(connectionFromEnv({ REDIS_URL: `redis://:s3cr3t-pw@127.0.0.1:${port}` }));
    const error = await firstCommandError(store);
    expect(error).toBeInstanceOf(UnreachableError);
    expect(error.message).toBe(
      `enqueue: Redis unreachable at 127.0.0.1:${port} (from REDIS_URL): connection refused (nothing listens on that port); ${REDIS_ADVICE}`,
    );
    expect(error.message).not.toMatch(/s3cr3t-pw|maxRetriesPerRequest/);
  });

  it("says where the URL came from when the library was given it", async () => {
    const port = await freePort();
    const error = await firstCommandError(TcpStore.fromUrl(`redis://127.0.0.1:${port}`));
    expect(error.message).toMatch(
      new RegExp(
        `^enqueue: Redis unreachable at 127\\.0\\.0\\.1:${port} \\(from the URL given to TcpStore\\.fromUrl\\): connection refused`,
      ),
    );
  });

  it("says a server that takes the connection and never answers did not answer in time", async () => {
    const port = await silentServer();
    const store = TcpStore.fromUrl(`redis://127.0.0.1:${port}`, {
      source: "REDIS_URL",
      timeoutMs: 300,
      retry: { retries: 0, backoffMs: () => 0 },
    });
    const error = await firstCommandError(store);
    expect(error).toBeInstanceOf(UnreachableError);
    expect(error.message).toBe(
      `enqueue: no answer from Redis at 127.0.0.1:${port} (from REDIS_URL) within 300 ms: it may be down, overloaded or unreachable; ${REDIS_ADVICE}`,
    );
  });
});

describe("an Upstash REST endpoint that cannot be reached", () => {
  it("names the host, the port and UPSTASH_REDIS_REST_URL, says why and what to check, and never the token", async () => {
    const port = await freePort();
    const store = await openStore(
      connectionFromEnv({
        UPSTASH_REDIS_REST_URL: `http://127.0.0.1:${port}`,
        UPSTASH_REDIS_REST_TOKEN: "t0ken-never-shown",
      }),
    );
    const error = await firstCommandError(store);
    expect(error).toBeInstanceOf(UnreachableError);
    expect(error.message).toBe(
      `enqueue: Upstash unreachable at 127.0.0.1:${port} (from UPSTASH_REDIS_REST_URL): connection refused (nothing listens on that port); ${UPSTASH_ADVICE}`,
    );
    expect(error.message).not.toMatch(/t0ken-never-shown|fetch failed/);
  });

  it("names the secret the URL came from on AWS", async () => {
    const port = await freePort();
    const secretArn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:leaseq-AbC123";
    const store = await openStore({ kind: "upstash-secret", secretArn }, async () => ({
      url: `http://127.0.0.1:${port}`,
      token: "t0ken-never-shown",
    }));
    const error = await firstCommandError(store);
    const source = `the "url" of secret ${secretArn} (UPSTASH_SECRET_ARN)`;
    expect(error.message).toBe(
      `enqueue: Upstash unreachable at 127.0.0.1:${port} (from ${source}): connection refused (nothing listens on that port); check that ${source} is the database's REST URL (https://<database>.upstash.io, in the Upstash console) and that this machine can reach it (a Lambda in a VPC needs a NAT gateway)`,
    );
  });

  it("says an endpoint that never answers did not answer in time", async () => {
    const sockets: Socket[] = [];
    const server = createHttpServer(() => {
      // Never answers.
    });
    server.on("connection", (socket) => void sockets.push(socket));
    servers.push({ server: server as unknown as Server, sockets });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const store = new UpstashStore({
      url: `http://127.0.0.1:${port}`,
      token: "t",
      timeoutMs: 300,
      retry: { retries: 0, backoffMs: () => 0 },
      source: "UPSTASH_REDIS_REST_URL",
    });
    const error = await firstCommandError(store);
    expect(error.message).toBe(
      `enqueue: no answer from Upstash at 127.0.0.1:${port} (from UPSTASH_REDIS_REST_URL) within 300 ms: it may be down, overloaded or unreachable; ${UPSTASH_ADVICE}`,
    );
  });
});

describe("connectionProblem", () => {
  it.each([
    ["ENOTFOUND", "host not found (DNS)"],
    ["ETIMEDOUT", "connection timed out"],
    ["EHOSTUNREACH", "host unreachable (no route to it)"],
    ["DEPTH_ZERO_SELF_SIGNED_CERT", "TLS handshake failed (DEPTH_ZERO_SELF_SIGNED_CERT)"],
  ])("says %s in words, also as the cause of fetch's error", (code, words) => {
    const cause = Object.assign(new Error(`connect ${code}`), { code });
    expect(connectionProblem(cause)).toBe(words);
    expect(connectionProblem(new TypeError("fetch failed", { cause }))).toBe(words);
  });
});
