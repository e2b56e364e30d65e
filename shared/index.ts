// `leaseq`: the queue library. No AWS SDK, no CDK, no logging: it returns or throws.
export { DEFAULTS, LIMITS } from "./config.js";
export {
  CONNECTION_VARIABLES,
  type Connection,
  connectionFromEnv,
  describeConnection,
  openStore,
} from "./connection.js";
export {
  ConfigError,
  CredentialsError,
  InvalidInputError,
  ITEM_STATUS,
  type ItemStatus,
  QueueError,
  ScriptArgumentError,
  StoreError,
  UnreachableError,
} from "./errors.js";
export { type QueueKeys, queueKeys } from "./keys.js";
export {
  type PartitionedClaimOptions,
  PartitionedQueue,
  type PartitionedQueueOptions,
  type PartitionedStats,
  partitionQueue,
} from "./partitioned-queue.js";
export { PARTITIONS_MAX, partitionOf, partitionTag, routingKey, slotOfTag } from "./partitions.js";
export { type ClaimOptions, Queue, type QueueOptions, type ResultOf, type WaitOptions } from "./queue.js";
export { listQueues, type QueueAdmin } from "./queue-admin.js";
export type { PlanResult, QueueSchedules, ScheduleInfo } from "./queue-schedules.js";
export type { LuaScript, Store } from "./store.js";
export type { RetryPolicy } from "./stores/retry.js";
export { TcpStore } from "./stores/tcp.js";
export { RedisReplyError, UpstashStore, type UpstashStoreOptions } from "./stores/upstash.js";
export type * from "./types.js";
export { TIME_OF_STATE } from "./types.js";
