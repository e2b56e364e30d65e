// The cdk-nag AwsSolutions findings leaseq accepts, each with its reason, as plain data: cdk-nag
// stays optional (nothing here imports it); an app that runs AwsSolutionsChecks applies them with
// NagSuppressions (docs/deploy.md, examples/reference/nag.ts).
import type { IConstruct } from "constructs";
import type { LeaseQueue } from "./lease-queue.js";
import { createsSecret } from "./secret.js";

/** One finding to suppress: cdk-nag's `{ id, reason }` and where, as a construct and as its path. */
export interface NagSuppression {
  /** The cdk-nag rule, e.g. "AwsSolutions-L1". */
  readonly id: string;
  /** Why leaseq accepts the finding (cdk-nag requires at least 10 characters; these say why). */
  readonly reason: string;
  /** For `NagSuppressions.addResourceSuppressions(construct, [{ id, reason }])`. */
  readonly construct: IConstruct;
  /** The construct's path, for `NagSuppressions.addResourceSuppressionsByPath(stack, path, ...)`. */
  readonly path: string;
}

const runtimeReason = (runtime: number) =>
  `Node.js ${runtime} is the runtime this queue was given (LeaseQueue prop runtime: 22 or 24, the Node.js versions leaseq's bundles are built for, esbuild target node${runtime}, and tested on); both are supported LTS Lambda runtimes, and moving to a newer one is a deliberate, tested change in leaseq, not an automatic one.`;

const ROTATION_REASON =
  "The secret holds an Upstash REST token that only Upstash can issue: rotation is a reset in the Upstash console followed by `aws secretsmanager put-secret-value`; no rotation Lambda can mint a token, and the functions re-read the secret on every cold start.";

const WAKE_QUEUE_REASON =
  'The wake queue carries only wake-ups ({"leaseq":"wake"}), never a task: tasks wait in Redis, and a wake-up that cannot be handled is worth nothing once the reclaimer\'s next run has arranged its own. It keeps messages one hour instead of dead-lettering them.';

const SHARED_WAKE_REASON =
  "On a queue deployments share (acceptTypes), each function sends the wake-ups for the other deployments' task types to their wake queues, which this stack cannot name: SendMessage only, on queues of this account and region that carry the tag leaseq-queue=<this queue's name> (aws:ResourceTag condition), which only the wake queues of this queue's LeaseQueue constructs have.";

/**
 * The AwsSolutions findings leaseq accepts on `leaseQueue`, each with its reason: AwsSolutions-L1
 * (runtime version) on the intake, the worker and the reclaimer, AwsSolutions-SQS3 (no dead-letter
 * queue) on the wake queue, AwsSolutions-SMG4 (no rotation) on the secret when this LeaseQueue
 * created it (a secret given as `secret` or `upstashSecretArn` is its owner's to suppress or rotate),
 * and on a queue deployments share, AwsSolutions-IAM5 on the functions' role policies (SendMessage to
 * the wake queues tagged with this queue's name).
 * Never throws.
 */
export function nagSuppressions(leaseQueue: LeaseQueue): NagSuppression[] {
  const at = (construct: IConstruct, id: string, reason: string): NagSuppression => ({
    id,
    reason,
    construct,
    path: construct.node.path,
  });
  const runtime = runtimeReason(leaseQueue.settings.runtime);
  return [
    ...[leaseQueue.intake, leaseQueue.worker, leaseQueue.reclaimer].map((fn) => at(fn, "AwsSolutions-L1", runtime)),
    at(leaseQueue.wakeQueue, "AwsSolutions-SQS3", WAKE_QUEUE_REASON),
    ...(createsSecret(leaseQueue.settings) ? [at(leaseQueue.secret, "AwsSolutions-SMG4", ROTATION_REASON)] : []),
    // The tag-conditioned wildcard of a shared queue, on each function's role policy.
    ...(leaseQueue.settings.tasks.acceptTypes.length > 0
      ? [leaseQueue.intake, leaseQueue.worker, leaseQueue.reclaimer].flatMap((fn) => {
          const policy = fn.role?.node.tryFindChild("DefaultPolicy");
          return policy ? [at(policy, "AwsSolutions-IAM5", SHARED_WAKE_REASON)] : [];
        })
      : []),
  ];
}
