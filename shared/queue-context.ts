// What the parts of a queue share: `Queue` (shared/queue.ts), its schedules (queue-schedules.ts)
// and its operator's verbs (queue-admin.ts) each hold the same context, so they run their scripts
// on the same store, keys and settings; and the readers of what several scripts answer alike.
import { randomBytes } from "node:crypto";
import { InvalidInputError, toQueueError } from "./errors.js";
import { type QueueKeys, queueKeys, scriptKeys } from "./keys.js";
import { type FixedArgs, type OperationName, scriptArgs } from "./protocol/index.js";
import { SCRIPTS } from "./scripts.js";
import { type QueueSettings, type ResolvedSettings, resolveSettings } from "./settings.js";
import type { Store } from "./store.js";
import type { WakeTo } from "./types.js";

export interface QueueOptions {
  /** Queue name, `^[A-Za-z0-9_.-]{1,64}$`; it is the hash tag of every key. */
  name: string;
  /** Key prefix before the `{queue}` tag. Default "leaseq". */
  keyPrefix?: string;
  /**
   * The settings this process expects (the caps it checks input against before sending). They
   * reach Redis only through `configure()`; the scripts follow the queue's config, whatever a
   * caller holds.
   */
  settings?: QueueSettings;
  /**
   * The hash tag of one partition of a partitioned queue (docs/partitions.md): PartitionedQueue
   * passes `partitionTag(name, k)`, `<name>#<k>.<salt>`. Default the name itself: partition 0, a
   * queue of one partition.
   */
  partitionTag?: string;
}

const OPTION_NAMES = ["name", "keyPrefix", "settings", "partitionTag"];

/**
 * One queue on one store, as every part of a `Queue` sees it: its name, keys and settings, and the
 * one way to call a script on it.
 */
export class QueueContext {
  readonly name: string;
  readonly keys: QueueKeys;
  /** The settings this process expects (defaults applied). */
  readonly settings: ResolvedSettings;
  private readonly keyList: string[];

  /**
   * Throws InvalidInputError naming every option it does not know, or the name or settings that
   * break their rules.
   */
  constructor(
    readonly store: Store,
    options: QueueOptions,
  ) {
    const unknown = Object.keys(options ?? {}).filter((key) => !OPTION_NAMES.includes(key));
    if (unknown.length > 0) {
      throw new InvalidInputError(
        `new Queue: unknown option${unknown.length === 1 ? "" : "s"} ${unknown.map((key) => JSON.stringify(key)).join(", ")}: the options are ${OPTION_NAMES.join(", ")}; the queue's settings (order, policies, retention, caps) go in \`settings\` and reach Redis through configure()`,
      );
    }
    this.keys = queueKeys(options.name, options.keyPrefix, options.partitionTag ?? options.name);
    this.keyList = scriptKeys(this.keys);
    this.name = options.name;
    this.settings = resolveSettings("new Queue", options.settings);
  }

  /**
   * One script call: its fixed arguments by name (shared/protocol/), then its items. Resolves to the
   * reply as an array; throws the QueueError the store's failure or the script's status maps to.
   */
  async run<N extends OperationName>(name: N, fixed: FixedArgs<N>, items: readonly string[] = []): Promise<unknown[]> {
    try {
      const reply = await this.store.evalScript(SCRIPTS[name], this.keyList, scriptArgs(name, fixed, items));
      return Array.isArray(reply) ? reply : [reply];
    } catch (error) {
      throw toQueueError(name, error);
    }
  }
}

/**
 * An id for one call, the same on every sending of it: a script that arranges a wake-up records it
 * with the mark, so a store's repeat after a lost reply is told the same wake-up (lua/lib/wake-ups.lua).
 */
export function callId(): string {
  return randomBytes(9).toString("base64url");
}

/** A time a script answered, or undefined for its "" (none). */
export function optionalTime(value: unknown): number | undefined {
  return value === "" || value === undefined || value === null ? undefined : Number(value);
}

/** Adds `more` to `into`, keeping the earliest per wake queue (and partition). */
export function mergeWakeTo<Wake extends { atMs: number; queueUrl?: string; partition?: number }>(
  into: Wake[],
  more: readonly Wake[],
): Wake[] {
  for (const wake of more) {
    const known = into.find((entry) => entry.queueUrl === wake.queueUrl && entry.partition === wake.partition);
    if (!known) into.push({ ...wake });
    else if (wake.atMs < known.atMs) known.atMs = wake.atMs;
  }
  return into;
}

/**
 * The wake-ups a reply of enqueue, plan or pause asks for: `"<ms>"` for the caller's own wake queue,
 * then `",<ms> <url>"` for another deployment's of a shared queue (lua/lib/wake-ups.lua's wake_reply).
 */
export function readWakeUps(value: unknown): { wakeAtMs: number | undefined; wakeTo: WakeTo[] } {
  const [own, ...others] = String(value ?? "").split(",");
  return {
    wakeAtMs: optionalTime(own),
    wakeTo: others.map((entry) => {
      const space = entry.indexOf(" ");
      return { atMs: Number(entry.slice(0, space)), queueUrl: entry.slice(space + 1) };
    }),
  };
}
