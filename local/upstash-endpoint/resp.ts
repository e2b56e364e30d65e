// A minimal RESP2 client: one socket, commands written in order, replies matched first-in first-out.
// The endpoint talks raw RESP rather than through ioredis because it must relay every reply exactly:
// integer replies as their digits (a JS number would round anything above 2^53), bulk strings as
// bytes, and no per-command reshaping (ioredis turns HGETALL into an object, for one).
import { connect, type Socket } from "node:net";

/** An integer reply, kept as the decimal digits Redis sent so 64-bit values stay exact. */
export class RespInteger {
  constructor(readonly digits: string) {}
}

/** An error reply (top level, or an element of an EXEC or script reply). */
export class RespError {
  constructor(readonly message: string) {}
}

/** A decoded reply: bytes for simple and bulk strings, null for nil. */
export type Reply = Buffer | RespInteger | RespError | null | Reply[];

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

/** Thrown while parsing when the buffer does not yet hold a whole reply. */
const INCOMPLETE = Symbol("incomplete");

/** Reads one reply at `offset`; returns it and the offset after it, or throws INCOMPLETE. */
function parseReply(buffer: Buffer, offset: number): [Reply, number] {
  const lineEnd = buffer.indexOf("\r\n", offset);
  if (lineEnd < 0) throw INCOMPLETE;
  const line = buffer.toString("utf8", offset + 1, lineEnd);
  const next = lineEnd + 2;
  switch (buffer[offset]) {
    case 0x2b: // '+'
      return [buffer.subarray(offset + 1, lineEnd), next];
    case 0x2d: // '-'
      return [new RespError(line), next];
    case 0x3a: // ':'
      return [new RespInteger(line), next];
    case 0x24: {
      // '$'
      const length = Number(line);
      if (length < 0) return [null, next];
      if (buffer.length < next + length + 2) throw INCOMPLETE;
      return [Buffer.from(buffer.subarray(next, next + length)), next + length + 2];
    }
    case 0x2a: {
      // '*'
      const count = Number(line);
      if (count < 0) return [null, next];
      const items: Reply[] = [];
      let position = next;
      for (let i = 0; i < count; i++) {
        const [item, after] = parseReply(buffer, position);
        items.push(item);
        position = after;
      }
      return [items, position];
    }
    default:
      throw new Error(`unexpected RESP type byte 0x${buffer[offset]?.toString(16)}`);
  }
}

const CONNECT_TIMEOUT_MS = 5_000;

interface Pending {
  resolve: (reply: Reply) => void;
  reject: (error: Error) => void;
}

/** One connection to Redis. Once broken (`closed`), every pending and later command fails. */
export class RespConnection {
  private buffer: Buffer = Buffer.alloc(0);
  private readonly pending: Pending[] = [];
  closed = false;

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

  close(): void {
    this.fail(new Error("connection to Redis closed"));
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    let offset = 0;
    while (offset < this.buffer.length) {
      let parsed: [Reply, number];
      try {
        parsed = parseReply(this.buffer, offset);
      } catch (error) {
        if (error === INCOMPLETE) break;
        this.fail(error as Error);
        this.socket.destroy();
        return;
      }
      offset = parsed[1];
      this.pending.shift()?.resolve(parsed[0]);
    }
    this.buffer = this.buffer.subarray(offset);
  }

  private fail(error: Error): void {
    this.closed = true;
    for (const waiter of this.pending.splice(0)) waiter.reject(error);
  }
}
