import { sqsErrors } from "./errors.js";
import { ACCOUNT_ID, queueArn } from "./ids.js";
import { type QueueSettings, SqsQueue } from "./queue.js";

/**
 * The named queues of the stand-in, found by name, URL or ARN as the API names them. URLs need the
 * server's origin, so they exist once it listens: `http://127.0.0.1:<port>/000000000000/<name>`.
 */
export class SqsBroker {
  private readonly queues = new Map<string, SqsQueue>();
  private origin: string | undefined;

  /** Adds a queue (the stand-in has no CreateQueue: the stack declares its queues, as the CDK stack does). */
  createQueue(name: string, settings: QueueSettings = {}): SqsQueue {
    if (!/^[A-Za-z0-9_-]{1,80}$/.test(name)) throw new Error(`invalid SQS queue name ${JSON.stringify(name)}`);
    if (this.queues.has(name)) throw new Error(`queue ${name} exists`);
    const queue = new SqsQueue(name, queueArn(name), settings, (arn) => this.byArn(arn));
    this.queues.set(name, queue);
    return queue;
  }

  /** Sets the origin URLs are built from, once the server listens. */
  setOrigin(origin: string | undefined): void {
    this.origin = origin;
  }

  /** The queue's URL; throws before the server listens, when there is no URL to give. */
  urlOf(queue: SqsQueue): string {
    if (this.origin === undefined) throw new Error("the SQS stand-in has no URL until listen() resolves");
    return `${this.origin}/${ACCOUNT_ID}/${queue.name}`;
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
