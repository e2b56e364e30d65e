// The local SQS stand-in: queue model, JSON-protocol server, event source mapping, the LocalSqs
// facade, and the Redis store that keeps the messages beyond the process.
export { SqsBroker } from "./broker.js";
export { SqsError } from "./errors.js";
export { DEDUPLICATION_INTERVAL_MS } from "./fifo.js";
export { ACCOUNT_ID, queueArn, REGION } from "./ids.js";
export {
  type DeadLetter,
  type LocalMessage,
  type LocalSendOptions,
  LocalSqs,
  type LocalSqsOpenOptions,
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
export { type QueueKeys, queueKeys, queuesKey } from "./redis-keys.js";
export { RedisMessageStore, type RedisStoreOptions } from "./redis-store.js";
export { type SqsServer, startSqsServer } from "./server.js";
export type { MessageStore, QueueJournal, RestoredQueue } from "./store.js";
