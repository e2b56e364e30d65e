import { createHash } from "node:crypto";
import { Annotations, Aws, Duration, Tags } from "aws-cdk-lib";
import { Rule, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import { PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Architecture, Function as LambdaFn } from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { LogGroup } from "aws-cdk-lib/aws-logs";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import { type ITopic, Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { policyText } from "../functions/tasks.js";
import { LIMITS } from "../shared/config.js";
import { alarmList, type LeaseQueueAlarms } from "./alarms.js";
import { BUNDLE_FILE, functionCode, lambdaRuntime } from "./bundling.js";
import { METRICS_NAMESPACE, QueueMetrics, SERVICE_NAMES } from "./metrics.js";
import { LeaseQueueMonitoring } from "./monitoring.js";
import { upstashSecret } from "./secret.js";
import { type LeaseQueueProps, type LeaseQueueSettings, resolveSettings } from "./settings.js";
import { synthWarnings } from "./warnings.js";

/**
 * The tag on a wake queue naming the leaseq queue it wakes workers for: deployments sharing that
 * queue may send to it (the IAM condition aws:ResourceTag/leaseq-queue).
 */
export const WAKE_QUEUE_TAG = "leaseq-queue";

export type { LeaseQueueProps } from "./settings.js";

/**
 * leaseq on AWS: the task queue (encrypted, TLS-only SQS, standard or FIFO, with a dead-letter
 * queue) feeding the intake Lambda, which puts each task in Redis and wakes a worker; the wake
 * queue feeding the worker Lambda; the reclaimer Lambda on an EventBridge schedule; the Upstash
 * credentials secret, alarms and a dashboard. The intake and the worker are one bundle, your
 * worker entry, in two roles (LEASEQ_ROLE). Props are validated at synth (every problem in one
 * LeaseQueuePropsError); what is valid but probably not meant is a synth warning (LEASE_QUEUE_WARNINGS).
 */
export class LeaseQueue extends Construct {
  /** The props with defaults applied. */
  readonly settings: LeaseQueueSettings;
  /** The task queue: producers send `{"tasks":[…]}` here; the intake reads it. */
  readonly queue: Queue;
  /** Task-queue messages the intake refused (with their reason) or could not take in maxReceiveCount receives. */
  readonly deadLetterQueue: Queue;
  /** Wake-ups (`{"leaseq":"wake"}`, delayed to when work falls due): each starts a worker. */
  readonly wakeQueue: Queue;
  /** Validates and enqueues what the task queue brings, and wakes the worker; runs no task. */
  readonly intake: LambdaFn;
  readonly worker: LambdaFn;
  readonly reclaimer: LambdaFn;
  /**
   * Holds `{"url": "...", "token": "..."}`: the Upstash REST URL and token. Created (and retained
   * on removal) unless `secret` or `upstashSecretArn` was given; pass it as another queue's `secret`.
   */
  readonly secret: ISecret;
  readonly schedule: Rule;
  readonly metrics: QueueMetrics;
  readonly alarms: LeaseQueueAlarms;
  readonly monitoring: LeaseQueueMonitoring;
  /** The topic alarm actions go to, when `alarmEmail` or `alarmTopic` was given. */
  readonly alarmTopic: ITopic | undefined;

  constructor(scope: Construct, id: string, props: LeaseQueueProps) {
    super(scope, id);
    const settings = resolveSettings(props);
    this.settings = settings;

    const fifo = settings.fifo ? { fifo: true, contentBasedDeduplication: false } : {};
    this.deadLetterQueue = new Queue(this, "DeadLetterQueue", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // The longest SQS allows: dead messages wait for a human, who may be on holiday.
      retentionPeriod: Duration.days(14),
      ...fifo,
    });
    this.queue = new Queue(this, "Queue", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // A batch may be retried while an earlier receive of it still runs; 6x the timeout leaves room for that.
      visibilityTimeout: settings.visibilityTimeout,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
      ...fifo,
    });
    // A wake-up is worth nothing after an hour (the reclaimer runs every few minutes and arranges
    // its own), so the wake queue keeps messages an hour and has no dead-letter queue: a worker
    // that fails takes its wake-up again after the visibility timeout, until then.
    this.wakeQueue = new Queue(this, "WakeQueue", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: settings.wakeVisibilityTimeout,
      retentionPeriod: Duration.hours(1),
    });

    this.secret = upstashSecret(this, settings);

    const environment: Record<string, string> = {
      LEASEQ_QUEUE: settings.queueName,
      LEASEQ_DEPLOYMENT: settings.deployment ?? deploymentOf(this.node.path),
      UPSTASH_SECRET_ARN: this.secret.secretArn,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      // Wake-ups go to the wake queue (docs/wake-ups.md): from the intake for what it enqueued,
      // from the worker as it stops, from the reclaimer for what falls due before its next run.
      LEASEQ_WAKE_QUEUE_URL: this.wakeQueue.queueUrl,
    };
    if (settings.claimBatchSize !== undefined) environment.LEASEQ_CLAIM_BATCH = String(settings.claimBatchSize);
    // Every function that opens the queue must see the same partitions (docs/partitions.md). A queue
    // of one partition sets neither, so upgrading leaves an existing template as it was.
    if (settings.partitions > 1 || settings.shrinkingFrom !== undefined) {
      environment.LEASEQ_PARTITIONS = String(settings.partitions);
      if (settings.shrinkingFrom !== undefined) environment.LEASEQ_SHRINKING_FROM = String(settings.shrinkingFrom);
    }

    // The intake and the worker check their declaration against these at cold start.
    const declared = { LEASEQ_TASKS: policyText(settings.tasks), LEASEQ_DLQ_URL: this.deadLetterQueue.queueUrl };
    this.intake = this.makeFunction("Intake", settings.workerEntry, {
      description: `leaseq intake for queue "${settings.queueName}": puts the task queue's tasks in Redis and wakes the worker`,
      timeout: settings.intakeTimeout,
      memorySize: settings.intakeMemoryMb,
      environment: {
        ...environment,
        ...declared,
        POWERTOOLS_SERVICE_NAME: SERVICE_NAMES.intake,
        LEASEQ_ROLE: "intake",
        // The task queue's redrive policy: a record failing at its last receive is dead-lettered by
        // the intake with why, not moved without a reason. The wake queue has no redrive policy (its
        // messages expire), so the worker gets none.
        LEASEQ_MAX_RECEIVE_COUNT: String(settings.maxReceiveCount),
      },
    });
    this.worker = this.makeFunction("Worker", settings.workerEntry, {
      description: `leaseq worker for queue "${settings.queueName}": drains the queue when woken`,
      timeout: settings.workerTimeout,
      memorySize: settings.workerMemoryMb,
      environment: {
        ...environment,
        ...declared,
        POWERTOOLS_SERVICE_NAME: SERVICE_NAMES.worker,
        LEASEQ_WORKER_TIMEOUT_MS: String(settings.workerTimeout.toMilliseconds()),
      },
    });
    // Exactly SendMessage: grantSendMessages would add GetQueueAttributes and GetQueueUrl, unused
    // here. Permanently invalid input goes to the dead-letter queue at once, not after
    // maxReceiveCount receives (the worker too: it reads a task list sent to the wake queue).
    for (const fn of [this.intake, this.worker]) {
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ["sqs:SendMessage"],
          resources: [this.deadLetterQueue.queueArn, this.wakeQueue.queueArn],
        }),
      );
    }
    this.reclaimer = this.makeFunction("Reclaimer", settings.reclaimerEntry, {
      description: `leaseq reclaimer for queue "${settings.queueName}": reclaims expired leases, publishes metrics, starts the worker (drain invocations)`,
      timeout: settings.reclaimerTimeout,
      memorySize: settings.reclaimerMemoryMb,
      environment: {
        ...environment,
        POWERTOOLS_SERVICE_NAME: SERVICE_NAMES.reclaimer,
        LEASEQ_WORKER_FUNCTION: this.worker.functionName,
        LEASEQ_RECLAIM_PERIOD_MS: String(settings.reclaimSchedule.toMilliseconds()),
      },
    });
    this.reclaimer.addToRolePolicy(
      new PolicyStatement({ actions: ["sqs:SendMessage"], resources: [this.wakeQueue.queueArn] }),
    );
    // A queue deployments share (acceptTypes): the wake-ups for the other deployments' types go to
    // their wake queues (docs/wake-ups.md), which this stack does not know: each wake queue carries
    // its queue's name as a tag, and SendMessage is allowed on the wake queues of this queue only.
    Tags.of(this.wakeQueue).add(WAKE_QUEUE_TAG, settings.queueName);
    if (settings.tasks.acceptTypes.length > 0) {
      for (const fn of [this.intake, this.worker, this.reclaimer]) {
        fn.addToRolePolicy(
          new PolicyStatement({
            actions: ["sqs:SendMessage"],
            resources: [`arn:${Aws.PARTITION}:sqs:${Aws.REGION}:${Aws.ACCOUNT_ID}:*`],
            conditions: { StringEquals: { [`aws:ResourceTag/${WAKE_QUEUE_TAG}`]: settings.queueName } },
          }),
        );
      }
    }

    this.intake.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: settings.batchSize,
        maxBatchingWindow: settings.maxBatchingWindow.toMilliseconds() > 0 ? settings.maxBatchingWindow : undefined,
        reportBatchItemFailures: true,
        maxConcurrency: settings.intakeMaxConcurrency,
      }),
    );
    // One wake-up, one worker: a batch of several would start one worker for them all.
    this.worker.addEventSource(
      new SqsEventSource(this.wakeQueue, {
        batchSize: 1,
        reportBatchItemFailures: true,
        maxConcurrency: settings.maxConcurrency,
      }),
    );
    // Exactly the worker's ARN: grantInvoke would add "<arn>:*" (every version and alias).
    this.reclaimer.addToRolePolicy(
      new PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [this.worker.functionArn] }),
    );
    for (const fn of [this.intake, this.worker, this.reclaimer]) this.secret.grantRead(fn);
    // Async invocations (the reclaimer's drain invocations, the schedule's ticks) are not retried
    // by Lambda: the next tick, one schedule period later, does the same work, and a retry would
    // only overlap it.
    for (const fn of [this.intake, this.worker, this.reclaimer]) {
      fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: settings.reclaimSchedule });
    }

    this.schedule = new Rule(this, "ReclaimSchedule", {
      description: `leaseq queue "${settings.queueName}": runs the reclaimer`,
      schedule: Schedule.rate(settings.reclaimSchedule),
      // A short retry policy: a tick that cannot be delivered within a minute is replaced by the next one.
      targets: [new LambdaFunction(this.reclaimer, { retryAttempts: 2, maxEventAge: settings.reclaimSchedule })],
    });

    this.alarmTopic = settings.alarmTopic;
    if (settings.alarmEmail !== undefined) {
      const topic = new Topic(this, "AlarmTopic", {
        displayName: `leaseq ${settings.queueName} alarms`,
        enforceSSL: true,
      });
      topic.addSubscription(new EmailSubscription(settings.alarmEmail));
      this.alarmTopic = topic;
    }

    this.metrics = new QueueMetrics(settings.queueName);
    this.monitoring = new LeaseQueueMonitoring(this, "Monitoring", {
      settings,
      metrics: this.metrics,
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      intake: this.intake,
      worker: this.worker,
      reclaimer: this.reclaimer,
      alarmTopic: this.alarmTopic,
    });
    this.alarms = this.monitoring.alarms;
    for (const { id: warningId, message } of synthWarnings(settings, alarmList(this.alarms).length)) {
      Annotations.of(this).addWarningV2(warningId, message);
    }
  }

  /**
   * A Node.js (`runtime`) ARM64 function with its own log group (retention set) and its own role, which may
   * write to that log group only: the AWS managed basic-execution policy would allow every log group.
   */
  private makeFunction(
    id: string,
    entry: string,
    options: Pick<ConstructorParameters<typeof LambdaFn>[2], "description" | "timeout" | "memorySize" | "environment">,
  ): LambdaFn {
    const logGroup = new LogGroup(this, `${id}Logs`, { retention: this.settings.logRetention });
    const role = new Role(this, `${id}Role`, {
      assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
      description: `leaseq ${id.toLowerCase()} of queue "${this.settings.queueName}"`,
    });
    logGroup.grantWrite(role);
    return new LambdaFn(this, id, {
      ...options,
      runtime: lambdaRuntime(this.settings.runtime),
      architecture: Architecture.ARM_64,
      handler: `${BUNDLE_FILE.replace(/\.mjs$/, "")}.handler`,
      code: functionCode(entry, this.settings.runtime),
      role,
      logGroup,
    });
  }
}

/**
 * A deployment's default name: the construct's path (`<stack>/<id>`, "/" as "."), characters outside
 * A-Z a-z 0-9 _ . - as "-", and a long one cut to 55 characters and a digest of the whole.
 */
export function deploymentOf(path: string): string {
  const name = path.replace(/\//g, ".").replace(/[^A-Za-z0-9_.-]/g, "-");
  if (name.length <= LIMITS.ownerMaxBytes) return name;
  return `${name.slice(0, 55)}-${createHash("sha256").update(path).digest("hex").slice(0, 8)}`;
}
