import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import { NagSuppressions } from "cdk-nag";
import type { LeaseQueue } from "leaseq/cdk";

/** Why the runtime stays Node.js 22 although cdk-nag knows a newer one. */
const RUNTIME_REASON =
  "Node.js 22 is the runtime leaseq targets and tests: the bundles are built with esbuild target node22 (infra/bundling.ts) and Node.js 22 is a supported LTS Lambda runtime; moving to a newer one is a deliberate, tested change, not an automatic one.";

/** Why the created Upstash secret has no rotation schedule. */
const ROTATION_REASON =
  "The secret holds an Upstash REST token that only Upstash can issue: rotation is a reset in the Upstash console followed by `aws secretsmanager put-secret-value`; no rotation Lambda can mint a token, and the functions re-read the secret on every cold start.";

/** Why the wake queue has no dead-letter queue. */
const WAKE_QUEUE_REASON =
  'The wake queue carries only wake-ups ({"leaseq":"wake"}), never a task: tasks wait in Redis, and a wake-up that cannot be handled is worth nothing once the reclaimer\'s next run has arranged its own. It keeps messages one hour instead of dead-lettering them.';

/**
 * Suppresses the cdk-nag AwsSolutions findings leaseq accepts, each with its reason. Kept out of
 * the construct so using LeaseQueue does not require cdk-nag; call it when you run AwsSolutionsChecks.
 */
export function suppressNagFindings(leaseQueue: LeaseQueue): void {
  for (const fn of [leaseQueue.intake, leaseQueue.worker, leaseQueue.reclaimer]) {
    NagSuppressions.addResourceSuppressions(fn, [{ id: "AwsSolutions-L1", reason: RUNTIME_REASON }]);
  }
  NagSuppressions.addResourceSuppressions(leaseQueue.wakeQueue, [
    { id: "AwsSolutions-SQS3", reason: WAKE_QUEUE_REASON },
  ]);
  // Only a created secret is a resource of this stack; an imported one is the user's to rotate.
  if (leaseQueue.secret instanceof Secret) {
    NagSuppressions.addResourceSuppressions(leaseQueue.secret, [{ id: "AwsSolutions-SMG4", reason: ROTATION_REASON }]);
  }
}
