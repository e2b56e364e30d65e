import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Context } from "aws-lambda";
import type { Queue } from "../shared/queue.js";
import type { PlanResult } from "../shared/queue-schedules.js";
import { sumStats } from "../shared/sum-stats.js";
import { redact } from "../shared/text.js";
import type { TickResult } from "../shared/types.js";
import { type FunctionConfig, readConfig } from "./config.js";
import {
  METRICS_NAMESPACE,
  PARTITION_DIMENSION,
  PARTITION_METRICS,
  QUEUE_METRICS,
  type QueueMetricName,
} from "./metric-names.js";
import { createRuntime, type Runtime } from "./runtime.js";
import { functionSqsClient, sendWakeTo, sqsWakeSender, type WakeSender } from "./wake.js";

const LIMIT = 500; // tasks per reclaim/promote/trim call: a call of 500 moves stays under ~4 ms of Redis time
const TASKS_PER_DRAIN_INVOCATION = 500; // backlog one drain invocation is expected to take on
/** Wake-ups are arranged for what falls due before the next run, and this much after (a late run). */
const WAKE_MARGIN_MS = 10_000;
/** The reclaimer's service name: its logs' and metrics' `service`. */
const SERVICE = "leaseq-reclaimer";

export interface ReclaimerOptions {
  /** Environment to read the configuration from. Default: process.env. */
  env?: Record<string, string | undefined>;
  logger?: Logger;
  metrics?: Metrics;
}

export interface ReclaimerSummary extends TickResult {
  trimmed: number;
  /** Drain invocations the Lambda API accepted. */
  drainInvocations: number;
  /**
   * Drain invocations it refused or that never arrived (logged with the answer; the run still
   * succeeds).
   */
  failedDrainInvocations: number;
  /** When a wake-up was sent for (ms): work falling due before the next run (docs/wake-ups.md). */
  wakeAtMs: number | undefined;
  /** Schedules' slots made into tasks by this run, and slots missed and not caught up (docs/schedules.md). */
  slotsMade: number;
  slotsPassedOver: number;
  /** Schedules the planner could not compute and set aside in this run (`leaseq schedules list` says why). */
  schedulesSetAside: number;
  /** Planning threw (logged): the rest of the run went on. */
  planningFailed: boolean;
}

/**
 * The reclaimer's Lambda handler, for the EventBridge schedule; and `close()`, for tests and scripts
 * that run it in their own process.
 */
export type ReclaimerHandler = ((
  event: unknown,
  context: Pick<Context, "getRemainingTimeInMillis">,
) => Promise<ReclaimerSummary>) & {
  /**
   * Closes what the cold start opened (the Redis connection, the Lambda and SQS clients), so the
   * process can exit; Lambda never needs it. Idempotent; the next run starts again, as after a cold
   * start. Call it once the runs you started have settled.
   */
  close(): Promise<void>;
};

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
 * metrics in CloudWatch EMF, and starts the worker without SQS (a drain invocation) when ready
 * tasks are waiting. Overlapping runs are harmless: every step is one atomic script.
 */
