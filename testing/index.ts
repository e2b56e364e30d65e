// `leaseq/testing`: helpers for testing your task handlers and your worker, with vitest, node:test
// or any runner. testTask and runTask need no Redis; createTestWorker runs a real one.
export type { DrainCounts } from "../functions/drain.js";
export { type RunTaskOptions, runTask, type TaskOutcome } from "./run-task.js";
export { testTask } from "./test-task.js";
export {
  createTestWorker,
  TEST_LINGER_MS,
  type TestWorker,
  type TestWorkerOptions,
} from "./test-worker.js";
