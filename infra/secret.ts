import { RemovalPolicy, SecretValue, Token } from "aws-cdk-lib";
import { type ISecret, Secret } from "aws-cdk-lib/aws-secretsmanager";
import type { Construct } from "constructs";
import { LEASE_QUEUE_DEFAULTS, type LeaseQueueProps } from "./props.js";

/** The secret-related settings: which secret the functions read, and what becomes of a created one. */
export interface SecretSettings {
  upstashSecretArn: string | undefined;
  /** A secret given by the user; with neither it nor upstashSecretArn the construct creates one. */
  secret: ISecret | undefined;
  secretRemovalPolicy: RemovalPolicy;
}

const SECRET_ARN_PATTERN =
  /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/;
/** CloudFormation cannot snapshot a secret: the removal policies a created secret may have. */
const SECRET_REMOVAL_POLICIES: readonly RemovalPolicy[] = [
  RemovalPolicy.RETAIN,
  RemovalPolicy.DESTROY,
  RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
];

const shown = (value: unknown): string => (typeof value === "string" ? JSON.stringify(value) : String(value));

/**
 * Checks `upstashSecretArn`, `secret` and `secretRemovalPolicy`, pushing each problem to `problems`
 * (the caller throws them all in one LeaseQueuePropsError), and applies the default removal policy.
 */
export function checkSecret(props: LeaseQueueProps, problems: string[]): SecretSettings {
  const { upstashSecretArn, secret } = props;
  if (
    upstashSecretArn !== undefined &&
    !Token.isUnresolved(upstashSecretArn) &&
    (typeof upstashSecretArn !== "string" || !SECRET_ARN_PATTERN.test(upstashSecretArn))
  ) {
    problems.push(
      `upstashSecretArn must be a complete Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>), got ${shown(upstashSecretArn)}`,
    );
  }
  if (secret !== undefined && typeof secret?.grantRead !== "function") {
    problems.push(
      `secret must be an ISecret (another LeaseQueue's secret, or Secret.fromSecretCompleteArn(...)), got ${shown(secret)}`,
    );
  }
  if (secret !== undefined && upstashSecretArn !== undefined) {
    problems.push(
      `secret and upstashSecretArn are exclusive: give one or neither, got both (upstashSecretArn ${shown(upstashSecretArn)})`,
    );
  }
  const secretRemovalPolicy = props.secretRemovalPolicy ?? LEASE_QUEUE_DEFAULTS.secretRemovalPolicy;
  if (!SECRET_REMOVAL_POLICIES.includes(secretRemovalPolicy)) {
    problems.push(
      `secretRemovalPolicy must be RemovalPolicy.RETAIN, DESTROY or RETAIN_ON_UPDATE_OR_DELETE (a secret has no snapshot), got ${shown(secretRemovalPolicy)}`,
    );
  }
  if (props.secretRemovalPolicy !== undefined && (secret !== undefined || upstashSecretArn !== undefined)) {
    problems.push(
      `secretRemovalPolicy is for a secret the construct creates, not one given as ${secret !== undefined ? "secret" : "upstashSecretArn"} (its removal is yours): leave it out, got ${shown(props.secretRemovalPolicy)}`,
    );
  }
  return { upstashSecretArn, secret, secretRemovalPolicy };
}

/** True when the LeaseQueue creates its secret: neither `secret` nor `upstashSecretArn` was given. */
export function createsSecret(settings: SecretSettings): boolean {
  return settings.secret === undefined && settings.upstashSecretArn === undefined;
}

/**
 * The secret the three functions read: the one given as `secret`, the one `upstashSecretArn` names,
 * or a new one under `scope` (id "UpstashSecret") holding empty fields, removed as
 * `secretRemovalPolicy` says (RETAIN by default: it holds a token the user put there, and other
 * queues may read it).
 */
export function upstashSecret(scope: Construct, settings: SecretSettings & { queueName: string }): ISecret {
  if (settings.secret !== undefined) return settings.secret;
  if (settings.upstashSecretArn !== undefined) {
    return Secret.fromSecretCompleteArn(scope, "UpstashSecret", settings.upstashSecretArn);
  }
  // Empty fields, never a credential: the template stays free of secrets and the functions fail
  // their config check with a clear message until the user fills it.
  return new Secret(scope, "UpstashSecret", {
    description: `leaseq queue "${settings.queueName}": Upstash REST URL and token, as {"url": "...", "token": "..."}`,
    secretStringValue: SecretValue.unsafePlainText(JSON.stringify({ url: "", token: "" })),
    removalPolicy: settings.secretRemovalPolicy,
  });
}
