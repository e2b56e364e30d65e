import { LIMITS, NAME_PATTERN } from "./config.js";
import { InvalidInputError } from "./errors.js";

/**
 * The Redis keys of one queue (storage format v2, docs/storage.md). All share the hash tag
 * `{<queue>}`, so they live in one slot. Every script gets all of them in KEYS, in this order
 * (lua/lib/arguments.lua reads them by position).
 */
export interface QueueKeys {
  /** Hash: `<id>` the body (written once), `<id>:s` the state, `<id>:x` why it was quarantined. */
  task: string;
  /** Hash: the format version, the queue's settings, and what scripts keep at run time. */
  config: string;
  ready: string;
  scheduled: string;
  leased: string;
  done: string;
  failed: string;
  /** Ids whose record could not be read, by the time they were set aside. */
  corrupt: string;
  seq: string;
  /** Lex zset, score 0: the parked READY tasks of groups, `<type>|<group>\0<rank, 16 digits>\0<id>`. */
  grouped: string;
  /**
   * Hash: per group (`<type>|<group>`) `<ready>|<last turn>|<holders>[|<parked>|<let out>|<window>|<count>]`;
   * per `@<type>` its rate window (docs/groups.md).
   */
  groups: string;
  /** Zset: groups and `@<type>`s waiting for their next rate window, by when it opens. */
  groupwait: string;
  /**
   * Hash: per schedule `<name>` its definition, `<name>:v` its revision, `<name>:c` the time of its
   * last slot made (or passed over), `<name>:p` paused, `<name>:d` declared, `<name>:l` its last
   * slot's task, `<name>:r` the last one that started (docs/schedules.md).
   */
  schedules: string;
  /** Zset: the schedules by when their next slot must be planned (paused ones at the far end). */
  plan: string;
  /**
   * Zset: the groups and `@<type>`s with parked tasks, each by when its next parked task became
   * READY (ms): the oldest waiting of parked work, which the ready set's head does not show.
   */
  parkedsince: string;
}

const ORDER: Array<keyof QueueKeys> = [
  "task",
  "config",
  "ready",
  "scheduled",
  "leased",
  "done",
  "failed",
  "corrupt",
  "seq",
  "grouped",
  "groups",
  "groupwait",
  "schedules",
  "plan",
  "parkedsince",
];

/**
 * A key prefix: what a Redis Cluster reads as the hash tag is the first `{...}` of a key, so a brace
 * in the prefix would scatter a queue's keys over several slots (CROSSSLOT); a prefix keeps to these.
 */
const PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The most partitions a queue may have (docs/partitions.md). */
export const PARTITIONS_MAX = 64;
/** What separates a queue's name from a partition's number in its hash tag: never in a queue name. */
export const PARTITION_MARK = "#";
/** A partition's hash tag after partition 0 (shared/partitions.ts partitionTag): name, "#", number, ".", salt. */
const PARTITION_TAG = /^(.+)#([1-9][0-9]?)\.[0-9]{1,9}$/;

/**
 * The queue and the partition (1 to PARTITIONS_MAX - 1) a hash tag is of, or undefined when it is
 * no partition's tag (partition 0's is the queue's name itself).
 */
export function parsePartitionTag(tag: string): { name: string; partition: number } | undefined {
  const match = PARTITION_TAG.exec(tag);
  if (!match || !NAME_PATTERN.test(match[1]) || match[1].length > LIMITS.queueNameMaxBytes) return undefined;
  const partition = Number(match[2]);
  return partition < PARTITIONS_MAX ? { name: match[1], partition } : undefined;
}

/**
 * Key names of `queue` under `prefix`; throws InvalidInputError when the name is not a valid queue
 * name, the prefix not a valid key prefix, or `tag` neither the name nor one of its partitions'
 * tags. `tag` is a partition's hash tag (shared/partitions.ts partitionTag), the name itself by
 * default: partition 0, a queue of one partition.
 */
export function queueKeys(queue: string, prefix = "leaseq", tag: unknown = queue): QueueKeys {
  if (typeof prefix !== "string" || !PREFIX_PATTERN.test(prefix)) {
    throw new InvalidInputError(
      `key prefix must be 1-64 characters of A-Z a-z 0-9 _ . - : (no braces: the queue's {name} is the hash tag of every key), got ${JSON.stringify(String(prefix).slice(0, 80))}`,
    );
  }
  if (
    typeof queue !== "string" ||
    queue.length === 0 ||
    queue.length > LIMITS.queueNameMaxBytes ||
    !NAME_PATTERN.test(queue)
  ) {
    throw new InvalidInputError(
      `queue name must be 1-${LIMITS.queueNameMaxBytes} characters of A-Z a-z 0-9 _ . -, got ${JSON.stringify(String(queue).slice(0, 80))}`,
    );
  }
  if (tag !== queue && !(typeof tag === "string" && parsePartitionTag(tag)?.name === queue)) {
    throw new InvalidInputError(
      `partitionTag must be the name or "<name>#<partition>.<salt>" (shared/partitions.ts partitionTag), got ${JSON.stringify(String(tag).slice(0, 100))}`,
    );
  }
  const base = `${prefix}:{${tag}}:`;
  return Object.fromEntries(ORDER.map((name) => [name, `${base}${name}`])) as unknown as QueueKeys;
}

/** The keys in the order every script takes them. */
export function scriptKeys(keys: QueueKeys): string[] {
  return ORDER.map((name) => keys[name]);
}
