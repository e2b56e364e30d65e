import type { SqsBroker } from "./broker.js";
import type { MoveTasks } from "./moves.js";
import type { Input } from "./params.js";

/** What an operation may use: the queues, the move tasks, and a signal that ends a long poll early. */
export interface OperationContext {
  broker: SqsBroker;
  moves: MoveTasks;
  /** Aborted when the client went away or the server closes. */
  signal: AbortSignal;
}

/** One SQS operation of the JSON protocol: the request's members in, the response's members out. */
export type Operation = (input: Input, context: OperationContext) => Input | Promise<Input>;
