import { SqsBroker } from "./broker.js";
import { FIFO_SUFFIX } from "./fifo.js";
import { EventSourceMapping, type SqsHandler } from "./mapping.js";
import type { SqsAttributes } from "./message.js";
import type { MoveTasks } from "./moves.js";
import type { SqsQueue, StoredMessage } from "./queue.js";
import { RedisMessageStore, type RedisStoreOptions } from "./redis-store.js";
import { type SqsServer, startSqsServer } from "./server.js";

/** Settings of the SQS stand-in; the defaults mirror the stack's event source mapping, scaled for a laptop. */
export interface LocalSqsOptions {
  /** Records per handler invocation, as the event source mapping's batchSize. Default 10. */
  batchSize?: number;
  /** The source queue's visibility timeout. Default 30 s. */
  visibilityTimeoutMs?: number;
  /** The redrive policy's maxReceiveCount: receives before a message moves to the dead-letter queue. Default 5. */
  maxReceiveCount?: number;
  /** Concurrent handler invocations, as the mapping's maximumConcurrency. Default 4. */
  concurrency?: number;
  /** Longest idle wait of a poller between receives. Default 25 ms. */
  pollMs?: number;
  /**
   * The source queue's name. Default `leaseq-local`. With `fifo`, `.fifo` is added when the name
   * lacks it; a name ending in `.fifo` makes the queues FIFO unless `fifo` is false (then refused).
   */
  queueName?: string;
  /** The dead-letter queue's name. Default `<queueName>-dlq`; with `fifo`, `.fifo` is added as to `queueName`. */
  deadLetterQueueName?: string;
  /** The source queue's DelaySeconds. Default 0. */
  delaySeconds?: number;
  /** Makes the source queue and its dead-letter queue FIFO queues. Default false. */
  fifo?: boolean;
  /** FIFO only: a send without a deduplication id is deduplicated by the SHA-256 of its body. Default false. */
  contentBasedDeduplication?: boolean;
  /**
   * The broker to create the two queues on: pass another LocalSqs's `broker` to serve several source
   * queues, each with its own mapping, through one endpoint. Default: a broker of its own.
   */
  broker?: SqsBroker;
}

/** Options of `LocalSqs.open`: those of the constructor, and where the messages are kept. */
export interface LocalSqsOpenOptions extends Omit<LocalSqsOptions, "broker"> {
  /**
   * Keep every queue's messages in Redis under `prefix` (redis-keys.ts), so a stand-in opened later
   * on the same prefix, in this process or another, takes them back: a kill loses no message sent.
   */
  persistence: RedisStoreOptions;
}

/** Options of the in-process `send`, as SendMessage's. */
export interface LocalSendOptions {
  /** Refused on a FIFO queue unless 0, as SQS does: a FIFO queue's delay is the queue's. */
  delaySeconds?: number;
  messageAttributes?: SqsAttributes;
  /** Required on a FIFO queue, refused on a standard one. */
  messageGroupId?: string;
  /** FIFO only; required unless the queue has content-based deduplication. */
  messageDeduplicationId?: string;
  /** The send time (SentTimestamp); default now. */
  now?: number;
}

/** What happened so far, for the live view and the summary. */
export interface SqsCounts {
  /** Messages of the source queue available now. */
  visible: number;
  /** Handler invocations running now. */
  inFlight: number;
  /** Messages of the source queue received and not yet deleted or visible again. */
  notVisible: number;
  /** Messages of the source queue still in their DelaySeconds. */
  delayed: number;
  deleted: number;
  /** Receives after the first: records reported in batchItemFailures, of a batch that threw, or timed out. */
  redelivered: number;
  /** Messages in the dead-letter queue now, moved there by the redrive policy or sent there. */
  deadLettered: number;
  invocations: number;
}

/** One message, as the in-process view shows it. */
export interface LocalMessage {
  messageId: string;
  body: string;
  sentMs: number;
  receiveCount: number;
  firstReceivedMs: number | undefined;
  /** Hidden from receives until this time (a delay, or the visibility timeout after a receive). */
  visibleAtMs: number;
  messageAttributes: SqsAttributes;
  /** FIFO queues: the message's group. */
  messageGroupId?: string;
}

