import { sqsErrors } from "./errors.js";
import { FIFO_SUFFIX } from "./fifo.js";
import { ACCOUNT_ID, queueArn } from "./ids.js";
import { MoveTasks } from "./moves.js";
import { type QueueSettings, SqsQueue } from "./queue.js";
import type { MessageStore, RestoredQueue } from "./store.js";

// SQS's queue names: up to 80 characters, the `.fifo` suffix of a FIFO queue included.
const STANDARD_QUEUE_NAME = /^[A-Za-z0-9_-]{1,80}$/;
const FIFO_QUEUE_NAME = /^[A-Za-z0-9_-]{1,75}\.fifo$/;

/**
 * The named queues of the stand-in, found by name, URL or ARN as the API names them, and their
 * message move tasks. URLs need a server's origin, so they exist once one serves the broker:
 * `http://127.0.0.1:<port>/000000000000/<name>`. Several servers may serve one broker; URLs name
 * the first still listening unless asked for another.
 *
 * `new SqsBroker()` keeps the messages in memory only. `await SqsBroker.open(store)` keeps them in a
 * store too (redis-store.ts): each queue it creates starts with what the store held under its name,
 * and writes every change there; an API call answers once its changes are stored (`settled()`).
 */
export class SqsBroker {
  readonly moves = new MoveTasks(this);
  private readonly queues = new Map<string, SqsQueue>();
  private readonly origins: string[] = [];
  // What the store held, by queue name, until a queue of that name is created and takes it.
  private readonly restored = new Map<string, RestoredQueue>();
  private store: MessageStore | undefined;

  /**
   * A broker whose queues start from what `store` holds and keep every change there. Rejects when
   * the store cannot be read.
   */
  static async open(store: MessageStore): Promise<SqsBroker> {
    const broker = new SqsBroker();
    broker.store = store;
    for (const [name, queue] of await store.load()) broker.restored.set(name, queue);
    return broker;
  }

  /**
   * Resolves once every change made so far is in the store (at once without one); rejects when the
   * write carrying the latest changes failed.
   */
  async settled(): Promise<void> {
    await this.store?.settled();
  }

  /** Waits for the pending writes and closes the store, if it has one; its queues must not be used after. */
  async close(): Promise<void> {
    const store = this.store;
    this.store = undefined;
    await store?.close();
  }

  /**
   * Adds a queue (the stand-in has no CreateQueue: the stack declares its queues, as the CDK stack
   * does). A name ending in `.fifo` makes a FIFO queue. Throws one Error naming every problem: a
   * name SQS would refuse, a name taken, content-based deduplication on a standard queue, a
   * dead-letter queue that does not exist or is of the other kind (SQS requires both to be FIFO or
   * both standard).
   */
  createQueue(name: string, settings: QueueSettings = {}): SqsQueue {
    const fifo = settings.fifo ?? name.endsWith(FIFO_SUFFIX);
    const problems: string[] = [];
    if (fifo && !FIFO_QUEUE_NAME.test(name)) {
      problems.push("a FIFO queue's name is 1 to 75 letters, digits, - or _ followed by .fifo");
    }
    if (!fifo && !STANDARD_QUEUE_NAME.test(name)) {
      problems.push("a standard queue's name is 1 to 80 letters, digits, - or _ (a name ending in .fifo is FIFO)");
    }
    if (this.queues.has(name)) problems.push("a queue of that name exists on this broker");
    if (settings.contentBasedDeduplication && !fifo) problems.push("contentBasedDeduplication is for FIFO queues only");
    const deadLetterArn = settings.redrivePolicy?.deadLetterTargetArn;
    const deadLetterQueue = deadLetterArn === undefined ? undefined : this.byArn(deadLetterArn);
    if (deadLetterArn !== undefined && deadLetterQueue === undefined) {
      problems.push(`its dead-letter queue ${deadLetterArn} does not exist (create it first)`);
    }
    if (deadLetterQueue !== undefined && deadLetterQueue.settings.fifo !== fifo) {
      const kind = (isFifo: boolean) => (isFifo ? "FIFO" : "standard");
      problems.push(
        `the dead-letter queue of a ${kind(fifo)} queue must be ${kind(fifo)} too; ${deadLetterQueue.name} is ${kind(!fifo)}`,
      );
    }
    if (problems.length > 0) {
      throw new Error(`cannot create SQS queue ${JSON.stringify(name)}: ${problems.join("; ")}`);
    }
    const journal = this.store?.journal(name);
    const queue = new SqsQueue(name, queueArn(name), { ...settings, fifo }, (arn) => this.byArn(arn), journal);
    const restored = this.restored.get(name);
    if (restored !== undefined) {
      this.restored.delete(name);
      queue.restore(restored);
    }
    this.queues.set(name, queue);
    return queue;
  }

  /** Records a server that serves this broker at `origin` (`http://127.0.0.1:<port>`), once it listens. */
  addOrigin(origin: string): void {
    if (!this.origins.includes(origin)) this.origins.push(origin);
  }

  /** Forgets a server that stopped listening. */
  removeOrigin(origin: string): void {
    const index = this.origins.indexOf(origin);
    if (index >= 0) this.origins.splice(index, 1);
  }

  /** The origin of the first server still serving this broker, or undefined when none listens. */
  get origin(): string | undefined {
    return this.origins[0];
  }

  /** The queue's URL at `origin` (default: the first server's); throws while no server listens. */
  urlOf(queue: SqsQueue, origin = this.origin): string {
    if (origin === undefined) throw new Error("the SQS stand-in has no URL until listen() resolves");
    return `${origin}/${ACCOUNT_ID}/${queue.name}`;
  }

  /** A queue by name, as GetQueueUrl looks it up. */
  byName(name: string, ownerAccountId?: string): SqsQueue {
    const queue = this.queues.get(name);
    if (queue === undefined || (ownerAccountId !== undefined && ownerAccountId !== ACCOUNT_ID)) {
      throw sqsErrors.queueDoesNotExist();
    }
    return queue;
  }

  /**
   * A queue by its URL. Only the path counts, as on AWS a client may reach the same queue through
   * another host name (localhost, a docker alias).
   */
  byUrl(url: string): SqsQueue {
    let path: string;
    try {
      path = new URL(url).pathname;
    } catch {
      throw sqsErrors.invalidValue("QueueUrl", url, "Not a valid URL.");
    }
    const [account, name, ...rest] = path.split("/").filter(Boolean);
    if (account !== ACCOUNT_ID || name === undefined || rest.length > 0) throw sqsErrors.queueDoesNotExist();
    return this.byName(name);
  }

  /** A queue by ARN, or undefined. */
  byArn(arn: string): SqsQueue | undefined {
    const prefix = queueArn("");
    return arn.startsWith(prefix) ? this.queues.get(arn.slice(prefix.length)) : undefined;
  }

  /** Every queue, in creation order. */
  list(): SqsQueue[] {
    return [...this.queues.values()];
  }

  /** The queues whose redrive policy targets `deadLetterQueue`. */
  sourcesOf(deadLetterQueue: SqsQueue): SqsQueue[] {
    return this.list().filter((queue) => queue.settings.redrivePolicy?.deadLetterTargetArn === deadLetterQueue.arn);
  }
}
