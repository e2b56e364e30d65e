// Partitions (docs/partitions.md): one logical queue over N hash tags, each on a connection of its
// own or sharing one. Here: where each partition's tag puts it among Redis Cluster's slots, and
// which partition a task belongs to (its routing key, a stable hash).
import calculateSlot from "cluster-key-slot";
import { InvalidInputError } from "./errors.js";
import { PARTITION_MARK, PARTITIONS_MAX } from "./keys.js";

export { PARTITION_MARK, PARTITIONS_MAX };

/** Redis Cluster's hash slots. */
export const CLUSTER_SLOTS = 16_384;
/** A partition's tag lands within this many slots after its target slot. */
const PLACEMENT_WINDOW = 16;

/** Checks a partition count: an integer 1..PARTITIONS_MAX; `where` names the setting in the error. */
export function checkPartitions(where: string, partitions: unknown): number {
  if (
    typeof partitions !== "number" ||
    !Number.isInteger(partitions) ||
    partitions < 1 ||
    partitions > PARTITIONS_MAX
  ) {
    throw new InvalidInputError(
      `${where}: partitions must be an integer from 1 to ${PARTITIONS_MAX}, got ${JSON.stringify(partitions)}`,
    );
  }
  return partitions;
}

/** The slot a hash tag's keys live in (CRC16 of the tag, as Redis Cluster computes it). */
export function slotOfTag(tag: string): number {
  return calculateSlot(`{${tag}}`);
}

/**
 * Where partition `index` of a queue aims among the slots: its place in the van der Corput sequence
 * (1/2, 1/4, 3/4, 1/8, ...) after partition 0's slot. The first N places of the sequence are spread
 * over the slots whatever N is (evenly when N is a power of two), and a partition's place never
 * depends on N, so growing a queue never moves a partition that exists.
 */
export function targetSlot(baseSlot: number, index: number): number {
  let fraction = 0;
  let weight = 0.5;
  for (let rest = index; rest > 0; rest >>= 1, weight /= 2) {
    if (rest & 1) fraction += weight;
  }
  return (baseSlot + Math.floor(fraction * CLUSTER_SLOTS)) % CLUSTER_SLOTS;
}

/**
 * The hash tag of partition `index` of queue `name`: the name itself for partition 0 (a queue of one
 * partition is the queue as it always was), else `<name>#<index>.<salt>`, the first salt from 0 up
 * whose slot lies within PLACEMENT_WINDOW slots after the partition's target (targetSlot). A pure
 * function of the name and the index: every process finds the same tags, with nothing stored.
 */
export function partitionTag(name: string, index: number): string {
  if (index === 0) return name;
  const key = `${name}${PARTITION_MARK}${index}`;
  const known = tags.get(key);
  if (known !== undefined) return known;
  const target = targetSlot(slotOfTag(name), index);
  // About CLUSTER_SLOTS / PLACEMENT_WINDOW (1,024) salts on average; a million never all miss in practice.
  for (let salt = 0; salt < SALTS_MAX; salt++) {
    const tag = `${key}.${salt}`;
    if ((slotOfTag(tag) - target + CLUSTER_SLOTS) % CLUSTER_SLOTS < PLACEMENT_WINDOW) {
      tags.set(key, tag);
      return tag;
    }
  }
  throw new Error(
    `partitionTag: no salt up to ${SALTS_MAX} places ${key} within ${PLACEMENT_WINDOW} slots of slot ${target}`,
  );
}

/** The tags found so far, by `<name>#<index>`: each costs about a thousand CRC16s to find, once per process. */
const tags = new Map<string, string>();
/** The most salts partitionTag tries. */
const SALTS_MAX = 1_000_000;

/** 32-bit FNV-1a of `text` (UTF-16 code units), as an unsigned integer. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  // A final mix (murmur3's fmix32): FNV's low bits alone spread short keys poorly.
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/**
 * The partition of a routing key among `partitions` (rendezvous hashing: the partition whose hash of
 * `<index>:<key>` is highest). Growing the count moves a key only to one of the new partitions, and
 * shrinking it only off the ones removed; no key moves between partitions that stay.
 */
export function partitionOf(routingKey: string, partitions: number): number {
  let best = 0;
  let bestHash = -1;
  for (let index = 0; index < partitions; index++) {
    const hash = fnv1a(`${index}:${routingKey}`);
    if (hash > bestHash) {
      best = index;
      bestHash = hash;
    }
  }
  return best;
}

/** What routes a task: its group, else its flow key, else its id. */
export interface RoutedTask {
  id: string;
  group?: string;
  /** A flow control key (dedupe, debounce, throttle): tasks sharing one must meet in one partition. */
  flowKey?: string;
}

/**
 * The routing key of a task: `g:<group>` when it has a group (every task of a group in one
 * partition: its order, concurrency and rate stay exact), else `f:<flow key>` (a dedupe, debounce or
 * throttle key's window in one partition), else `i:<id>`.
 */
export function routingKey(task: RoutedTask): string {
  if (task.group) return `g:${task.group}`;
  if (task.flowKey) return `f:${task.flowKey}`;
  return `i:${task.id}`;
}
