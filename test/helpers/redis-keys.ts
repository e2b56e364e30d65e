import type { Redis } from "ioredis";

/** Deletes the keys matching `pattern` (a SCAN, never KEYS or FLUSHDB: the server may be shared). */
export async function deleteMatching(redis: Redis, pattern: string): Promise<number> {
  let deleted = 0;
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== "0");
  return deleted;
}
