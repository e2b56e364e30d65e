/**
 * The SQS message bodies the worker reads: what producers send. `{"tasks": [...]}` enqueues; a
 * wake-up (`{}` or `{"leaseq": "wake"}`) only starts a drain. Anything else is rejected.
 */
import type { DebounceOptions, DedupeOptions, SingletonOptions, ThrottleOptions } from "../shared/flow.js";
import { TASK_INPUT_FIELDS } from "../shared/types.js";

/** The fields of one task in an SQS message, whatever its type. */
interface TaskMessageFields {
  /**
   * `^[A-Za-z0-9_.:@-]{1,128}$`, not ending in `:` and a lower-case letter (an EventBridge rule's
   * `$.time` makes one). Without an id, the worker derives one from the message id and index.
   */
  id?: string;
  /** Integer from -1000 to 1000; lower runs sooner. Default 0. */
  priority?: number;
  /** Run no sooner than this many ms after the worker reads the message. */
  delayMs?: number;
  /** Run no sooner than this time: ms since epoch, or an ISO 8601 string. */
  runAt?: number | string;
  /** Its group (`^[A-Za-z0-9_.:@-]{1,128}$`): its type's group policy applies (docs/groups.md). */
  group?: string;
  /** At most one of these (docs/flow-control.md); without one, its type's default `flow` applies at ingest. */
  dedupe?: DedupeOptions;
  debounce?: DebounceOptions;
  throttle?: ThrottleOptions;
  singleton?: SingletonOptions;
}

/**
 * One task in an SQS message. With `Payloads` (a declaration's, see `TaskPayloads`), one of the
 * declared types with that type's payload: `{ type: "email", payload: { to } }`. By default any
 * type and any JSON payload (default {}).
 */
export type TaskMessage<Payloads extends Record<string, unknown> = Record<string, unknown>> = TaskOfType<
  Payloads,
  TaskMessageFields
>;

/**
 * A union over the type names of `Payloads`: `fields`, the name as `type`, and that type's payload
 * as `payload`, required unless the payload type takes undefined.
 */
export type TaskOfType<Payloads extends Record<string, unknown>, Fields> = {
  [Type in keyof Payloads & string]: Flat<
    Fields & { type: Type } & (undefined extends Payloads[Type]
        ? { payload?: Payloads[Type] }
        : { payload: Payloads[Type] })
  >;
}[keyof Payloads & string];

type Flat<T> = { [K in keyof T]: T[K] };

/** The body that enqueues: 1 to 1000 tasks. */
export interface TaskMessageBody {
  tasks: TaskMessage[];
}

/** The bodies that only wake the worker. */
export type WakeMessageBody = Record<string, never> | { leaseq: "wake" };

/** The fields a task in a message may have: those of the library's TaskInput. */
export const TASK_MESSAGE_FIELDS = TASK_INPUT_FIELDS;

/** Most tasks one message may carry (one enqueue call). */
export const MAX_TASKS_PER_MESSAGE = 1000;

/** The SQS message size limit counted by leaseq's producer: body plus attributes. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/**
 * The message attribute (String) a traced send puts the W3C traceparent of its PRODUCER span in:
 * the intake stores it with the message's tasks (docs/lambda.md#tracing). The name is the one
 * OpenTelemetry's W3C propagator injects, so a message an instrumented SQS client sent is read
 * the same way.
 */
export const TRACEPARENT_ATTRIBUTE = "traceparent";
