/** The account id in the stand-in's queue URLs and ARNs, and the SenderId of its messages. */
export const ACCOUNT_ID = "000000000000";

/** The region in its ARNs and in Lambda event records. */
export const REGION = "local";

/** The ARN of a local queue: `arn:aws:sqs:local:000000000000:<name>`. */
export function queueArn(name: string): string {
  return `arn:aws:sqs:${REGION}:${ACCOUNT_ID}:${name}`;
}
