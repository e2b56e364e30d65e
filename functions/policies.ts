import taskTypes from "./task-types.js";

/** Lease and attempts of each declared task type: what the CDK stack validates against timeouts. */
export const TASK_POLICIES: Record<string, { leaseMs: number; maxAttempts: number }> = Object.fromEntries(
  Object.entries(taskTypes.types).map(([name, type]) => [
    name,
    { leaseMs: type.leaseMs, maxAttempts: type.maxAttempts },
  ]),
);
