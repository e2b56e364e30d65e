import { createHash, randomUUID } from "node:crypto";
import {
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { ConfigError } from "../shared/errors.js";
import type { PartitionedQueue } from "../shared/partitioned-queue.js";
import type { Queue } from "../shared/queue.js";
import { withSendSpan } from "../shared/tracing.js";
import type { EnqueueResult, TaskInput } from "../shared/types.js";
import { withFlowDefault } from "./flow-defaults.js";
import {
  MAX_MESSAGE_BYTES,
  MAX_TASKS_PER_MESSAGE,
  type TaskMessage,
  type TaskMessageBody,
  type TaskOfType,
  TRACEPARENT_ATTRIBUTE,
  type WakeMessageBody,
} from "./messages.js";
import { checkOutgoingTasks } from "./send-checks.js";
import type { TaskDeclaration } from "./tasks.js";
import { sendWakeTo, wakeAttributes, wakeDelaySeconds } from "./wake.js";
import type { Wake } from "./work-queue.js";

type Payloads = Record<string, unknown>;

export interface ProducerOptions<Declared extends Payloads = Payloads> {
  /** The LeaseQueue's SQS queue URL (the construct's `queue.queueUrl`); a `.fifo` one is sent FIFO ids. */
  queueUrl: string;
  /**
   * Your `defineTasks(...)` result, optional: `send` and `enqueue` then take only its types (and
   * `acceptTypes`), each with its payload type, and refuse any other type, and a payload its schema
   * rejects, before sending anything.
   */
  tasks?: TaskDeclaration<Declared>;
  /**
   * Where `enqueue` and `wake` send wake-ups: a standard queue of the worker (a wake-up is delayed
   * per message, which FIFO queues refuse). Default: `queueUrl`.
   */
  wakeQueueUrl?: string;
  /** Your SQS client; default: `new SQSClient({})`, built once. */
  client?: SQSClient;
}

/** A task for `producer.enqueue`: a TaskInput whose id may be left out (a random one is given). */
export type DirectTask<Declared extends Payloads = Payloads> = TaskOfType<
  Declared,
  Omit<TaskInput, "id" | "type" | "payload"> & { id?: string }
>;

/** Sends tasks to a LeaseQueue (`createProducer`); `Declared`: the payload of each type it takes. */
export interface Producer<Declared extends Payloads = Payloads> {
  /**
   * Sends `tasks` as `{"tasks": [...]}` SQS messages. Throws InvalidInputError before sending
   * anything when a task is refused (an unknown field, an undeclared type, a payload its schema
   * rejects), SendError naming the ids SQS refused or could not be sent (the others are in: sending
   * the same tasks again is safe, their ids kept). With tracing (docs/lambda.md#tracing), the send
   * is a PRODUCER span whose traceparent each message carries (attribute `traceparent`), and the
   * intake stores with the tasks.
   */
  send(tasks: readonly TaskMessage<Declared>[]): Promise<SendResult>;
  /**
   * Enqueues straight into Redis through `queue` (no SQS message per task), then sends the one
   * wake-up message the queue asks for, if any: none while a wake-up is arranged already or a
   * worker is draining, so a burst of enqueues sends a handful (docs/wake-ups.md). Tasks due
   * within 15 minutes get a wake-up delayed to their time; later ones, the reclaimer's.
   * Once the tasks are in, nothing throws: a wake-up SQS refused (or could not be reached for) is
   * `wakeError` in the result, and the tasks start at the reclaimer's next run. It throws only when
   * nothing was written: InvalidInputError for a task `send` would refuse, ConfigError when wake-ups
   * would go to a FIFO queue, a StoreError when Redis refused or could not be reached. Tasks
   * without an id get a random one first (the results carry the ids), so calling again enqueues
   * nothing twice.
   */
  enqueue(
    queue: Queue | PartitionedQueue,
    tasks: readonly DirectTask<Declared>[],
    options?: { now?: number },
  ): Promise<EnqueueAndWakeResult>;
  /** Sends one wake-up message: the worker drains what is READY. `delaySeconds` ≤ 900. */
  wake(delaySeconds?: number): Promise<void>;
}

/** What a direct enqueue did: per task its result, and the wake-up sent for them (ms), if one was needed. */
export interface EnqueueAndWakeResult {
  results: EnqueueResult[];
  wakeAtMs: number | undefined;
  /**
   * Why the wake-up for `wakeAtMs` could not be sent (SQS refused it or could not be reached): the
   * tasks are in, and start at the reclaimer's next run instead. Undefined when it was sent or none
   * was needed.
   */
  wakeError?: string;
}

/** What a send did: the ids of the tasks (generated where none was given) and the SQS messages used. */
export interface SendResult {
  ids: string[];
  messages: number;
}

/** Thrown when SQS refused some messages; `ids` are the tasks that were not sent (safe to send again). */
export class SendError extends Error {
  override name = "SendError";
  constructor(
    message: string,
    readonly ids: string[],
  ) {
    super(message);
  }
}

const ENTRIES_PER_BATCH = 10;

/**
 * A producer for a LeaseQueue: sends tasks as the documented SQS body `{"tasks": [...]}`, split so
 * each message stays under 256 KiB and 1000 tasks, ten messages per SendMessageBatch. Tasks without
 * an id get a random one first, so sending again after a failure never enqueues a task twice. With
 * `tasks` (your declaration) it takes only the declared types, each with its payload type.
 */
export function createProducer<Declared extends Payloads = Payloads>(
  options: ProducerOptions<Declared>,
): Producer<Declared> {
  const client = options.client ?? new SQSClient({});
  const declaration = options.tasks;
  const fifo = options.queueUrl.endsWith(".fifo");
  const wakeQueueUrl = options.wakeQueueUrl ?? options.queueUrl;
  const checkWakeQueue = () => {
    if (!wakeQueueUrl.endsWith(".fifo")) return;
    const given = options.wakeQueueUrl === undefined ? " (not given: queueUrl)" : "";
    throw new ConfigError([
      `producer: wakeQueueUrl${given} ${wakeQueueUrl} is a FIFO queue, which refuses the per-message delay of a wake-up; pass wakeQueueUrl, a standard queue of the worker`,
    ]);
  };
  const sendWake = async (delaySeconds: number, partition?: number) => {
    const body: WakeMessageBody = { leaseq: "wake" };
    const reply = await client.send(
      new SendMessageBatchCommand({
        QueueUrl: wakeQueueUrl,
        Entries: [
          {
            Id: "0",
            MessageBody: JSON.stringify(body),
            DelaySeconds: delaySeconds,
            // A partitioned queue's wake-up names its partition (docs/partitions.md).
            ...wakeAttributes(undefined, partition),
          },
        ],
      }),
    );
    const failed = reply.Failed?.[0];
    if (failed) throw new SendError(`SQS refused the wake-up (${failed.Code}: ${failed.Message})`, []);
  };
  // The SQS queue's name, the destination of a send's span (its URL's last part).
  const queueName = options.queueUrl.slice(options.queueUrl.lastIndexOf("/") + 1);
  /**
   * Sends `bodies`, ten per SendMessageBatch, each with `attributes`; resolves to the ids of the
   * tasks SQS refused, or could not be sent, and why.
   */
  const sendBodies = async (
    bodies: Body[],
    attributes: Record<string, MessageAttributeValue> | undefined,
    reserved: number,
  ): Promise<{ ids: string[]; reasons: Set<string> }> => {
    const refused: string[] = [];
    const reasons = new Set<string>();
    for (let start = 0; start < bodies.length; start += ENTRIES_PER_BATCH) {
      for (const batch of batchesUnderLimit(bodies.slice(start, start + ENTRIES_PER_BATCH), reserved)) {
        const entries: SendMessageBatchRequestEntry[] = batch.map((body, i) => ({
          Id: String(i),
          MessageBody: body.text,
          ...(attributes === undefined ? {} : { MessageAttributes: attributes }),
          ...(body.messageGroupId === undefined
            ? {}
            : { MessageGroupId: body.messageGroupId, MessageDeduplicationId: deduplicationId(body.ids) }),
        }));
        let failures: Array<{ Id?: string; Code?: string; Message?: string }>;
        try {
          failures =
            (await client.send(new SendMessageBatchCommand({ QueueUrl: options.queueUrl, Entries: entries }))).Failed ??
            [];
        } catch (error) {
          // A batch that could not be sent at all: its tasks are refused; the batches before it
          // are in, and the call goes on with the rest rather than stop half-way.
          const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
          failures = entries.map((entry) => ({ Id: entry.Id, Code: "NotSent", Message: reason }));
        }
        for (const failed of failures) {
          refused.push(...batch[Number(failed.Id)].ids);
          reasons.add(`${failed.Code}: ${failed.Message}`);
        }
      }
    }
    return { ids: refused, reasons };
  };
  return {
    async send(tasks) {
      await checkOutgoingTasks("send", tasks, declaration);
      const withIds: TaskMessage[] = tasks.map((task) =>
        task.id === undefined ? { ...task, id: randomUUID() } : task,
      );
      const ids = withIds.map((task) => task.id as string);
      return withSendSpan(queueName, ids, async (traceparent) => {
        // The context travels as a message attribute, which SQS counts in the message's size.
        const attributes = traceparent === "" ? undefined : traceAttribute(traceparent);
        const reserved = attributes ? attributeBytes(attributes) : 0;
        const bodies = fifo ? fifoBodies(withIds, reserved) : splitIntoBodies(withIds, reserved);
        const refused = await sendBodies(bodies, attributes, reserved);
        if (refused.ids.length > 0) {
          const sent = withIds.length - refused.ids.length;
          throw new SendError(
            `SQS refused ${refused.ids.length} of ${withIds.length} tasks (${[...refused.reasons].join("; ")})${sent > 0 ? `; the other ${sent} are sent` : ""}: send the refused ones again (their ids are kept, so a resend never enqueues one twice)`,
            refused.ids,
          );
        }
        return { ids, messages: bodies.length };
      });
    },

    async enqueue(queue, tasks, options = {}) {
      checkWakeQueue();
      await checkOutgoingTasks("enqueue", tasks, declaration);
      const now = options.now ?? Date.now();
      const withIds = tasks.map((task) =>
        withFlowDefault(
          declaration?.types[task.type]?.flow,
          (task.id === undefined ? { ...task, id: randomUUID() } : task) as TaskInput,
        ),
      );
      const answer = await queue.enqueueAndWake(withIds, { now });
      const { results, wakeTo } = answer;
      // A partitioned queue asks for a wake-up per partition, each naming it.
      const wakes: Wake[] =
        "wakes" in answer ? answer.wakes : answer.wakeAtMs === undefined ? [] : [{ atMs: answer.wakeAtMs }];
      const wakeAtMs = wakes.length === 0 ? undefined : Math.min(...wakes.map((wake) => wake.atMs));
      // The tasks are in: a wake-up that fails now is said, not thrown (the caller's retry would
      // only find them duplicates); the reclaimer's run starts them. Types another deployment of a
      // shared queue runs wake that deployment's workers, on its wake queue (docs/wake-ups.md).
      const errors = await sendWakeTo(client, wakeTo, now);
      for (const wake of wakes) {
        try {
          await sendWake(wakeDelaySeconds(wake.atMs, now), wake.partition);
        } catch (error) {
          errors.unshift(error instanceof Error ? error.message : String(error));
        }
      }
      return errors.length === 0 ? { results, wakeAtMs } : { results, wakeAtMs, wakeError: errors.join("; ") };
    },
    async wake(delaySeconds = 0) {
      checkWakeQueue();
      await sendWake(delaySeconds);
    },
  };
}

interface Body {
  text: string;
  ids: string[];
  /** On a FIFO queue: the group of its tasks, or for ungrouped tasks its first task's id. */
  messageGroupId?: string;
}

/**
 * Bodies for a FIFO queue: never tasks of two groups in one message (SQS orders a message group,
 * and a message has one), each group's tasks in their send order. A task without a group but with a
 * flow key (dedupe, debounce, throttle, singleton) goes in the message group of its key, so the
 * sends of one key are read in their order (a debounce's or a singleton's last payload stays the
 * last). Other tasks without a group share messages, each message grouped by its first task's id: a
 * message group of its own, so they never wait behind each other, nor behind a group.
 */
export function fifoBodies(tasks: readonly TaskMessage[], reservedBytes = 0): Body[] {
  const byGroup = new Map<string | undefined, TaskMessage[]>();
  for (const task of tasks) {
    const group = task.group ?? flowGroupOf(task);
    const same = byGroup.get(group);
    if (same) same.push(task);
    else byGroup.set(group, [task]);
  }
  return [...byGroup].flatMap(([group, members]) =>
    splitIntoBodies(members, reservedBytes).map((body) => ({ ...body, messageGroupId: group ?? body.ids[0] })),
  );
}

/**
 * The message group of an ungrouped task's flow key: `flow:<mode>:<key>` (SQS allows 128 characters:
 * a longer one is cut, with a digest of the whole); undefined without a flow key.
 */
function flowGroupOf(task: TaskMessage): string | undefined {
  const mode = (["dedupe", "debounce", "throttle", "singleton"] as const).find((name) => task[name] !== undefined);
  if (mode === undefined) return undefined;
  const key = (task[mode] as { key: string }).key;
  const group = `flow:${mode}:${key}`;
  if (group.length <= 128) return group;
  return `${group.slice(0, 111)}-${createHash("sha256").update(group).digest("hex").slice(0, 16)}`;
}

/**
 * A FIFO message's deduplication id: a hash of its task ids, so SQS drops a resend of the same
 * tasks within its 5-minute deduplication window (enqueue would find them duplicates anyway).
 */
function deduplicationId(ids: readonly string[]): string {
  return createHash("sha256").update(ids.join("\n")).digest("hex");
}

/**
 * Packs tasks into message bodies of at most MAX_MESSAGE_BYTES and MAX_TASKS_PER_MESSAGE tasks, in
 * order; `reservedBytes` of each message are its attributes'.
 */
export function splitIntoBodies(tasks: readonly TaskMessage[], reservedBytes = 0): Body[] {
  const bodies: Body[] = [];
  const envelope = Buffer.byteLength(JSON.stringify({ tasks: [] } satisfies TaskMessageBody)) + reservedBytes;
  let current: string[] = [];
  let ids: string[] = [];
  let bytes = envelope;
  const close = () => {
    if (current.length === 0) return;
    bodies.push({ text: `{"tasks":[${current.join(",")}]}`, ids });
    current = [];
    ids = [];
    bytes = envelope;
  };
  for (const task of tasks) {
    const text = JSON.stringify(task);
    const size = Buffer.byteLength(text);
    if (envelope + size > MAX_MESSAGE_BYTES) {
      throw new SendError(
        `task ${task.id} is ${size} bytes as JSON; one SQS message takes ${MAX_MESSAGE_BYTES - envelope}`,
        [String(task.id)],
      );
    }
    const separator = current.length > 0 ? 1 : 0;
    if (bytes + separator + size > MAX_MESSAGE_BYTES || current.length === MAX_TASKS_PER_MESSAGE) close();
    bytes += (current.length > 0 ? 1 : 0) + size;
    current.push(text);
    ids.push(String(task.id));
  }
  close();
  return bodies;
}

/**
 * Splits up to ten bodies into SendMessageBatch calls whose total stays under the request limit,
 * each message counting `reservedBytes` of attributes besides its body.
 */
function batchesUnderLimit(bodies: Body[], reservedBytes: number): Body[][] {
  const batches: Body[][] = [];
  let current: Body[] = [];
  let bytes = 0;
  for (const body of bodies) {
    const size = Buffer.byteLength(body.text) + reservedBytes;
    if (current.length > 0 && bytes + size > MAX_MESSAGE_BYTES) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(body);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** The message attribute that carries a send's context to the intake (docs/lambda.md#tracing). */
function traceAttribute(traceparent: string): Record<string, MessageAttributeValue> {
  return { [TRACEPARENT_ATTRIBUTE]: { DataType: "String", StringValue: traceparent } };
}

/** What SQS counts of message attributes in a message's size: each name, data type and value. */
function attributeBytes(attributes: Record<string, MessageAttributeValue>): number {
  return Object.entries(attributes).reduce(
    (sum, [name, value]) =>
      sum +
      Buffer.byteLength(name) +
      Buffer.byteLength(value.DataType ?? "") +
      Buffer.byteLength(value.StringValue ?? ""),
    0,
  );
}