/** A message of the dead-letter queue and how it got there. */
export interface DeadLetter extends LocalMessage {
  /** `redrive`: received maxReceiveCount times; `sent`: sent to the DLQ (e.g. a worker's permanent failure). */
  deadLetteredBy: "redrive" | "sent";
  /** The queue the redrive policy moved it from. */
  sourceArn?: string;
}

function view(message: StoredMessage): LocalMessage {
  return {
    messageId: message.messageId,
    body: message.body,
    sentMs: message.sentMs,
    receiveCount: message.receiveCount,
    firstReceivedMs: message.firstReceivedMs,
    visibleAtMs: message.availableAtMs,
    messageAttributes: message.attributes,
    ...(message.messageGroupId !== undefined && { messageGroupId: message.messageGroupId }),
  };
}

// The queues' names: a FIFO queue's must end in .fifo, so it is added where missing.
function queueNames(options: LocalSqsOptions): { source: string; deadLetter: string; fifo: boolean } {
  const given = options.queueName ?? "leaseq-local";
  const fifo = options.fifo ?? given.endsWith(FIFO_SUFFIX);
  const base = fifo && given.endsWith(FIFO_SUFFIX) ? given.slice(0, -FIFO_SUFFIX.length) : given;
  const withSuffix = (name: string) => (fifo && !name.endsWith(FIFO_SUFFIX) ? `${name}${FIFO_SUFFIX}` : name);
  return { source: withSuffix(given), deadLetter: withSuffix(options.deadLetterQueueName ?? `${base}-dlq`), fifo };
}

/**
 * The local stand-in for the stack's SQS: a source queue with a redrive policy to `<name>-dlq`, its
 * Lambda event source mapping in process (`start`/`stop`), and, after `listen()`, an SQS
 * JSON-protocol endpoint on 127.0.0.1 that real @aws-sdk/client-sqs clients use unchanged. Messages
 * sent in process and over HTTP land in the same queues. Several LocalSqs may share one broker:
 * each keeps its own queues and mapping, and one endpoint serves them all. `LocalSqs.open` makes
 * one whose messages are kept in Redis as well, and outlive the process.
 */
export class LocalSqs {
  readonly broker: SqsBroker;
  /** The source queue the mapping polls. */
  readonly queue: SqsQueue;
  readonly deadLetterQueue: SqsQueue;
  private readonly mapping: EventSourceMapping;
  private server: SqsServer | undefined;
  // Its own broker (none given): close() closes it, and with it the store it may have.
  private ownsBroker: boolean;

  /**
   * A stand-in whose messages are kept in Redis too (`persistence`): its queues start with those a
   * stand-in on the same prefix left there, in flight ones visible again, and every change is
   * written before the API call that made it answers. Rejects when Redis cannot be reached, when
   * what it holds cannot be read, or when a queue cannot be created. `close()` closes the store.
   */
  static async open(handler: SqsHandler, options: LocalSqsOpenOptions): Promise<LocalSqs> {
    const { persistence, ...settings } = options;
    const store = await RedisMessageStore.connect(persistence);
    let broker: SqsBroker;
    try {
      broker = await SqsBroker.open(store);
    } catch (error) {
      await store.close();
      throw error;
    }
    try {
      const sqs = new LocalSqs(handler, { ...settings, broker });
      sqs.ownsBroker = true;
      return sqs;
    } catch (error) {
      await broker.close();
      throw error;
    }
  }

  /** Throws when a queue cannot be created (a name taken on a shared broker, a name SQS refuses). */
  constructor(handler: SqsHandler, options: LocalSqsOptions = {}) {
    this.broker = options.broker ?? new SqsBroker();
    this.ownsBroker = options.broker === undefined;
    const names = queueNames(options);
    const kind = { fifo: names.fifo, contentBasedDeduplication: options.contentBasedDeduplication ?? false };
    this.deadLetterQueue = this.broker.createQueue(names.deadLetter, kind);
    this.queue = this.broker.createQueue(names.source, {
      ...kind,
      visibilityTimeoutMs: options.visibilityTimeoutMs ?? 30_000,
      delaySeconds: options.delaySeconds ?? 0,
      redrivePolicy: { deadLetterTargetArn: this.deadLetterQueue.arn, maxReceiveCount: options.maxReceiveCount ?? 5 },
    });
    this.mapping = new EventSourceMapping(
      this.queue,
      handler,
      {
        batchSize: options.batchSize ?? 10,
        concurrency: options.concurrency ?? 4,
        pollMs: options.pollMs ?? 25,
      },
      () => this.broker.settled(),
    );
  }

