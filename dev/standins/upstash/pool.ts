import { type RedisTarget, RespConnection } from "./resp.js";

/** A request queued for a connection. */
interface Waiter {
  signal?: AbortSignal;
  /** Hands it a connection; false when it already left (aborted, or the pool closed). */
  give(connection: RespConnection): boolean;
  fail(error: Error): void;
}

/** What `use` rejects with when the request's client went away first. */
export class AbandonedError extends Error {}

function abandoned(signal: AbortSignal): AbandonedError {
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
  return new AbandonedError(`the request was abandoned: ${reason}`);
}

/**
 * A fixed-size pool of Redis connections. Each request borrows one connection for its whole
 * duration, so a pipeline's commands stay in order and a MULTI…EXEC owns its connection.
 * (Blocking commands, which would hold one indefinitely, are refused before they get here.)
 */
export class ConnectionPool {
  private readonly idle: RespConnection[] = [];
  private readonly waiting: Waiter[] = [];
  private readonly all = new Set<RespConnection>();
  private opening = 0;
  private closed = false;

  constructor(
    private readonly target: RedisTarget,
    private readonly size: number,
  ) {}

  /**
   * Runs `work` on a borrowed connection; a connection that broke meanwhile is not reused. When
   * `signal` aborts (the HTTP client went away), a request still queued leaves the queue, and a
   * connection the work is using is closed rather than returned: the reply it still expects would
   * otherwise be read as the answer to the next borrower's command. The pool opens a fresh one.
   */
  async use<T>(work: (connection: RespConnection) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const connection = await this.acquire(signal);
    if (signal?.aborted) {
      this.release(connection);
      throw abandoned(signal);
    }
    const abandon = () => connection.close();
    signal?.addEventListener("abort", abandon, { once: true });
    try {
      return await work(connection);
    } finally {
      signal?.removeEventListener("abort", abandon);
      this.release(connection);
    }
  }

  /** Closes every connection; borrowers still running see their commands fail. */
  close(): void {
    this.closed = true;
    for (const connection of this.all) connection.close();
    this.all.clear();
    this.idle.length = 0;
    for (const waiter of this.waiting.splice(0)) waiter.fail(new Error("the endpoint is closing"));
  }

  private async acquire(signal?: AbortSignal): Promise<RespConnection> {
    if (this.closed) throw new Error("the endpoint is closing");
    if (signal?.aborted) throw abandoned(signal);
    for (let connection = this.idle.pop(); connection; connection = this.idle.pop()) {
      if (!connection.closed) return connection;
      this.all.delete(connection);
    }
    if (this.all.size + this.opening < this.size) {
      this.opening++;
      try {
        const connection = await RespConnection.open(this.target);
        this.all.add(connection);
        return connection;
      } finally {
        this.opening--;
      }
    }
    return new Promise((resolve, reject) => {
      let settled = false;
      const onAbort = () => {
        const index = this.waiting.indexOf(waiter);
        if (index >= 0) this.waiting.splice(index, 1);
        waiter.fail(abandoned(signal as AbortSignal));
      };
      const settle = () => {
        settled = true;
        signal?.removeEventListener("abort", onAbort);
      };
      const waiter: Waiter = {
        signal,
        give: (connection) => {
          if (settled) return false;
          settle();
          resolve(connection);
          return true;
        },
        fail: (error) => {
          if (settled) return;
          settle();
          reject(error);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private release(connection: RespConnection): void {
    if (connection.closed || this.closed) {
      this.all.delete(connection);
      connection.close();
      // A waiter would otherwise wait for a connection that never comes back: open it a fresh one.
      const waiter = this.waiting.shift();
      if (waiter) {
        this.acquire(waiter.signal).then(
          (fresh) => {
            if (!waiter.give(fresh)) this.release(fresh);
          },
          (error: Error) => waiter.fail(error),
        );
      }
      return;
    }
    for (let waiter = this.waiting.shift(); waiter; waiter = this.waiting.shift()) {
      if (waiter.give(connection)) return;
    }
    this.idle.push(connection);
  }
}
