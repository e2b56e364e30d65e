import { LIMITS } from "../shared/config.js";
import { type Connection, openStore } from "../shared/connection.js";
import { ConfigError } from "../shared/errors.js";
import { Queue } from "../shared/queue.js";
import type { Store } from "../shared/store.js";
import type { FunctionConfig } from "./config.js";
import type { TaskDeclaration } from "./tasks.js";

/** What a function needs after its cold start: the queue, and the config it came from. */
export interface Runtime {
  config: FunctionConfig;
  queue: Queue;
  store: Store;
}

/** Reads `{"url", "token"}` (or the UPSTASH_REDIS_REST_* names) from the secret. Never logs it. */
export async function readUpstashSecret(secretArn: string): Promise<{ url: string; token: string }> {
  // Loaded when a secret is read: the CLI and TCP deployments never load this client.
  const { GetSecretValueCommand, SecretsManagerClient } = await import("@aws-sdk/client-secrets-manager");
  const client = new SecretsManagerClient({});
  const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(SecretString ?? "{}");
  } catch {
    // Reported below without echoing the secret.
  }
  const url = parsed.url ?? parsed.UPSTASH_REDIS_REST_URL;
  const token = parsed.token ?? parsed.UPSTASH_REDIS_REST_TOKEN;
  if (typeof url !== "string" || typeof token !== "string" || url === "" || token === "") {
    throw new ConfigError([`secret ${secretArn} must hold JSON {"url": "https://...upstash.io", "token": "..."}`]);
  }
  return { url, token };
}

/** Opens a store under the one connection rule, reading a secret through Secrets Manager. */
export function openConnection(connection: Connection): Promise<Store> {
  return openStore(connection, readUpstashSecret);
}

/** Builds the runtime: the store and a Queue carrying each declared task type's lease policy. */
export async function createRuntime(config: FunctionConfig, tasks: TaskDeclaration | undefined): Promise<Runtime> {
  const store = await openConnection(config.connection);
  const types = Object.entries(tasks?.types ?? {});
  const policies: Record<string, { leaseMs: number; maxAttempts: number }> = Object.fromEntries(
    types.map(([name, type]) => [name, { leaseMs: type.leaseMs, maxAttempts: type.maxAttempts }]),
  );
  // Types accepted but run elsewhere get a lease no invocation can fit, so this worker never claims them.
  for (const name of tasks?.acceptTypes ?? []) policies[name] = { leaseMs: LIMITS.leaseMaxMs, maxAttempts: 1 };
  // An undeclared type's task is failed at once ("no handler"): its lease only has to fit.
  const shortestLeaseMs = Math.min(...types.map(([, type]) => type.leaseMs));
  const queue = new Queue(store, {
    name: config.queue,
    ordered: tasks?.ordered ?? false,
    policies,
    defaultPolicy: types.length > 0 ? { leaseMs: shortestLeaseMs, maxAttempts: 1 } : undefined,
    clockSkewMs: config.clockSkewMs,
    doneRetentionMs: config.doneRetentionMs,
    failedRetentionMs: config.failedRetentionMs,
  });
  return { config, queue, store };
}
