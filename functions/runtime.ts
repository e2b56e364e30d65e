import { type Connection, openStore } from "../shared/connection.js";
import { ConfigError } from "../shared/errors.js";
import { Queue } from "../shared/queue.js";
import type { QueueSettings } from "../shared/settings.js";
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

/**
 * The queue settings a worker declares: its task policies, the types it only accepts (another
 * deployment runs them: their policies are that deployment's, and this worker's claims leave their
 * tasks alone), the order, and the skew and retention from the environment. A type nobody declared
 * is refused at enqueue; one enqueued before the config was written gets the default policy (one
 * attempt, the shortest lease: its worker fails it at once as a type the queue lacks). The worker
 * writes them into the queue's config at its cold start; the local stack writes the same before
 * its demo starts.
 */
export function queueSettings(
  config: Partial<
    Pick<FunctionConfig, "clockSkewMs" | "doneRetentionMs" | "failedRetentionMs" | "deployment" | "wakeQueueUrl">
  >,
  tasks: TaskDeclaration,
): QueueSettings {
  const types = Object.entries(tasks.types);
  // A claim leases each task for its type's heartbeat: the lease lives that long without one.
  const policies: Record<string, { leaseMs: number; maxAttempts: number }> = Object.fromEntries(
    types.map(([name, type]) => [name, { leaseMs: type.heartbeatMs, maxAttempts: type.maxAttempts }]),
  );
  const shortestLeaseMs = Math.min(...types.map(([, type]) => type.heartbeatMs));
  const typeGroups = Object.fromEntries(types.flatMap(([name, type]) => (type.group ? [[name, type.group]] : [])));
  return {
    ordered: tasks.ordered,
    policies,
    groups: tasks.groups,
    typeGroups,
    strictTypes: true,
    acceptTypes: [...tasks.acceptTypes],
    defaultPolicy: types.length > 0 ? { leaseMs: shortestLeaseMs, maxAttempts: 1 } : undefined,
    maxStalls: tasks.maxStalls,
    clockSkewMs: config.clockSkewMs,
    doneRetentionMs: config.doneRetentionMs,
    failedRetentionMs: config.failedRetentionMs,
    // The deployment running these types, and where its wake-ups go (docs/wake-ups.md).
    deployment: config.deployment,
    wakeQueueUrl: config.wakeQueueUrl,
  };
}

/**
 * Builds the runtime: the store and the Queue. With `tasks` (the worker) the queue's config is
 * written from them, idempotently; without (the reclaimer) the queue's config is only read. A
 * start that fails closes the store it opened: the next invocation opens its own, and a process
 * that gives up is not held open by a connection retrying in the background.
 */
export async function createRuntime(
  config: FunctionConfig,
  tasks: TaskDeclaration | undefined,
  warn: (message: string, fields: Record<string, unknown>) => void = () => {},
): Promise<Runtime> {
  const store = await openConnection(config.connection);
  try {
    const queue = new Queue(store, {
      name: config.queue,
      // The reclaimer declares nothing; its deployment names its wake-up marks on a shared queue.
      settings: tasks ? queueSettings(config, tasks) : { deployment: config.deployment },
    });
    if (tasks) {
      await queue.configure();
      const { refused } = await queue.schedules.syncDeclared(tasks.schedules, {
        now: Date.now(),
        owner: config.deployment,
      });
      for (const { name, owner } of refused) {
        warn("a schedule of this declaration is another deployment's: not set (rename one of them)", {
          schedule: name,
          owner,
          deployment: config.deployment,
        });
      }
    }
    return { config, queue, store };
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
}
