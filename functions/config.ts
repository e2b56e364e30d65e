import { ConfigError } from "../shared/errors.js";

/** Where the functions find Redis. */
export type Connection =
  | { kind: "upstash-secret"; secretArn: string }
  | { kind: "upstash"; url: string; token: string }
  | { kind: "tcp"; url: string };

/** The functions' configuration, read once per cold start from the environment. */
export interface FunctionConfig {
  queue: string;
  connection: Connection;
  /** Tasks one claim leases (LEASEQ_CLAIM_BATCH). */
  claimBatch: number;
  /** The worker function the reclaimer kicks (LEASEQ_WORKER_FUNCTION); unset: no kicks. */
  workerFunction: string | undefined;
  /** Most drain kicks per reclaimer run (LEASEQ_MAX_KICKS). */
  maxKicks: number;
  /** Only kick when the head of the ready queue has waited at least this long (LEASEQ_KICK_AFTER_MS). */
  kickAfterMs: number;
  /** Lambda API endpoint override, for local runs and tests (LEASEQ_LAMBDA_ENDPOINT). */
  lambdaEndpoint: string | undefined;
  /** Time the worker keeps free at the end of an invocation (LEASEQ_SAFETY_MARGIN_MS). */
  safetyMarginMs: number;
  /** Reclaim only leases expired by more than this (LEASEQ_CLOCK_SKEW_MS, default 2000). */
  clockSkewMs: number;
  doneRetentionMs: number | undefined;
  failedRetentionMs: number | undefined;
}

type Env = Record<string, string | undefined>;

/** Reads the configuration; throws one ConfigError listing every problem found. */
export function readConfig(env: Env): FunctionConfig {
  const problems: string[] = [];
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
      return fallback;
    }
    return value;
  };
  const optionalInteger = (name: string, min: number, max: number) =>
    env[name] ? integer(name, 0, min, max) : undefined;

  const queue = env.LEASEQ_QUEUE ?? "";
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(queue)) {
    problems.push(`LEASEQ_QUEUE must be 1-64 characters of A-Z a-z 0-9 _ . -, got ${JSON.stringify(queue)}`);
  }

  let connection: Connection | undefined;
  if (env.UPSTASH_SECRET_ARN) {
    if (!/^arn:aws[a-z-]*:secretsmanager:/.test(env.UPSTASH_SECRET_ARN)) {
      problems.push("UPSTASH_SECRET_ARN must be a Secrets Manager secret ARN (arn:aws:secretsmanager:...)");
    }
    connection = { kind: "upstash-secret", secretArn: env.UPSTASH_SECRET_ARN };
  } else if (env.UPSTASH_REDIS_REST_URL || env.UPSTASH_REDIS_REST_TOKEN) {
    if (!env.UPSTASH_REDIS_REST_URL?.startsWith("http")) problems.push("UPSTASH_REDIS_REST_URL must be an http(s) URL");
    if (!env.UPSTASH_REDIS_REST_TOKEN)
      problems.push("UPSTASH_REDIS_REST_TOKEN must be set with UPSTASH_REDIS_REST_URL");
    connection = { kind: "upstash", url: env.UPSTASH_REDIS_REST_URL ?? "", token: env.UPSTASH_REDIS_REST_TOKEN ?? "" };
  } else if (env.REDIS_URL) {
    if (!/^rediss?:\/\//.test(env.REDIS_URL)) problems.push("REDIS_URL must start with redis:// or rediss://");
    connection = { kind: "tcp", url: env.REDIS_URL };
  } else {
    problems.push(
      "no Redis configured: set UPSTASH_SECRET_ARN (on AWS), or UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN, or REDIS_URL",
    );
  }

  const config = {
    queue,
    connection: connection as Connection,
    claimBatch: integer("LEASEQ_CLAIM_BATCH", 20, 1, 100),
    workerFunction: env.LEASEQ_WORKER_FUNCTION || undefined,
    maxKicks: integer("LEASEQ_MAX_KICKS", 4, 0, 100),
    kickAfterMs: integer("LEASEQ_KICK_AFTER_MS", 0, 0, 3_600_000),
    lambdaEndpoint: env.LEASEQ_LAMBDA_ENDPOINT || undefined,
    safetyMarginMs: integer("LEASEQ_SAFETY_MARGIN_MS", 1_000, 0, 60_000),
    clockSkewMs: integer("LEASEQ_CLOCK_SKEW_MS", 2_000, 0, 3_600_000),
    doneRetentionMs: optionalInteger("LEASEQ_DONE_RETENTION_MS", 0, 366 * 86_400_000),
    failedRetentionMs: optionalInteger("LEASEQ_FAILED_RETENTION_MS", 0, 366 * 86_400_000),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
