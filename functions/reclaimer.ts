import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import type { Context } from "aws-lambda";
import type { TickResult } from "../shared/types.js";
import { type FunctionConfig, readConfig } from "./config.js";
import { createRuntime, type Runtime } from "./runtime.js";
import type { TaskRegistry } from "./task.js";

// The reclaimer never claims, so it needs no task types (and its bundle carries no handlers).
const NO_TYPES: TaskRegistry = { ordered: false, types: {} };
const LIMIT = 1000; // tasks per reclaim/promote/trim call
const TASKS_PER_KICK = 500; // backlog one drain invocation is expected to take on

export interface ReclaimerOptions {
  env?: Record<string, string | undefined>;
  /** Unused by reclaim, promote, trim and stats (they read each task's policy from its record). */
  registry?: TaskRegistry;
  logger?: Logger;
  metrics?: Metrics;
}

export interface ReclaimerSummary extends TickResult {
  trimmed: number;
  kicks: number;
}

function lambdaClient(config: FunctionConfig): LambdaClient {
  if (!config.lambdaEndpoint) return new LambdaClient({});
  // A local stand-in for the Lambda API: no AWS account, so no real credentials either.
  return new LambdaClient({
    endpoint: config.lambdaEndpoint,
    region: process.env.AWS_REGION ?? "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

/**
 * Builds the reclaimer handler: one pass reclaims expired leases, promotes due tasks and trims
 * retention (continuing in bounded batches while the time budget lasts), publishes the queue
 * metrics in CloudWatch EMF, and kicks the worker when ready tasks are waiting. Overlapping runs
 * are harmless: every step is one atomic script.
 */
export function createReclaimerHandler(options: ReclaimerOptions = {}) {
  const logger = options.logger ?? new Logger({ serviceName: "leaseq-reclaimer" });
  const metrics = options.metrics ?? new Metrics({ namespace: "leaseq", serviceName: "leaseq-reclaimer" });
  let runtime: Promise<Runtime & { lambda: LambdaClient }> | undefined;

  return async (_event: unknown, context: Pick<Context, "getRemainingTimeInMillis">): Promise<ReclaimerSummary> => {
    const startedAt = Date.now();
    runtime ??= (async () => {
      const config = readConfig(options.env ?? process.env);
      return { ...(await createRuntime(config, options.registry ?? NO_TYPES)), lambda: lambdaClient(config) };
    })();
    const { queue, config, lambda } = await runtime.catch((error: unknown) => {
      runtime = undefined;
      throw error;
    });
    const hasTime = () => context.getRemainingTimeInMillis() > config.safetyMarginMs + 1_000;

    let tick = await queue.tick({ now: Date.now(), limit: LIMIT });
    const totals = { ...tick, trimmed: tick.doneTrimmed + tick.failedTrimmed };
    let more = tick.reclaimed + tick.reclaimFailed >= LIMIT || tick.promoted >= LIMIT;
    more ||= tick.doneTrimmed >= LIMIT || tick.failedTrimmed >= LIMIT;
    while (more && hasTime()) {
      tick = await queue.tick({ now: Date.now(), limit: LIMIT });
      totals.reclaimed += tick.reclaimed;
      totals.reclaimFailed += tick.reclaimFailed;
      totals.promoted += tick.promoted;
      totals.trimmed += tick.doneTrimmed + tick.failedTrimmed;
      more = [tick.reclaimed + tick.reclaimFailed, tick.promoted, tick.doneTrimmed, tick.failedTrimmed].some(
        (n) => n >= LIMIT,
      );
    }
    const summary: ReclaimerSummary = { ...totals, ...statsOf(tick), kicks: 0 };

    if (config.workerFunction && summary.ready > 0 && summary.oldestReadyAgeMs >= config.kickAfterMs) {
      summary.kicks = Math.min(config.maxKicks, Math.ceil(summary.ready / TASKS_PER_KICK));
      const payload = new TextEncoder().encode(JSON.stringify({ leaseq: "drain" }));
      await Promise.all(
        Array.from({ length: summary.kicks }, () =>
          lambda.send(
            new InvokeCommand({ FunctionName: config.workerFunction, InvocationType: "Event", Payload: payload }),
          ),
        ),
      );
    }

    metrics.addDimension("queue", config.queue);
    for (const name of ["ready", "scheduled", "leased", "done", "failed", "reclaimed", "trimmed"] as const) {
      metrics.addMetric(name, MetricUnit.Count, summary[name]);
    }
    metrics.addMetric("oldestReadyAgeMs", MetricUnit.Milliseconds, summary.oldestReadyAgeMs);
    metrics.addMetric("mostOverdueLeaseMs", MetricUnit.Milliseconds, summary.mostOverdueLeaseMs);
    metrics.publishStoredMetrics();
    logger.info("reclaimer run", { queue: config.queue, ...summary, durationMs: Date.now() - startedAt });
    return summary;
  };
}

function statsOf(tick: TickResult) {
  const { ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs, dueScheduled } = tick;
  return { ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs, dueScheduled };
}

/** The Lambda entry point, for the EventBridge schedule. */
export const handler = createReclaimerHandler();
