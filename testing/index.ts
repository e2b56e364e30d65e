// `leaseq/testing`: helpers for testing your task handlers and your worker, with vitest, node:test
// or any runner. testTask and runTask need no Redis.
export { type RunTaskOptions, runTask, type TaskOutcome } from "./run-task.js";
export { testTask } from "./test-task.js";