export function createReclaimer(options: ReclaimerOptions = {}): ReclaimerHandler {
  const logger = options.logger ?? new Logger({ serviceName: SERVICE });
  const metrics = options.metrics ?? new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE });
  let runtime:
    | Promise<Runtime & { lambda: LambdaClient; sqs: SQSClient | undefined; waker: WakeSender | undefined }>
    | undefined;

  const close = async () => {
    const opened = runtime;
    runtime = undefined;
    // A start that failed closed what it had opened (createRuntime), so there is nothing to close.
    const started = await opened?.catch(() => undefined);
    started?.sqs?.destroy();
    started?.lambda.destroy();
    await started?.close();
  };

  const run = async (_event: unknown, context: Pick<Context, "getRemainingTimeInMillis">) => {
    const startedAt = Date.now();
    runtime ??= (async () => {
      const config = readConfig(options.env ?? process.env);
      // The reclaimer never claims: it needs no task types (and its bundle carries no handlers).
      const sqs = config.wakeQueueUrl ? functionSqsClient(config.sqsEndpoint) : undefined;
      const waker = config.wakeQueueUrl && sqs ? sqsWakeSender(config.wakeQueueUrl, sqs) : undefined;
      return { ...(await createRuntime(config, undefined)), lambda: lambdaClient(config), sqs, waker };
    })();
    const { queue, partitions, config, lambda, waker, sqs } = await runtime.catch((error: unknown) => {
      runtime = undefined;
      throw error;
    });
    const hasTime = () => context.getRemainingTimeInMillis() > config.safetyMarginMs + 1_000;
    // A partitioned queue's wake-ups and drain invocations name their partition (docs/partitions.md).
    const named = (partition: number) => (partitions.length > 1 ? partition : undefined);

    // Only a reclaimer that can send a wake-up arranges one (else it would mark one arranged).
    const wakeHorizonMs = waker ? Math.min(900_000, config.reclaimPeriodMs + WAKE_MARGIN_MS) : 0;
    // Every partition's tick, each to its end while the time lasts: none waits for another's backlog.
    const ticks = await Promise.all(partitions.map((partition) => tickToEnd(partition, wakeHorizonMs, hasTime)));
    // Schedules: the slots falling before the next run (and a late one) become SCHEDULED tasks,
    // each with its wake-up (docs/schedules.md). The tick says when one is due: no call otherwise.
    // They live in the queue (a partitioned queue's partition 0).
    const planHorizonMs = config.reclaimPeriodMs + WAKE_MARGIN_MS;
    // A schedule the planner cannot compute is set aside by it (listed with why); should planning
    // fail all the same (the store), the run goes on: the tick's work, its wake-up, the drain
    // invocations and the metrics do not wait for the schedules.
    let planned: Pick<PlanResult, "made" | "passedOver" | "setAside" | "wakeAtMs" | "wakeTo"> = {
      made: 0,
      passedOver: 0,
      setAside: 0,
      wakeAtMs: undefined,
      wakeTo: [],
    };
    let planningFailed = false;
    const planAtMs = ticks[0].first.planAtMs;
    if (planAtMs !== undefined && planAtMs <= Date.now() + planHorizonMs) {
      try {
        planned = await queue.schedules.plan({ now: Date.now(), horizonMs: planHorizonMs, wakeHorizonMs });
      } catch (error) {
        planningFailed = true;
        logger.error("schedules not planned", {
          queue: config.queue,
          error: redact(String((error as Error)?.message ?? error)),
        });
      }
    }
    if (planned.setAside > 0) {
      logger.warn("schedules set aside: the planner cannot compute them (leaseq schedules list says why)", {
        queue: config.queue,
        setAside: planned.setAside,
      });
    }
    const each = ticks.map(({ partition }) => partition);
    const summary: ReclaimerSummary = {
      ...sumPartitions(each),
      slotsMade: planned.made,
      slotsPassedOver: planned.passedOver,
      schedulesSetAside: planned.setAside,
      planningFailed,
      drainInvocations: 0,
      failedDrainInvocations: 0,
      wakeAtMs: undefined,
    };
    const wakes = ticks.flatMap(({ first, last }, partition) => {
      const atMs = earliest(first.wakeAtMs ?? last.wakeAtMs, partition === 0 ? planned.wakeAtMs : undefined);
      return atMs === undefined ? [] : [{ atMs, partition: named(partition) }];
    });
    for (const wake of waker ? wakes : []) {
      try {
        await waker?.wake(wake.atMs, Date.now(), undefined, wake.partition);
        summary.wakeAtMs = earliest(summary.wakeAtMs, wake.atMs);
      } catch (error) {
        // As a failed drain invocation: logged, never thrown, so the metrics below are still
        // published. The queue's `wake` says it is arranged; once that time has passed by
        // WAKE.activeMs it no longer counts, and the next run arranges it again.
        logger.warn("wake-up not sent", {
          queue: config.queue,
          wakeAtMs: wake.atMs,
          partition: wake.partition,
          error: apiError(error),
        });
      }
    }
    // Slots of types another deployment sharing the queue runs: its workers are woken.
    if (sqs && planned.wakeTo.length > 0) {
      for (const error of await sendWakeTo(sqs, planned.wakeTo, Date.now())) {
        logger.warn("wake-up not sent", { queue: config.queue, error });
      }
    }

    // A paused queue (partition) is not drained: its resume arranges the wake-up (or the first run
    // after it starts a drain invocation). A partition's invocations name it; the most ready first.
    if (config.workerFunction) {
      let left = config.maxDrainInvocations;
      const backlog = each
        .map((stats, partition) => ({ stats, partition }))
        .filter(
          ({ stats }) => !stats.paused && stats.ready > 0 && stats.oldestReadyAgeMs >= config.drainInvocationAfterMs,
        )
        .sort((a, b) => b.stats.ready - a.stats.ready);
      const invocations: Array<number | undefined> = [];
      for (const { stats, partition } of backlog) {
        const wanted = Math.min(left, Math.ceil(stats.ready / TASKS_PER_DRAIN_INVOCATION));
        left -= wanted;
        for (let i = 0; i < wanted; i++) invocations.push(named(partition));
      }
      const sent = await Promise.allSettled(
        invocations.map((partition) =>
          lambda.send(
            new InvokeCommand({
              FunctionName: config.workerFunction,
              InvocationType: "Event",
              Payload: new TextEncoder().encode(
                JSON.stringify(partition === undefined ? { leaseq: "drain" } : { leaseq: "drain", partition }),
              ),
            }),
          ),
        ),
      );
      // A refused drain invocation (throttled, a 5xx) only delays the drain to the next run; the
      // metrics below must still be published, so it is logged, never thrown. Only a Redis failure
      // fails a run.
      for (const outcome of sent) {
        if (outcome.status === "fulfilled") summary.drainInvocations++;
        else {
          summary.failedDrainInvocations++;
          logger.warn("drain invocation failed", {
            queue: config.queue,
            function: config.workerFunction,
            error: apiError(outcome.reason),
          });
        }
      }
    }

    metrics.addDimension("queue", config.queue);
    for (const [name, unit] of Object.entries(QUEUE_METRICS) as Array<[QueueMetricName, keyof typeof MetricUnit]>) {
      metrics.addMetric(name, MetricUnit[unit], summary[name]);
    }
    metrics.publishStoredMetrics();
    // Each partition's depth and age beside the totals (dimension `partition`), so one falling
    // behind shows; written as the format's one object, as the worker's run metrics are.
    if (partitions.length > 1 && process.env.POWERTOOLS_METRICS_DISABLED !== "true") {
      each.forEach((stats, partition) => {
        process.stdout.write(
          `${JSON.stringify({
            _aws: {
              Timestamp: Date.now(),
              CloudWatchMetrics: [
                {
                  Namespace: METRICS_NAMESPACE,
                  Dimensions: [["service", "queue", PARTITION_DIMENSION]],
                  Metrics: PARTITION_METRICS.map((name) => ({ Name: name, Unit: QUEUE_METRICS[name] })),
                },
              ],
            },
            service: SERVICE,
            queue: config.queue,
            [PARTITION_DIMENSION]: String(partition),
            ...Object.fromEntries(PARTITION_METRICS.map((name) => [name, stats[name]])),
          })}\n`,
        );
      });
    }
    logger.info("reclaimer run", {
      queue: config.queue,
      ...summary,
      ...(partitions.length > 1
        ? { partitions: each.map(({ ready, leased, reclaimed }) => ({ ready, leased, reclaimed })) }
        : {}),
      durationMs: Date.now() - startedAt,
    });
    return summary;
  };
  return Object.assign(run, { close });
}

