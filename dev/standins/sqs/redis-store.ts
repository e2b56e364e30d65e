import { type ChainableCommander, Redis } from "ioredis";
import type { DeduplicationEntry } from "./fifo.js";
import { type QueueKeys, queueKeys, queuesKey } from "./redis-keys.js";
import { decodeQueue, encodeDeduplication, encodeDelivery, encodeMessage } from "./redis-records.js";
import type { MessageStore, QueueJournal, RestoredQueue } from "./store.js";
import type { StoredMessage } from "./stored-message.js";

/** Where a Redis store keeps the stand-in's messages. */
export interface RedisStoreOptions {
  /** `redis://[user:password@]host:port[/db]` (or `rediss://`). */
  redisUrl: string;
  /**
   * Every key starts with `<prefix>:` (redis-keys.ts lists them). A broker opened on a prefix finds
   * the messages the last one left there; one process at a time may use a prefix.
   */
  prefix: string;
  /**
   * Called with every write that failed, besides the API calls waiting on it (which answer an
   * error). Default: a line on stderr, as the mapping's receives and deletes have nobody to tell.
   */
  onError?: (error: Error) => void;
}

// Redis's Lua and variadic commands are happiest with bounded chunks; HDEL of expired ids uses it.
const CHUNK = 1000;

// The changes of one synchronous stretch, sent as one MULTI … EXEC once it ends.
interface Batch {
  multi: ChainableCommander;
  done: Promise<void>;
  resolve: () => void;
  reject: (error: Error) => void;
}

/**
 * A MessageStore on a real Redis (through ioredis, on one connection). Every queue's changes are
 * collected while the code that makes them runs, and sent once it yields as one MULTI … EXEC, so a
 * receive that redrives a message to the dead-letter queue deletes it from one queue and adds it to
 * the other together, and the writes reach Redis in the order they were made. `settled()` is what an
 * API call waits on before it answers, so a message acknowledged to a producer is in Redis.
 */
export class RedisMessageStore implements MessageStore {
  private open: Batch | undefined;
  // The latest batch sent, until it settles.
  private writing: Promise<void> | undefined;
  // Positions grow with every message taken, across queues: they sort a queue's messages on load.
  private nextPosition = 0;
  private lastConnectionError: Error | undefined;

