// Partitions' placement and routing (shared/partitions.ts), without Redis: the tags' slots, the
// routing hash's stability when the count changes, and the keys a partition's queue uses.
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../shared/errors.js";
import { queueKeys } from "../../shared/keys.js";
import {
  CLUSTER_SLOTS,
  checkPartitions,
  PARTITIONS_MAX,
  partitionOf,
  partitionTag,
  routingKey,
  slotOfTag,
  targetSlot,
} from "../../shared/partitions.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";

const NO_STORE = {} as Store;

describe("partition tags", () => {
  it("computes Redis Cluster's slot of a tag (the values of the cluster spec and CLUSTER KEYSLOT)", () => {
    // CLUSTER KEYSLOT somekey = 11058, foo = 12182 (Redis's documentation); a key's tag decides its slot.
    expect(slotOfTag("somekey")).toBe(11058);
    expect(slotOfTag("foo")).toBe(12182);
  });

  it("keeps partition 0 under the queue's own name: a queue of one partition is the queue as it was", () => {
    expect(partitionTag("orders", 0)).toBe("orders");
    expect(queueKeys("orders", "leaseq", partitionTag("orders", 0))).toEqual(queueKeys("orders"));
  });

  it("gives every other partition a tag no queue name can take, near its target slot, the same every time", () => {
    for (const name of ["orders", "a", "tenant-jobs.v2"]) {
      const base = slotOfTag(name);
      const tags = new Set<string>();
      for (let k = 1; k < 16; k++) {
        const tag = partitionTag(name, k);
        expect(tag).toMatch(new RegExp(`^${name.replaceAll(".", "\\.")}#${k}\\.\\d+$`));
        expect(partitionTag(name, k)).toBe(tag);
        const offset = (slotOfTag(tag) - targetSlot(base, k) + CLUSTER_SLOTS) % CLUSTER_SLOTS;
        expect(offset).toBeLessThan(16);
        tags.add(tag);
      }
      expect(tags.size).toBe(15);
    }
  });

  it("spreads N partitions over the slots for every N, evenly for powers of two, without moving one that exists", () => {
    // The targets after partition 0's slot: 1/2, 1/4, 3/4, 1/8, ... of the slots.
    expect([1, 2, 3, 4].map((k) => targetSlot(0, k))).toEqual([8192, 4096, 12288, 2048]);
    for (const n of [2, 4, 8, 16]) {
      const slots = Array.from({ length: n }, (_, k) => targetSlot(100, k)).sort((a, b) => a - b);
      const gaps = slots.map((slot, i) => ((slots[(i + 1) % n] ?? 0) - slot + CLUSTER_SLOTS) % CLUSTER_SLOTS);
      expect(new Set(gaps)).toEqual(new Set([CLUSTER_SLOTS / n]));
    }
  });

  it("puts a queue of 6 partitions on every master of 3 equal contiguous ranges, whatever the queue's name", () => {
    const third = Math.ceil(CLUSTER_SLOTS / 3);
    let fewest = Number.POSITIVE_INFINITY;
    let most = 0;
    for (let i = 0; i < 300; i++) {
      const name = `q${i}`;
      const perMaster = [0, 0, 0];
      for (let k = 0; k < 6; k++) perMaster[Math.floor(slotOfTag(partitionTag(name, k)) / third)]++;
      fewest = Math.min(fewest, ...perMaster);
      most = Math.max(most, ...perMaster);
    }
    // Measured over these 300 names: every master holds 1 to 3 of the 6 (docs/partitions.md).
    expect(fewest).toBeGreaterThanOrEqual(1);
    expect(most).toBeLessThanOrEqual(3);
  });

  it("refuses a partition count outside 1..64, naming the setting", () => {
    expect(checkPartitions("x", 4)).toBe(4);
    for (const bad of [0, -1, 1.5, PARTITIONS_MAX + 1, "4", undefined]) {
      expect(() => checkPartitions("new PartitionedQueue", bad)).toThrow(
        /new PartitionedQueue: partitions must be an integer from 1 to 64/,
      );
    }
  });

  it("gives a partition's Queue its tag's keys, and refuses a tag that is not one of its name's partitions", () => {
    const tag = partitionTag("orders", 3);
    const queue = new Queue(NO_STORE, { name: "orders", partitionTag: tag });
    expect(queue.keys.task).toBe(`leaseq:{${tag}}:task`);
    expect(new Queue(NO_STORE, { name: "orders" }).keys.task).toBe("leaseq:{orders}:task");
    for (const bad of ["other#3.1", "orders}x", "orders#0.1", "orders#3", "orders#3.1{x}", ""]) {
      expect(() => new Queue(NO_STORE, { name: "orders", partitionTag: bad })).toThrow(InvalidInputError);
    }
    expect(() => new Queue(NO_STORE, { name: "orders", partitionTag: "x}" })).toThrow(/partitionTag must be the name/);
  });
});

describe("routing", () => {
  it("routes by group, else flow key, else id", () => {
    expect(routingKey({ id: "t1", group: "acme", flowKey: "d:k" })).toBe("g:acme");
    expect(routingKey({ id: "t1", flowKey: "d:k" })).toBe("f:d:k");
    expect(routingKey({ id: "t1" })).toBe("i:t1");
  });

  it("spreads keys evenly: 20,000 ids over 4 partitions within 5% of a quarter each", () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 20_000; i++) counts[partitionOf(`i:task-${i}`, 4)]++;
    for (const count of counts) expect(Math.abs(count - 5_000)).toBeLessThan(250);
  });

  it("moves a key only onto a new partition when the count grows, and never between partitions that stay", () => {
    for (const [from, to] of [
      [1, 4],
      [3, 4],
      [4, 6],
    ]) {
      let moved = 0;
      for (let i = 0; i < 5_000; i++) {
        const key = `g:tenant-${i}`;
        const before = partitionOf(key, from);
        const after = partitionOf(key, to);
        if (after !== before) {
          expect(after).toBeGreaterThanOrEqual(from);
          moved++;
        }
      }
      // About (to - from) / to of the keys move: the new partitions' share.
      expect(moved / 5_000).toBeGreaterThan(((to - from) / to) * 0.9);
      expect(moved / 5_000).toBeLessThan(((to - from) / to) * 1.1);
    }
    // One partition: every key in partition 0.
    expect(partitionOf("i:anything", 1)).toBe(0);
  });
});
