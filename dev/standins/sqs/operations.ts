import type { SqsBroker } from "./broker.js";
import type { Input } from "./params.js";

/**
 * What an operation may use: the queues and their move tasks, the origin of the server answering,
 * and a signal that ends a long poll early.
 */
export interface OperationContext {
  broker: SqsBroker;
  /** The origin of the server answering (`http://127.0.0.1:<port>`): the queue URLs it gives out name it. */
  origin: string;
  /** Aborted when the client went away or the server closes. */
  signal: AbortSignal;
}

/** One SQS operation of the JSON protocol: the request's members in, the response's members out. */
export type Operation = (input: Input, context: OperationContext) => Input | Promise<Input>;
