import { type RedisTarget, RespConnection } from "./resp.js";

/**
 * A fixed-size pool of Redis connections. Each request borrows one connection for its whole
 * duration, so a pipeline's commands stay in order, a MULTI…EXEC owns its connection, and a
 * blocking command (BLPOP) only holds up the request that sent it.
 */
export class ConnectionPool {
  private readonly idle: RespConnection[] = [];
  private readonly waiting: { resolve: (connection: RespConnection) => void; reject: (error: Error) => void }[] = [];
  private readonly all = new Set<RespConnection>();
  private opening = 0;
  private closed = false;

  constructor(
    private readonly target: RedisTarget,
    private readonly size: number,
  ) {}

  /** Runs `work` on a borrowed connection; a connection that broke meanwhile is not reused. */
  async use<T>(work: (connection: RespConnection) => Promise<T>): Promise<T> {
    const connection = await this.acquire();
    try {
      return await work(connection);
    } finally {
      this.release(connection);
    }
  }

  /** Closes every connection; borrowers still running see their commands fail. */
  close(): void {
    this.closed = true;
    for (const connection of this.all) connection.close();
    this.all.clear();
    this.idle.length = 0;
    for (const waiter of this.waiting.splice(0)) waiter.reject(new Error("the endpoint is closing"));
  }

  private async acquire(): Promise<RespConnection> {
    if (this.closed) throw new Error("the endpoint is closing");
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
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  private release(connection: RespConnection): void {
    if (connection.closed || this.closed) {
      this.all.delete(connection);
      connection.close();
      // A waiter would otherwise wait for a connection that never comes back: open it a fresh one.
      const waiter = this.waiting.shift();
      if (waiter) this.acquire().then(waiter.resolve, waiter.reject);
      return;
    }
    const waiter = this.waiting.shift();
    if (waiter) waiter.resolve(connection);
    else this.idle.push(connection);
  }
}
