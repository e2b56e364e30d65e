import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../shared/errors.js";
import { queueKeys } from "../../shared/keys.js";

/** CRC16/XMODEM as Redis Cluster uses it (keyslot = crc16(tag) mod 16384). */
function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function slot(key: string): number {
  const open = key.indexOf("{");
  const close = key.indexOf("}", open + 1);
  const tag = open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
  return crc16(tag) % 16384;
}

describe("queue keys", () => {
  it("matches the CRC16 reference value Redis documents", () => {
    expect(crc16("123456789")).toBe(0x31c3);
  });

  it.each(["orders", "emails.v2", "a", "Q_9-x"])("puts every key of queue %s in one cluster slot", (name) => {
    const keys = Object.values(queueKeys(name));
    expect(keys).toHaveLength(15);
    expect(new Set(keys.map(slot)).size).toBe(1);
    expect(slot(keys[0])).toBe(crc16(name) % 16384);
  });

  it.each(["", "a{b}", "with space", "x".repeat(65), "ü"])("rejects the queue name %j", (name) => {
    expect(() => queueKeys(name)).toThrow(InvalidInputError);
    expect(() => queueKeys(name)).toThrow(/queue name must be 1-64 characters of A-Z a-z 0-9 _ \. -/);
  });

  it.each(["leaseq", "app:leaseq", "tenant-1.jobs", "a_b"])(
    "keeps every key in one slot under the prefix %j",
    (prefix) => {
      const keys = Object.values(queueKeys("orders", prefix));
      expect(new Set(keys.map(slot)).size).toBe(1);
      expect(keys[0].startsWith(`${prefix}:{orders}:`)).toBe(true);
    },
  );

  // A brace in the prefix would be the hash tag instead of {queue}.
  it.each(["x{}", "x{y}", "{", "}", "", "with space", "x".repeat(65), "a\nb"])(
    "rejects the key prefix %j",
    (prefix) => {
      expect(() => queueKeys("orders", prefix)).toThrow(InvalidInputError);
      expect(() => queueKeys("orders", prefix)).toThrow(/key prefix must be 1-64 characters of A-Z a-z 0-9 _ \. - :/);
    },
  );
});
