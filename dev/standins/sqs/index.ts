// The local SQS stand-in: queue model, JSON-protocol server, event source mapping, and the LocalSqs facade.
export { SqsBroker } from "./broker.js";
export { SqsError } from "./errors.js";
export { DEDUPLICATION_INTERVAL_MS } from "./fifo.js";
export { ACCOUNT_ID, queueArn, REGION } from "./ids.js";
export {
  type DeadLetter,
  type LocalMessage,
  type LocalSendOptions,
  LocalSqs,
  type LocalSqsOptions,
  type SqsCounts,
} from "./local-sqs.js";
export { EventSourceMapping, type SqsHandler } from "./mapping.js";
export {
  MAX_MESSAGE_BYTES,
  md5OfAttributes,
  md5OfBody,
  type SqsAttributes,
  type SqsAttributeValue,
} from "./message.js";
export { type MoveTask, MoveTasks } from "./moves.js";
export type { QueueSettings, RedrivePolicy, SendOptions, SqsQueue } from "./queue.js";
export { type SqsServer, startSqsServer } from "./server.js";
