import { NagSuppressions } from "cdk-nag";
import { type LeaseQueue, nagSuppressions } from "leaseq/cdk";

/**
 * Applies the cdk-nag AwsSolutions suppressions leaseq ships (`nagSuppressions` from leaseq/cdk:
 * each finding leaseq accepts, with its reason), as your app would when it runs AwsSolutionsChecks.
 */
export function suppressNagFindings(leaseQueue: LeaseQueue): void {
  for (const { construct, id, reason } of nagSuppressions(leaseQueue)) {
    NagSuppressions.addResourceSuppressions(construct, [{ id, reason }]);
  }
}
