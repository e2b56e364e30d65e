// A minimal RESP2 client: one socket, commands written in order, replies matched first-in first-out.
// The endpoint talks raw RESP rather than through ioredis because it must relay every reply exactly:
// integer replies as their digits (a JS number would round anything above 2^53), bulk strings as
// bytes, and no per-command reshaping (ioredis turns HGETALL into an object, for one).
import { connect, type Socket } from "node:net";
import { type Reply, RespError, RespParser } from "./resp-parser.js";

export { type Bytes, type Reply, RespError, RespInteger } from "./resp-parser.js";

/** Where a RespConnection connects: host, port, and the AUTH/SELECT a redis:// URL asks for. */
export interface RedisTarget {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db?: number;
}

/** Parses `redis://[user[:password]@]host[:port][/db]`; rediss:// (TLS) is not supported. */
export function parseRedisUrl(url: string): RedisTarget {
  const parsed = new URL(url);
  if (parsed.protocol !== "redis:") {
    throw new Error(`the endpoint needs a redis:// URL (TLS is not supported), got protocol "${parsed.protocol}"`);
  }
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : undefined;
  return {
    host: parsed.hostname || "127.0.0.1",
    port: parsed.port ? Number(parsed.port) : 6379,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    db: db !== undefined && Number.isInteger(db) && db > 0 ? db : undefined,
  };
}

function encodeCommand(args: readonly (string | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = typeof arg === "string" ? Buffer.from(arg, "utf8") : arg;
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

const CONNECT_TIMEOUT_MS = 5_000;
/** How long parsing one connection's replies may hold the event loop in one turn, in ms. */
const SLICE_MS = 5;

interface Pending {
  resolve: (reply: Reply) => void;
  reject: (error: Error) => void;
}

/** One connection to Redis. Once broken (`closed`), every pending and later command fails. */
export class RespConnection {
  private readonly parser = new RespParser((reply) => this.pending.shift()?.resolve(reply));
  private readonly pending: Pending[] = [];
  closed = false;
  /** When the parsing in this event-loop turn began; undefined outside a turn with data. */
  private sliceStarted: number | undefined;

  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (error) => this.fail(error));
    socket.on("close", () => this.fail(new Error("connection to Redis closed")));
  }

  /** Connects, then AUTH and SELECT as the target asks; rejects if any of it fails. */
  static async open(target: RedisTarget): Promise<RespConnection> {
    const socket = connect({ host: target.host, port: target.port, noDelay: true });
    // A silent host would otherwise leave the request hanging until the client gives up.
    socket.setTimeout(CONNECT_TIMEOUT_MS, () =>
      socket.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`)),
    );
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    socket.setTimeout(0);
    const connection = new RespConnection(socket);
    const setup: string[][] = [];
    if (target.password !== undefined) {
      setup.push(target.username ? ["AUTH", target.username, target.password] : ["AUTH", target.password]);
    }
    if (target.db !== undefined) setup.push(["SELECT", String(target.db)]);
    for (const command of setup) {
      const reply = await connection.send(command);
      if (reply instanceof RespError) {
        connection.close();
        throw new Error(`Redis refused ${command[0]}: ${reply.message}`);
      }
    }
    return connection;
  }

  /** Sends one command; resolves to its reply (an error reply resolves too, as a RespError). */
  send(args: readonly (string | Buffer)[]): Promise<Reply> {
    if (this.closed) return Promise.reject(new Error("connection to Redis closed"));
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.socket.write(encodeCommand(args));
    });
  }

  /** Fails every pending command and drops the socket; Redis discards what it still sends. */
  close(): void {
    this.fail(new Error("connection to Redis closed"));
    this.socket.destroy();
  }

  /**
   * libuv reads a busy socket up to 32 times (2 MB) before the event loop moves on, and parsing
   * that much of a large reply takes ~100 ms, which every other request would wait for. So once
   * parsing has held the loop for SLICE_MS in one turn, the socket pauses until the next turn.
   */
  private onData(chunk: Buffer): void {
    if (this.sliceStarted === undefined) {
      this.sliceStarted = performance.now();
      setImmediate(this.endSlice);
    }
    try {
      this.parser.push(chunk);
    } catch (error) {
      // Past a malformed byte no later reply can be matched to its command.
      this.fail(error as Error);
      this.socket.destroy();
      return;
    }
    if (performance.now() - this.sliceStarted >= SLICE_MS) this.socket.pause();
  }

  private readonly endSlice = () => {
    this.sliceStarted = undefined;
    if (!this.closed && this.socket.isPaused()) this.socket.resume();
  };

  private fail(error: Error): void {
    this.closed = true;
    for (const waiter of this.pending.splice(0)) waiter.reject(error);
  }
}
