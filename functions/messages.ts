/**
 * The SQS message bodies the worker reads: what producers send. `{"tasks": [...]}` enqueues; a
 * wake-up (`{}` or `{"leaseq": "wake"}`) only starts a drain. Anything else is rejected.
 */

/** One task in an SQS message. Without an id, the worker derives one from the message id and index. */
export interface TaskMessage {
  id?: string;
  type: string;
  /** Any JSON value. Default {}. */
  payload?: unknown;
  /** Integer from -1000 to 1000; lower runs sooner. Default 0. */
  priority?: number;
  /** Run no sooner than this many ms after the worker reads the message. */
  delayMs?: number;
  /** Run no sooner than this time: ms since epoch, or an ISO 8601 string. */
  runAt?: number | string;
  /** Its group (same characters as an id, at most 128): its type's group policy applies (docs/groups.md). */
  group?: string;
}

/** The body that enqueues: 1 to 1000 tasks. */
export interface TaskMessageBody {
  tasks: TaskMessage[];
}

/** The bodies that only wake the worker. */
export type WakeMessageBody = Record<string, never> | { leaseq: "wake" };

/** The fields a task in a message may have. */
export const TASK_MESSAGE_FIELDS = ["id", "type", "payload", "priority", "delayMs", "runAt", "group"] as const;

/** Most tasks one message may carry (one enqueue call). */
export const MAX_TASKS_PER_MESSAGE = 1000;

/** The SQS message size limit counted by leaseq's producer: body plus attributes. */
export const MAX_MESSAGE_BYTES = 256 * 1024;
