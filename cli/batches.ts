import { LIMITS } from "../shared/config.js";

/**
 * Runs `call` over `items` in batches the scripts take (LIMITS.batchMax each), one after another;
 * resolves to every batch's results in the items' order.
 */
export async function inBatches<I, T>(items: readonly I[], call: (batch: I[]) => Promise<T[]>): Promise<T[]> {
  const all: T[] = [];
  for (let start = 0; start < items.length; start += LIMITS.batchMax) {
    all.push(...(await call(items.slice(start, start + LIMITS.batchMax))));
  }
  return all;
}