  /** The message move tasks of its broker (StartMessageMoveTask). */
  get moves(): MoveTasks {
    return this.broker.moves;
  }

  /**
   * The SQS endpoint for `new SQSClient({ endpoint })`: its own server's, else that of a server
   * serving its broker (another LocalSqs's that listens); throws while there is none.
   */
  get endpoint(): string {
    const origin = this.server?.url ?? this.broker.origin;
    if (origin === undefined) throw new Error("the SQS stand-in has no endpoint until listen() resolves");
    return origin;
  }

  /** The source queue's URL at `endpoint`; throws while there is none. */
  get queueUrl(): string {
    return this.broker.urlOf(this.queue, this.server?.url);
  }

  /** The dead-letter queue's URL at `endpoint`; throws while there is none. */
  get deadLetterQueueUrl(): string {
    return this.broker.urlOf(this.deadLetterQueue, this.server?.url);
  }

  /**
   * Sends to the source queue, as SendMessage (same validation; throws its SqsError); returns the
   * message id, on a FIFO queue that of the first message sent with the same deduplication id in
   * the last 5 minutes, if any (then nothing is stored). With persistence, the message is in Redis
   * once `settled()` resolves.
   */
  send(body: string, options: LocalSendOptions = {}): string {
    const { messageAttributes: attributes, now, ...members } = options;
    return this.queue.send(body, { attributes, ...members }, now).messageId;
  }

  /**
   * Resolves once every change so far (in-process sends included) is in the store of its broker, at
   * once without one; rejects when the write carrying the latest ones failed.
   */
  async settled(): Promise<void> {
    await this.broker.settled();
  }

  /** Starts the mapping's pollers: `concurrency` loops, each invoking the handler with one batch at a time. */
  start(): void {
    this.mapping.start();
  }

  /** Stops the pollers and waits for the invocations in flight to finish. */
  async stop(): Promise<void> {
    await this.mapping.stop();
  }

  /** Counts for the live view and the summary. */
  stats(now = Date.now()): SqsCounts {
    const counts = this.queue.counts(now);
    return {
      visible: counts.visible,
      inFlight: this.mapping.counts.inFlight,
      notVisible: counts.notVisible,
      delayed: counts.delayed,
      deleted: this.queue.totals.deleted,
      redelivered: this.queue.totals.redelivered,
      deadLettered: this.deadLetterQueue.size,
      invocations: this.mapping.counts.invocations,
    };
  }

  /** The dead-letter queue's messages, oldest first, with their attributes and how they got there. */
  get deadLetters(): DeadLetter[] {
    return this.deadLetterQueue.all().map((message) => ({
      ...view(message),
      deadLetteredBy: message.arrival === "redrive" ? "redrive" : "sent",
      ...(message.sourceArn !== undefined && { sourceArn: message.sourceArn }),
    }));
  }

  /**
   * Starts its own HTTP endpoint on 127.0.0.1 (`port` 0: a free one), serving every queue of its
   * broker; again, returns the running one. A LocalSqs whose broker another one serves need not.
   */
  async listen(port = 0): Promise<{ url: string }> {
    this.server ??= await startSqsServer(this.broker, port);
    return { url: this.server.url };
  }

  /**
   * Stops the pollers and, if it started one, its endpoint: pending long polls answer with no
   * messages. Another LocalSqs on the same broker keeps its queues and mapping. A broker of its own
   * is closed too, after its pending writes (close the LocalSqs sharing it first).
   */
  async close(): Promise<void> {
    await this.stop();
    const server = this.server;
    this.server = undefined;
    await server?.close();
    if (this.ownsBroker) await this.broker.close();
  }
}
