import type { Command } from "commander";
import { readUpstashSecret } from "../functions/runtime.js";
import { connectionFromEnv, describeConnection, openStores } from "../shared/connection.js";
import { ConfigError, CredentialsError, StoreError, UnreachableError } from "../shared/errors.js";
import { queueKeys } from "../shared/keys.js";
import { partitionQueue } from "../shared/partitioned-queue.js";
import { PARTITIONS_MAX } from "../shared/partitions.js";
import type { Queue, QueueOptions } from "../shared/queue.js";
import type { Store } from "../shared/store.js";
import { OperationError, UsageError } from "./errors.js";

/**
 * A store for each database the environment names under the one connection rule
 * (shared/connection.ts), as the functions do: exactly one of UPSTASH_SECRET_ARN, UPSTASH_REDIS_REST_URL
 * + UPSTASH_REDIS_REST_TOKEN, or REDIS_URL; several (REDIS_URL listing servers, an Upstash secret
 * holding databases) for a partitioned queue, partition k on the (k mod count)-th; at most `most`.
 * Throws UsageError naming what is missing, malformed or set twice. `where` never holds a secret.
 */
async function openAllStores(
  env: NodeJS.ProcessEnv = process.env,
  most?: number,
): Promise<{ stores: Store[]; where: string }> {
  let connection: ReturnType<typeof connectionFromEnv>;
  try {
    connection = connectionFromEnv(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.problems.join("; "));
    throw error;
  }
  return { stores: await openStores(connection, readUpstashSecret, most), where: describeConnection(connection) };
}

/** The queue name from --queue or LEASEQ_QUEUE; throws UsageError when neither is given. */
export function queueName(command: Command, env: NodeJS.ProcessEnv = process.env): string {
  const name = (command.optsWithGlobals().queue as string | undefined) ?? env.LEASEQ_QUEUE;
  if (!name) throw new UsageError("no queue given: pass --queue NAME or set LEASEQ_QUEUE");
  return name;
}

/**
 * Runs `work` on the store the environment names (openAllStores), then closes it whatever happened; a
 * store's failure is thrown in words (inWords). With `--verbose`, says on stderr that `what` (e.g.
 * `queue "emails"`) is on that backend.
 */
export async function withStore<T>(
  command: Command,
  what: string,
  work: (store: Store, where: string) => Promise<T>,
): Promise<T> {
  return withStores(command, what, (stores, where) => work(stores[0], where), 1);
}

/**
 * withStore over every database the environment names (a partitioned queue's: partition k on
 * `stores[k % stores.length]`), or the first `most`; all closed after `work`.
 */
async function withStores<T>(
  command: Command,
  what: string,
  work: (stores: Store[], where: string) => Promise<T>,
  most?: number,
): Promise<T> {
  const { stores, where } = await openAllStores(process.env, most);
  if (command.optsWithGlobals().verbose) process.stderr.write(`leaseq: ${what} on ${where}\n`);
  try {
    return await work(stores, where);
  } catch (error) {
    throw inWords(error, where);
  } finally {
    await Promise.all(stores.map((store) => store.close()));
  }
}

/** An integer flag's value in `low..high`, or UsageError naming the flag, the environment variable and the range. */
export function integerOption(text: unknown, what: string, low: number, high: number): number {
  const value = Number(text);
  if (typeof text !== "string" || !/^\d+$/.test(text) || value < low || value > high) {
    throw new UsageError(`${what} must be an integer from ${low} to ${high}, got ${JSON.stringify(text)}`);
  }
  return value;
}

/**
 * The partitions the command addresses (docs/partitions.md): `count` from --partitions or
 * LEASEQ_PARTITIONS (default 1), and the one --partition names, if any.
 */
export function partitionsOf(
  command: Command,
  env: NodeJS.ProcessEnv = process.env,
): { count: number; only: number | undefined } {
  const options = command.optsWithGlobals();
  const given = (options.partitions as string | undefined) ?? env.LEASEQ_PARTITIONS;
  const count =
    given === undefined ? 1 : integerOption(given, "--partitions (or LEASEQ_PARTITIONS)", 1, PARTITIONS_MAX);
  const named = options.partition as string | undefined;
  const only = named === undefined ? undefined : integerOption(named, "--partition", 0, count - 1);
  return { count, only };
}

/**
 * Runs `work` on the queue the command names (withStore): on a partitioned queue, the partition
 * --partition names, which every command but stats and check needs. The queue name is checked
 * (Queue throws InvalidInputError) before any connection is opened.
 */
export async function withQueue<T>(
  command: Command,
  work: (queue: Queue, where: string, store: Store) => Promise<T>,
  options: Omit<QueueOptions, "name"> = {},
): Promise<T> {
  const name = queueName(command);
  queueKeys(name);
  const { count, only } = partitionsOf(command);
  if (count > 1 && only === undefined) {
    throw new UsageError(
      `queue "${name}" has ${count} partitions: pass --partition K (0 to ${count - 1}) to say which one; stats and check cover them all`,
    );
  }
  const partition = only ?? 0;
  return withStores(command, `queue "${name}"${only === undefined ? "" : ` partition ${only}`}`, (stores, where) => {
    const store = stores[partition % stores.length];
    return work(partitionQueue(store, { ...options, name }, partition), where, store);
  });
}

/**
 * Runs `work` on every partition of the queue the command names (one for a queue of one partition),
 * or on the one --partition names: each as { partition, queue }.
 */
export async function withPartitions<T>(
  command: Command,
  work: (partitions: Array<{ partition: number; queue: Queue }>, where: string) => Promise<T>,
): Promise<T> {
  const name = queueName(command);
  queueKeys(name);
  const { count, only } = partitionsOf(command);
  const numbers = only === undefined ? Array.from({ length: count }, (_, k) => k) : [only];
  return withStores(command, `queue "${name}"`, (stores, where) =>
    work(
      numbers.map((partition) => ({
        partition,
        queue: partitionQueue(stores[partition % stores.length], { name }, partition),
      })),
      where,
    ),
  );
}

/**
 * A store's failure as the CLI reports it (exit 1): an unreachable server says where and what to
 * check already; a refused token and a failure without a Redis error code are told where the CLI
 * looked. Anything else is returned as it is.
 */
export function inWords(error: unknown, where: string): unknown {
  if (error instanceof UnreachableError) return new OperationError(error.message, { cause: error });
  if (error instanceof CredentialsError) return new OperationError(`${error.message} (${where})`, { cause: error });
  if (error instanceof StoreError && error.redisCode === undefined) {
    return new OperationError(`${error.message} (${where})`, { cause: error });
  }
  return error;
}