  private constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly onError: (error: Error) => void,
  ) {
    // ioredis reconnects and retries queued commands by itself; a write that still fails is reported.
    redis.on("error", (error: Error) => {
      this.lastConnectionError = error;
    });
  }

  /** Connects; throws one Error naming every problem with the options, or why Redis cannot be reached. */
  static async connect(options: RedisStoreOptions): Promise<RedisMessageStore> {
    const problems: string[] = [];
    if (!/^rediss?:\/\//.test(String(options.redisUrl))) {
      problems.push(
        `redisUrl must be redis://host:port or rediss://host:port; got ${JSON.stringify(options.redisUrl)}`,
      );
    }
    if (typeof options.prefix !== "string" || !/^\S+$/.test(options.prefix)) {
      problems.push(`prefix must be a non-empty string without spaces; got ${JSON.stringify(options.prefix)}`);
    }
    if (problems.length > 0) throw new Error(`cannot open the SQS stand-in's Redis store: ${problems.join("; ")}`);
    const redis = new Redis(options.redisUrl, { lazyConnect: true });
    let connectionError: Error | undefined;
    redis.on("error", (error: Error) => {
      connectionError = error;
    });
    try {
      await redis.connect();
    } catch (error) {
      redis.disconnect();
      const reason = (connectionError ?? (error as Error)).message;
      throw new Error(`cannot open the SQS stand-in's Redis store at ${options.redisUrl}: ${reason}`, { cause: error });
    }
    redis.removeAllListeners("error");
    const report = (error: Error) => console.error(`local SQS stand-in: ${error.message}`);
    return new RedisMessageStore(redis, options.prefix, options.onError ?? report);
  }

  async load(): Promise<Map<string, RestoredQueue>> {
    const queues = new Map<string, RestoredQueue>();
    for (const name of (await this.redis.smembers(queuesKey(this.prefix))).sort()) {
      const keys = queueKeys(this.prefix, name);
      const hashes = {
        messages: await this.hashEntries(keys.messages),
        deliveries: await this.hashEntries(keys.deliveries),
        deduplication: await this.hashEntries(keys.deduplication),
        sequence: await this.redis.get(keys.sequence),
      };
      let decoded: ReturnType<typeof decodeQueue>;
      try {
        decoded = decodeQueue(keys, hashes);
      } catch (error) {
        throw new Error(`cannot restore SQS queue ${name} from Redis: ${(error as Error).message}`, { cause: error });
      }
      for (const { position } of decoded.messages) this.nextPosition = Math.max(this.nextPosition, position + 1);
      queues.set(name, { ...decoded, messages: decoded.messages.map(({ message }) => message) });
    }
    return queues;
  }

  journal(queueName: string): QueueJournal {
    const keys = queueKeys(this.prefix, queueName);
    // Listed once, when the queue is created, so a later load finds its keys without a SCAN.
    this.batch().sadd(queuesKey(this.prefix), queueName);
    return {
      added: (message) => this.added(keys, message),
      delivered: (message) => {
        this.batch().hset(keys.deliveries, message.messageId, encodeDelivery(message));
      },
      removed: (messageId) => {
        this.batch().hdel(keys.messages, messageId).hdel(keys.deliveries, messageId);
      },
      purged: () => {
        this.batch().del(keys.messages, keys.deliveries);
      },
      remembered: (entry: DeduplicationEntry) => {
        this.batch().hset(keys.deduplication, entry.id, encodeDeduplication(entry));
      },
      forgot: (ids) => {
        for (let start = 0; start < ids.length; start += CHUNK) {
          this.batch().hdel(keys.deduplication, ...ids.slice(start, start + CHUNK));
        }
      },
    };
  }

  settled(): Promise<void> {
    return this.open?.done ?? this.writing ?? Promise.resolve();
  }

  async close(): Promise<void> {
    // A failed write was reported already; the connection goes either way.
    await this.settled().catch(() => undefined);
    await this.redis.quit();
  }

  private added(keys: QueueKeys, message: StoredMessage): void {
    const multi = this.batch()
      .hset(keys.messages, message.messageId, encodeMessage(message, this.nextPosition++))
      .hset(keys.deliveries, message.messageId, encodeDelivery(message));
    if (message.sequenceNumber !== undefined) multi.set(keys.sequence, String(BigInt(message.sequenceNumber) + 1n));
  }

  // The batch collecting the current stretch's changes, opened on its first change.
  private batch(): ChainableCommander {
    if (this.open === undefined) {
      let resolve = () => {};
      let reject: (error: Error) => void = () => {};
      const done = new Promise<void>((resolveDone, rejectDone) => {
        resolve = resolveDone;
        reject = rejectDone;
      });
      // Nobody may wait on it (a mapping's delete): its failure is reported through onError instead.
      done.catch(() => undefined);
      this.open = { multi: this.redis.multi(), done, resolve, reject };
      queueMicrotask(() => this.send());
    }
    return this.open.multi;
  }

  private send(): void {
    const batch = this.open;
    if (batch === undefined) return;
    this.open = undefined;
    this.writing = batch.done;
    const clear = () => {
      if (this.writing === batch.done) this.writing = undefined;
    };
    batch.done.then(clear, clear);
    batch.multi.exec().then(
      (replies) => {
        const failed =
          replies === null ? new Error("the transaction was discarded") : replies.find(([error]) => error)?.[0];
        if (failed) this.fail(batch, failed);
        else batch.resolve();
      },
      (error: Error) => this.fail(batch, error),
    );
  }

  private fail(batch: Batch, cause: Error): void {
    const connection = this.lastConnectionError ? ` (last connection error: ${this.lastConnectionError.message})` : "";
    const error = new Error(
      `a write to Redis (keys under ${this.prefix}:) failed, so a restart may not find the latest changes: ${cause.message}${connection}`,
      { cause },
    );
    this.onError(error);
    batch.reject(error);
  }

  // A hash's fields, read in bounded steps.
  private async hashEntries(key: string): Promise<Map<string, string>> {
    const entries = new Map<string, string>();
    let cursor = "0";
    do {
      const [next, flat] = await this.redis.hscan(key, cursor, "COUNT", 1000);
      for (let index = 0; index < flat.length; index += 2) entries.set(flat[index], flat[index + 1]);
      cursor = next;
    } while (cursor !== "0");
    return entries;
  }
}
