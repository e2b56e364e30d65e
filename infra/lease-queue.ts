import { Duration, SecretValue } from "aws-cdk-lib";
import { Rule, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import { PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Architecture, Function as LambdaFn, Runtime } from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { LogGroup } from "aws-cdk-lib/aws-logs";
import { type ISecret, Secret } from "aws-cdk-lib/aws-secretsmanager";
import { type ITopic, Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { policyText } from "../functions/tasks.js";
import { BUNDLE_FILE, functionCode } from "./bundling.js";
import { METRICS_NAMESPACE, QueueMetrics, SERVICE_NAMES } from "./metrics.js";
import { type LeaseQueueAlarms, LeaseQueueMonitoring } from "./monitoring.js";
import { type LeaseQueueProps, type LeaseQueueSettings, resolveSettings } from "./settings.js";

export type { LeaseQueueProps } from "./settings.js";

/**
 * leaseq on AWS: an encrypted, TLS-only SQS queue with a dead-letter queue feeding the worker
 * Lambda, the reclaimer Lambda on an EventBridge schedule, the Upstash credentials secret, alarms
 * and a dashboard. Props are validated at synth (every problem in one LeaseQueuePropsError).
 */
export class LeaseQueue extends Construct {
  /** The props with defaults applied. */
  readonly settings: LeaseQueueSettings;
  /** Producers send `{"tasks":[…]}` (or `{}` as a wake-up) here. */
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly worker: LambdaFn;
  readonly reclaimer: LambdaFn;
  /** Holds `{"url": "...", "token": "..."}`: the Upstash REST URL and token. */
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

    this.deadLetterQueue = new Queue(this, "DeadLetterQueue", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // The longest SQS allows: dead messages wait for a human, who may be on holiday.
      retentionPeriod: Duration.days(14),
    });
    this.queue = new Queue(this, "Queue", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // A batch may be retried while an earlier receive of it still runs; 6x the timeout leaves room for that.
      visibilityTimeout: settings.visibilityTimeout,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
    });

    // A created secret holds empty fields, never a credential: the template stays free of secrets
    // and the functions fail their config check with a clear message until the user fills it.
    this.secret = settings.upstashSecretArn
      ? Secret.fromSecretCompleteArn(this, "UpstashSecret", settings.upstashSecretArn)
      : new Secret(this, "UpstashSecret", {
          description: `leaseq queue "${settings.queueName}": Upstash REST URL and token, as {"url": "...", "token": "..."}`,
          secretStringValue: SecretValue.unsafePlainText(JSON.stringify({ url: "", token: "" })),
        });

    const environment: Record<string, string> = {
      LEASEQ_QUEUE: settings.queueName,
      UPSTASH_SECRET_ARN: this.secret.secretArn,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      // Wake-ups go to the worker's own queue (docs/wake-ups.md), from the worker as it stops and
      // from the reclaimer for what falls due before its next run.
      LEASEQ_QUEUE_URL: this.queue.queueUrl,
    };
    if (settings.claimBatchSize !== undefined) environment.LEASEQ_CLAIM_BATCH = String(settings.claimBatchSize);

    this.worker = this.makeFunction("Worker", settings.workerEntry, {
      description: `leaseq worker for queue "${settings.queueName}": ingests SQS task lists and drains the queue`,
      timeout: settings.workerTimeout,
      memorySize: settings.workerMemoryMb,
      environment: {
        ...environment,
        POWERTOOLS_SERVICE_NAME: SERVICE_NAMES.worker,
        // The worker checks its own task declaration against these at cold start.
        LEASEQ_TASKS: policyText(settings.tasks),
        LEASEQ_WORKER_TIMEOUT_MS: String(settings.workerTimeout.toMilliseconds()),
        // Permanently invalid input goes here at once, not after maxReceiveCount receives.
        LEASEQ_DLQ_URL: this.deadLetterQueue.queueUrl,
      },
    });
    // Exactly SendMessage: grantSendMessages would add GetQueueAttributes and GetQueueUrl, unused here.
    this.worker.addToRolePolicy(
      new PolicyStatement({
        actions: ["sqs:SendMessage"],
        resources: [this.deadLetterQueue.queueArn, this.queue.queueArn],
      }),
    );
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
      new PolicyStatement({ actions: ["sqs:SendMessage"], resources: [this.queue.queueArn] }),
    );

    this.worker.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: settings.batchSize,
        maxBatchingWindow: settings.maxBatchingWindow.toMilliseconds() > 0 ? settings.maxBatchingWindow : undefined,
        reportBatchItemFailures: true,
        maxConcurrency: settings.maxConcurrency,
      }),
    );
    // Exactly the worker's ARN: grantInvoke would add "<arn>:*" (every version and alias).
    this.reclaimer.addToRolePolicy(
      new PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [this.worker.functionArn] }),
    );
    for (const fn of [this.worker, this.reclaimer]) this.secret.grantRead(fn);
    // Async invocations (the reclaimer's drain invocations, the schedule's ticks) are not retried
    // by Lambda: the next tick, one schedule period later, does the same work, and a retry would
    // only overlap it.
    for (const fn of [this.worker, this.reclaimer]) {
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
      worker: this.worker,
      reclaimer: this.reclaimer,
      alarmTopic: this.alarmTopic,
    });
    this.alarms = this.monitoring.alarms;
  }

  /**
   * A Node.js 22 ARM64 function with its own log group (retention set) and its own role, which may
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
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      handler: `${BUNDLE_FILE.replace(/\.mjs$/, "")}.handler`,
      code: functionCode(entry),
      role,
      logGroup,
    });
  }
}
