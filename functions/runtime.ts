import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { ConfigError } from "../shared/errors.js";
import { Queue } from "../shared/queue.js";
import type { Store } from "../shared/store.js";
import { UpstashStore } from "../shared/stores/upstash.js";
import type { Connection, FunctionConfig } from "./config.js";
import type { TaskRegistry } from "./task.js";

/** What a function needs after its cold start: the queue, and the config it came from. */
export interface Runtime {
  config: FunctionConfig;
  queue: Queue;
  store: Store;
  registry: TaskRegistry;
}

/** Reads `{"url", "token"}` (or the UPSTASH_REDIS_REST_* names) from the secret. Never logs it. */
async function upstashFromSecret(secretArn: string): Promise<{ url: string; token: string }> {
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

export async function openStore(connection: Connection): Promise<Store> {
  switch (connection.kind) {
    case "tcp": {
      // Loaded on demand: the Lambda bundles split ioredis into a chunk that Upstash users never load.
      const { TcpStore } = await import("../shared/stores/tcp.js");
      return TcpStore.fromUrl(connection.url);
    }
    case "upstash":
      return new UpstashStore({ url: connection.url, token: connection.token });
    case "upstash-secret":
      return new UpstashStore(await upstashFromSecret(connection.secretArn));
  }
}

/** Builds the runtime: the store and a Queue carrying each task type's lease policy. */
export async function createRuntime(config: FunctionConfig, registry: TaskRegistry): Promise<Runtime> {
  const store = await openStore(config.connection);
  const queue = new Queue(store, {
    name: config.queue,
    ordered: registry.ordered,
    policies: Object.fromEntries(
      Object.entries(registry.types).map(([name, type]) => [
        name,
        { leaseMs: type.leaseMs, maxAttempts: type.maxAttempts },
      ]),
    ),
    clockSkewMs: config.clockSkewMs,
    doneRetentionMs: config.doneRetentionMs,
    failedRetentionMs: config.failedRetentionMs,
  });
  return { config, queue, store, registry };
}
