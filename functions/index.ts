// `leaseq/lambda`: Lambda handler factories, the task declaration, and the producer helper.
// Never loads the CDK; the AWS SDK v3 clients it uses come with the Lambda Node.js runtime.
export { InvalidInputError } from "../shared/errors.js";
export { DEAD_LETTER_ATTRIBUTES } from "./dead-letter.js";
export type { DrainCounts } from "./drain.js";
export {
  MAX_MESSAGE_BYTES,
  MAX_TASKS_PER_MESSAGE,
  type TaskMessage,
  type TaskMessageBody,
  type TaskOfType,
  type WakeMessageBody,
} from "./messages.js";
export {
  createProducer,
  type DirectTask,
  type EnqueueAndWakeResult,
  type Producer,
  type ProducerOptions,
  SendError,
  type SendResult,
} from "./producer.js";
export { createReclaimer, type ReclaimerHandler, type ReclaimerOptions, type ReclaimerSummary } from "./reclaimer.js";
export type { StandardSchemaV1 } from "./schema.js";
export {
  type Backoff,
  backoffDelayMs,
  type DeclaredTaskType,
  defineTasks,
  LEASE_MARGIN_MS,
  PermanentError,
  TASK_DEFAULTS,
  type Task,
  type TaskDeclaration,
  type TaskDefinitions,
  type TaskHandler,
  type TaskPayloads,
  type TaskTypeOptions,
} from "./tasks.js";
export { createWorker, type DrainEvent, type WorkerHandler, type WorkerOptions } from "./worker.js";