/**
 * One partition's (or the queue's) tick, again while a call did its most and the time lasts: the
 * first result (what it says of schedules and wake-ups), the last, and `partition`: the work of all
 * summed with the last one's figures.
 */
async function tickToEnd(queue: Queue, wakeHorizonMs: number, hasTime: () => boolean) {
  const first = await queue.tick({ now: Date.now(), limit: LIMIT, wakeHorizonMs });
  let last = first;
  const totals = { ...first, trimmed: first.doneTrimmed + first.failedTrimmed };
  const full = (tick: TickResult) =>
    [tick.reclaimed + tick.reclaimFailed, tick.promoted, tick.doneTrimmed, tick.failedTrimmed].some((n) => n >= LIMIT);
  while (full(last) && hasTime()) {
    last = await queue.tick({ now: Date.now(), limit: LIMIT, wakeHorizonMs });
    totals.reclaimed += last.reclaimed;
    totals.reclaimFailed += last.reclaimFailed;
    totals.promoted += last.promoted;
    totals.trimmed += last.doneTrimmed + last.failedTrimmed;
    totals.finishedDone += last.finishedDone;
    totals.finishedFailed += last.finishedFailed;
  }
  return { first, last, partition: { ...totals, ...statsOf(last) } };
}

type PartitionSummary = Awaited<ReturnType<typeof tickToEnd>>["partition"];

/** What a run did in a partition, summed over the partitions. */
const WORK = [
  "reclaimed",
  "reclaimFailed",
  "promoted",
  "trimmed",
  "doneTrimmed",
  "failedTrimmed",
  "finishedDone",
  "finishedFailed",
] as const;

/** The partitions' run as the queue's: their work summed, their figures as sumStats sums them. */
function sumPartitions(each: readonly PartitionSummary[]): PartitionSummary {
  if (each.length === 1) return each[0];
  const total = { ...each[0], ...sumStats(each) };
  for (const field of WORK) total[field] = each.reduce((sum, partition) => sum + partition[field], 0);
  return total;
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

function statsOf(tick: TickResult) {
  const { ready, scheduled, leased, done, failed, oldestReadyAgeMs, oldestWaitingAgeMs } = tick;
  const { mostOverdueLeaseMs, dueScheduled, paused } = tick;
  return {
    ready,
    scheduled,
    leased,
    done,
    failed,
    oldestReadyAgeMs,
    oldestWaitingAgeMs,
    mostOverdueLeaseMs,
    dueScheduled,
    paused,
  };
}

/** What the AWS API (Lambda, or SQS for a wake-up) answered a failed call, without request details. */
function apiError(error: unknown): Record<string, unknown> {
  const details = error as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  return { name: details?.name, message: details?.message, httpStatusCode: details?.$metadata?.httpStatusCode };
}
