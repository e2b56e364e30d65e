import { Logger } from "@aws-lambda-powertools/logger";
import type { LogLevel } from "@aws-lambda-powertools/logger/types";
import { Metrics } from "@aws-lambda-powertools/metrics";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { readConfig } from "../functions/config.js";
import { METRICS_NAMESPACE } from "../functions/metric-names.js";
import { createReclaimer, type ReclaimerSummary } from "../functions/reclaimer.js";
import { queueSettings } from "../functions/runtime.js";
import type { TaskDeclaration } from "../functions/tasks.js";
import { createWorker, type DrainEvent } from "../functions/worker.js";
import { CONNECTION_VARIABLES } from "../shared/connection.js";
import { PartitionedQueue } from "../shared/partitioned-queue.js";
import type { Queue } from "../shared/queue.js";
import { TcpStore } from "../shared/stores/tcp.js";
import { redact } from "../shared/text.js";
import { type LocalRedis, resolveRedis } from "./redis.js";
import { startRedisServer } from "./redis-server.js";
import { Environments, type HandlerModule } from "./standins/lambda/environments.js";
import { type LocalLambdaApi, startLambdaApi } from "./standins/lambda/lambda-api.js";
import { lambdaContext } from "./standins/lambda/lambda-context.js";
import { LocalSqs } from "./standins/sqs/index.js";
import { startUpstashEndpoint, type UpstashEndpoint } from "./standins/upstash/index.js";

/** How the local stack runs; every field has a default suited to a laptop demo. */
export interface StackOptions {
  queue: string;
  /** The task types the local worker runs: the demo's, or the user's module (`--tasks`). */
  tasks: TaskDeclaration;
  /** How often the reclaimer runs (EventBridge's rate(1 minute) on AWS). */
  reclaimIntervalMs: number;
  /** The worker's Lambda timeout: drain only claims while a whole lease still fits in it. */
  workerTimeoutMs: number;
  visibilityTimeoutMs: number;
  maxReceiveCount: number;
  /** Concurrent invocations of the intake (task queue) and of the worker (wake queue), each. */
  concurrency: number;
  /** The task queue is FIFO (`leaseq-local.fifo`): the construct's `fifo` prop. Default false. */
  fifo?: boolean;
  /** Powertools log level of both functions; "SILENT" keeps their JSON logs out of the live view. */
  logLevel: LogLevel;
  /** The SQS endpoint's port on 127.0.0.1; 0 (the default) takes a free one. */
  sqsPort?: number;
  /**
   * Keep the task queue's messages in Redis, under the queue's own keys (`leaseq:{<queue>}:sqs:*`),
   * so a killed run loses no message sent: the next run with the same queue takes them up.
   */
  persistSqs?: boolean;
  /** Told of every failed invocation of the intake or the worker (the SQS mapping retries it). */
  onInvocationError?: (role: FunctionRole, error: unknown) => void;
  /**
   * Run the worker's invocations in processes of their own, as Lambda's execution environments
   * (dev/standins/lambda/environments.ts): a module whose export is the worker's handler, built from
   * the same declaration. One can then be SIGKILLed mid-invocation, as Lambda's runtime dies of an
   * out-of-memory error. Default: in this process.
   */
  workerModule?: HandlerModule;
  /**
   * The deployment's name (LEASEQ_DEPLOYMENT: the owner of its declared schedules; default "local").
   * Two stacks on one queue with names of their own each keep their own schedules.
   */
  deployment?: string;
  /** With `workerModule`: the worker processes' log level (default `logLevel`). */
  workerLogLevel?: LogLevel;
  /** The most drain invocations one reclaimer run sends (`LEASEQ_MAX_KICKS`; default the functions' 4). */
  maxDrainInvocations?: number;
  /**
   * The queue's partitions (LEASEQ_PARTITIONS, docs/partitions.md): partition k on a redis-server of
   * its own behind an Upstash-compatible endpoint of its own, as over several Upstash databases (the
   * first server is the stack's Redis, the others started for the run). Default 1.
   */
  partitions?: number;
}

/** The functions whose invocations the stack makes. */
export type FunctionRole = "intake" | "worker";

/** Totals the live view and the summary show. */
export interface StackCounts {
  reclaimerRuns: number;
  reclaimed: number;
  reclaimFailed: number;
  reclaimerErrors: number;
  lastReclaimerError: string | undefined;
  /** Invocations of the intake or the worker that threw (SQS delivers their records again). */
  invocationErrors: number;
  lastInvocationError: string | undefined;
}

