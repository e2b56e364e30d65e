import { openStores, type UpstashDatabase } from "../shared/connection.js";
import { ConfigError } from "../shared/errors.js";
import { Queue } from "../shared/queue.js";
import type { QueueSettings } from "../shared/settings.js";
import type { FunctionConfig } from "./config.js";
import type { TaskDeclaration } from "./tasks.js";
import { plainWorkQueue, type WorkQueue } from "./work-queue.js";

/** What a function needs after its cold start: the queue, and the config it came from. */
export interface Runtime {
  config: FunctionConfig;
  /** The queue, or on a partitioned queue its partition 0: where its config and schedules live. */
  queue: Queue;
  /** What the worker claims, settles and enqueues through: the queue, or all its partitions as one. */
  work: WorkQueue;
  /** Every partition, by number (the queue alone when it has one): what the reclaimer ticks. */
  partitions: readonly Queue[];
  /** Closes every store opened. */
  close(): Promise<void>;
}

/**
 * Reads `{"url", "token"}` (or the UPSTASH_REDIS_REST_* names) from the secret, or a list of them:
 * one Upstash database per partition group (docs/partitions.md). Never logs it.
 */
export async function readUpstashSecret(secretArn: string): Promise<UpstashDatabase | UpstashDatabase[]> {
  // Loaded when a secret is read: the CLI and TCP deployments never load this client.
  const { GetSecretValueCommand, SecretsManagerClient } = await import("@aws-sdk/client-secrets-manager");
  const client = new SecretsManagerClient({});
  const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
  let parsed: unknown = {};
  try {
    parsed = JSON.parse(SecretString ?? "{}");
  } catch {
    // Reported below without echoing the secret.
  }
  const databases = (Array.isArray(parsed) ? parsed : [parsed]).map((entry: Record<string, unknown> | null) => ({
    url: entry?.url ?? entry?.UPSTASH_REDIS_REST_URL,
    token: entry?.token ?? entry?.UPSTASH_REDIS_REST_TOKEN,
  }));
  if (
    databases.length === 0 ||
    !databases.every(
      ({ url, token }) => typeof url === "string" && typeof token === "string" && url !== "" && token !== "",
    )
  ) {
    throw new ConfigError([
      `secret ${secretArn} must hold JSON {"url": "https://...upstash.io", "token": "..."}, or a list of them (a partitioned queue's databases)`,
    ]);
  }
  return Array.isArray(parsed) ? (databases as UpstashDatabase[]) : (databases[0] as UpstashDatabase);
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
  const partitioned = config.partitions > 1 || config.shrinkingFrom !== undefined;
  const stores = await openStores(config.connection, readUpstashSecret, partitioned ? undefined : 1);
  const close = async () => {
    await Promise.all(stores.map((store) => store.close().catch(() => {})));
  };
  try {
    const options = {
      name: config.queue,
      // The reclaimer declares nothing; its deployment names its wake-up marks on a shared queue.
      settings: tasks ? queueSettings(config, tasks) : { deployment: config.deployment },
    };
    let queue: Queue;
    let work: WorkQueue;
    let partitions: readonly Queue[];
    if (partitioned) {
      // Loaded for a partitioned queue only: a queue of one partition never parses it on a cold start.
      const { PartitionedQueue } = await import("../shared/partitioned-queue.js");
      const partitionedQueue = new PartitionedQueue(stores, {
        ...options,
        partitions: config.partitions,
        shrinkingFrom: config.shrinkingFrom,
      });
      work = partitionedQueue;
      partitions = partitionedQueue.partitions;
      queue = partitions[0];
    } else {
      queue = new Queue(stores[0], options);
      work = plainWorkQueue(queue);
      partitions = [queue];
    }
    if (tasks) {
      // Every partition's scripts read the settings; the schedules live in partition 0 (docs/partitions.md).
      await Promise.all(partitions.map((partition) => partition.configure()));
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
    return { config, queue, work, partitions, close };
  } catch (error) {
    await close();
    throw error;
  }
}
