// A worker that dies mid-batch, for the demo: it claims a batch like a worker, reports what it
// holds on stdout as one JSON line, then waits for the SIGKILL the local stack sends it. Nothing
// releases its leases: only the reclaimer can bring the tasks back.
// Use: node --import tsx dev/crash-worker.ts QUEUE COUNT LEASE_MS [PARTITIONS]
import { connectionFromEnv, openStores } from "../shared/connection.js";
import { PartitionedQueue } from "../shared/partitioned-queue.js";
import type { ClaimedTask } from "../shared/types.js";

const [queueName, count, leaseMs, partitions = "1"] = process.argv.slice(2);
// The one connection rule, as the functions and the CLI read it; the stack hands this process the
// Upstash endpoints' URLs and tokens (no secret to read here).
const stores = await openStores(connectionFromEnv(process.env));
const queue = new PartitionedQueue(stores, { name: queueName, partitions: Number(partitions) });
// The leases follow the queue's config (the stack's worker wrote it); the claim takes only what
// fits `leaseMs`, the crash demo's short lease type. On a partitioned queue a claim takes from two
// partitions at most: it claims again until it holds its batch or finds nothing.
const claimed: ClaimedTask[] = [];
for (let tries = 0; claimed.length < Number(count) && tries < 4 * Number(partitions); tries++) {
  const taken = await queue.claim({
    count: Number(count) - claimed.length,
    now: Date.now(),
    maxLeaseMs: Number(leaseMs),
  });
  claimed.push(...taken);
  if (taken.length === 0 && Number(partitions) === 1) break;
}
process.stdout.write(
  `${JSON.stringify({ pid: process.pid, claimed: claimed.map(({ id, token }) => ({ id, token })) })}\n`,
);
// Keep the process (and its connection) alive until it is killed.
setInterval(() => {}, 60_000);