/** A running local stack: Redis, the Upstash endpoint, SQS and Lambda stand-ins, the three functions. */
export interface Stack {
  redis: LocalRedis;
  endpoint: UpstashEndpoint;
  lambdaApi: LocalLambdaApi;
  /** The task queue (producers send here) and its dead-letter queue; its mapping invokes the intake. */
  sqs: LocalSqs;
  /** The wake queue, on the same SQS endpoint; its mapping invokes the worker, one wake-up each. */
  wake: LocalSqs;
  /**
   * A TCP handle on the queue for the live view and the demo's bookkeeping (not the functions' path):
   * with partitions, its partition 0.
   */
  queue: Queue;
  /** The queue as one over its partitions (TCP handles on each server; one partition: `queue`'s keys). */
  logical: PartitionedQueue;
  /** How a process reaches the queue as the functions do: the Upstash endpoints' URLs and tokens. */
  connectionEnv: Record<string, string>;
  /** Each partition's redis-server, by partition (the stack's Redis first). */
  servers: string[];
  /** The worker's execution environments, when it runs in processes of its own (`workerModule`). */
  environments: Environments | undefined;
  counts: StackCounts;
  /**
   * Starts the SQS pollers and the reclaimer timer, runs the reclaimer once and sends a wake-up:
   * work left READY by an earlier run starts at once, not at the first tick; and runs it again when
   * the leases an earlier, killed run held have ended.
   */
  run(): void;
  /** Runs `tasks` from now on: new intake and worker functions; invocations under way finish with the old. */
  reload(tasks: TaskDeclaration): void;
  /**
   * Stops feeding work and waits for the running invocations, which now see no time left: they
   * start no new task and release the tasks they claimed but had not started.
   */
  stopWork(): Promise<void>;
  /** Closes the store and the endpoint, and stops a redis-server this process started. */
  close(): Promise<void>;
}

/** The reclaimer's Lambda timeout in the stack's defaults. */
const RECLAIMER_TIMEOUT_MS = 60_000;

/** The intake's Lambda timeout, as the construct's default. */
const INTAKE_TIMEOUT_MS = 30_000;

/** The worker's function name, the one the reclaimer's drain invocations start (LEASEQ_WORKER_FUNCTION). */
export const WORKER_FUNCTION = "leaseq-worker";

/**
 * Starts the stack as on AWS, in one process: the functions use the same @upstash/redis path as
 * in Lambda, through the local Upstash-compatible endpoint in front of a real Redis.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const redis = await resolveRedis();
  const cleanups: Array<() => Promise<void>> = [() => redis.stop()];
  try {
    const partitions = options.partitions ?? 1;
    // Partition k on server k: the stack's Redis, and one started for each other partition.
    const servers = [redis.url];
    for (let k = 1; k < partitions; k++) {
      const started = await startRedisServer();
      cleanups.unshift(() => started.stop());
      servers.push(started.url);
    }
    const endpoints: UpstashEndpoint[] = [];
    for (const url of servers) {
      const started = await startUpstashEndpoint({ redisUrl: url });
      cleanups.unshift(() => started.close());
      endpoints.push(started);
    }
    const [endpoint] = endpoints;
    let shuttingDown = false;
    let functions: { worker: ReturnType<typeof createWorker>; intake: ReturnType<typeof createWorker> };
    const context = () => lambdaContext(WORKER_FUNCTION, options.workerTimeoutMs, () => shuttingDown);
    const intakeContext = () => lambdaContext("leaseq-intake", INTAKE_TIMEOUT_MS, () => shuttingDown);
    const counts: StackCounts = {
      reclaimerRuns: 0,
      reclaimed: 0,
      reclaimFailed: 0,
      reclaimerErrors: 0,
      lastReclaimerError: undefined,
      invocationErrors: 0,
      lastInvocationError: undefined,
    };
    // Every failed invocation is counted and told, never swallowed: the SQS mapping and the Lambda
    // stand-in only retry it, as AWS would, and a cold start refusing to run would go unseen.
    const reported = async <T>(role: FunctionRole, invoke: () => Promise<T>): Promise<T> => {
      try {
        return await invoke();
      } catch (error) {
        counts.invocationErrors++;
        counts.lastInvocationError = `${role}: ${redact(error instanceof Error ? error.message : String(error))}`;
        options.onInvocationError?.(role, error);
        throw error;
      }
    };
    const runWorker = (event: SQSEvent | DrainEvent) =>
      reported("worker", () =>
        environments
          ? (environments.invoke(event, options.workerTimeoutMs) as Promise<SQSBatchResponse>)
          : functions.worker(event, context()),
      );
    const runIntake = (event: SQSEvent) => reported("intake", () => functions.intake(event, intakeContext()));
    const lambdaApi = await startLambdaApi({ [WORKER_FUNCTION]: (event) => runWorker(event as DrainEvent) });
    // Closing twice is harmless: stopWork() closes it first when the stack ran.
    cleanups.unshift(() => lambdaApi.close().catch(() => {}));
    // SQS as on AWS, reachable over the SQS JSON protocol, so a producer using @aws-sdk/client-sqs
    // with `endpoint` set reaches it: the task queue (standard or FIFO) with a dead-letter queue
    // behind its redrive policy, read by the intake; the wake queue, read by the worker.
    const taskQueue = {
      fifo: options.fifo ?? false,
      visibilityTimeoutMs: options.visibilityTimeoutMs,
      maxReceiveCount: options.maxReceiveCount,
      concurrency: options.concurrency,
    };
    const sqs = options.persistSqs
      ? await LocalSqs.open(runIntake, {
          ...taskQueue,
          persistence: { redisUrl: redis.url, prefix: `leaseq:{${options.queue}}:sqs` },
        })
      : new LocalSqs(runIntake, taskQueue);
    // Closed on any failure from here on, a failed listen included: its broker's Redis connection
    // would keep the process alive.
    cleanups.unshift(() => sqs.close());
    await sqs.listen(options.sqsPort ?? 0);
    const wake = new LocalSqs(runWorker, {
      broker: sqs.broker,
      queueName: "leaseq-local-wake",
      // As the construct's: 6 × the worker timeout, so a long drain is not woken twice.
      visibilityTimeoutMs: Math.max(options.visibilityTimeoutMs, 6 * options.workerTimeoutMs),
      // As the construct's wake queue: a wake-up that keeps failing is retried, never dead-lettered.
      maxReceiveCount: 1000,
      batchSize: 1,
      concurrency: options.concurrency,
    });
    cleanups.unshift(() => wake.close());
    // The functions' configuration, as the CDK construct sets it, pointed at the local stand-ins.
    const env = {
      LEASEQ_QUEUE: options.queue,
      // Several databases, comma-separated, for a partitioned queue (docs/partitions.md).
      UPSTASH_REDIS_REST_URL: endpoints.map((each) => each.url).join(","),
      UPSTASH_REDIS_REST_TOKEN: endpoints.map((each) => each.token).join(","),
      ...(partitions > 1 ? { LEASEQ_PARTITIONS: String(partitions) } : {}),
      LEASEQ_WORKER_FUNCTION: WORKER_FUNCTION,
      LEASEQ_LAMBDA_ENDPOINT: lambdaApi.url,
      LEASEQ_DLQ_URL: sqs.deadLetterQueueUrl,
      LEASEQ_SQS_ENDPOINT: sqs.endpoint,
      LEASEQ_WORKER_TIMEOUT_MS: String(options.workerTimeoutMs),
      LEASEQ_WAKE_QUEUE_URL: wake.queueUrl,
      LEASEQ_RECLAIM_PERIOD_MS: String(options.reclaimIntervalMs),
      LEASEQ_DEPLOYMENT: options.deployment ?? "local",
      ...(options.maxDrainInvocations === undefined ? {} : { LEASEQ_MAX_KICKS: String(options.maxDrainInvocations) }),
    };
    const logger = (serviceName: string) => new Logger({ serviceName, logLevel: options.logLevel });
    const environments = options.workerModule
      ? new Environments(options.workerModule, {
          // The process's own connection (REDIS_URL, the stack's Redis) is not the function's: the
          // function reaches the stack's Upstash-compatible endpoint, as on AWS.
          ...withoutConnection(process.env),
          ...env,
          POWERTOOLS_LOG_LEVEL: options.workerLogLevel ?? options.logLevel,
        })
      : undefined;
    if (environments) cleanups.unshift(() => environments.close());
    // The intake is the same code in another role, as the construct deploys the worker's bundle twice.
    const functionsFor = (tasks: TaskDeclaration) => ({
      worker: createWorker({ env, tasks, logger: logger("leaseq-worker") }),
      intake: createWorker({
        env: {
          ...env,
          LEASEQ_ROLE: "intake",
          LEASEQ_WORKER_TIMEOUT_MS: undefined,
          // As the construct sets it: a record at its last receive is dead-lettered with its reason.
          LEASEQ_MAX_RECEIVE_COUNT: String(options.maxReceiveCount),
        },
        tasks,
        logger: logger("leaseq-intake"),
      }),
    });
    functions = functionsFor(options.tasks);
    // No CloudWatch here: the EMF lines the reclaimer prints would only garble the live view.
    process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
    const reclaimer = createReclaimer({
      env,
      logger: logger("leaseq-reclaimer"),
      metrics: new Metrics({ namespace: METRICS_NAMESPACE, serviceName: "leaseq-reclaimer" }),
    });
    const stores = servers.map((url) => TcpStore.fromUrl(url));
    cleanups.unshift(async () => {
      for (const store of stores) await store.close();
    });
    // The queue's config, as the worker writes it at its cold start (the same settings, so the
    // same revision), in every partition: before anything claims, so the crash demo's short lease
    // is already in force.
    const logical = new PartitionedQueue(stores, {
      name: options.queue,
      partitions,
      settings: queueSettings(readConfig(env), options.tasks),
    });
    const queue = logical.partitions[0];
    await logical.configure();
    const owner = readConfig(env).deployment;
    await queue.schedules.syncDeclared(options.tasks.schedules, { now: Date.now(), owner });

    let timer: NodeJS.Timeout | undefined;
    const startTimers: NodeJS.Timeout[] = [];
    let reclaiming: Promise<void> | undefined;
    const runReclaimer = async () => {
      try {
        const budget = lambdaContext("leaseq-reclaimer", RECLAIMER_TIMEOUT_MS, () => shuttingDown);
        const summary: ReclaimerSummary = await reclaimer({}, budget);
        counts.reclaimerRuns++;
        counts.reclaimed += summary.reclaimed;
        counts.reclaimFailed += summary.reclaimFailed;
      } catch (error) {
        // As a failed scheduled run on AWS: counted and shown; the next run tries again.
        counts.reclaimerErrors++;
        counts.lastReclaimerError = (error as Error).message;
      }
    };

    return {
      redis,
      endpoint,
      lambdaApi,
      sqs,
      wake,
      queue,
      logical,
      servers,
      connectionEnv: {
        UPSTASH_REDIS_REST_URL: env.UPSTASH_REDIS_REST_URL,
        UPSTASH_REDIS_REST_TOKEN: env.UPSTASH_REDIS_REST_TOKEN,
      },
      environments,
      counts,
      run() {
        sqs.start();
        wake.start();
        const tick = () => {
          // A run still going when the next is due: skip it rather than let runs pile up.
          reclaiming ??= runReclaimer().finally(() => {
            reclaiming = undefined;
          });
        };
        timer = setInterval(tick, options.reclaimIntervalMs);
        tick();
        // The leases a killed run left end within their type's heartbeat (plus the 2 s clock-skew
        // margin): a run then, per lease length declared, returns them rather than the next minute's
        // (the demo's crashed batch, 5 s leases, is back 8 s in, not once the 30 s ones could be).
        for (const leaseMs of new Set(Object.values(options.tasks.types).map((type) => type.heartbeatMs))) {
          if (leaseMs + 3_000 < options.reclaimIntervalMs) startTimers.push(setTimeout(tick, leaseMs + 3_000));
        }
        wake.send('{"leaseq":"wake"}');
      },
      reload(tasks) {
        functions = functionsFor(tasks);
        // As a deploy's cold start: the declared schedules follow the new declaration.
        queue.schedules.syncDeclared(tasks.schedules, { now: Date.now(), owner }).catch((error: unknown) => {
          counts.invocationErrors++;
          counts.lastInvocationError = `schedules: ${redact((error as Error).message)}`;
        });
      },
      async stopWork() {
        clearInterval(timer);
        for (const timer of startTimers) clearTimeout(timer);
        shuttingDown = true;
        await reclaiming;
        await sqs.stop();
        await wake.stop();
        await lambdaApi.close();
      },
      async close() {
        for (const cleanup of cleanups) await cleanup();
      },
    };
  } catch (error) {
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    throw error;
  }
}

/** `env` without the Redis connection variables. */
function withoutConnection(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const connection = new Set<string>(Object.values(CONNECTION_VARIABLES).flat());
  return Object.fromEntries(Object.entries(env).filter(([name]) => !connection.has(name)));
}
