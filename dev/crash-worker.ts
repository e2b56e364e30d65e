// A worker that dies mid-batch, for the demo: it claims a batch like a worker, reports what it
// holds on stdout as one JSON line, then waits for the SIGKILL the local stack sends it. Nothing
// releases its leases: only the reclaimer can bring the tasks back.
// Use: node --import tsx dev/crash-worker.ts QUEUE COUNT LEASE_MS
import { connectionFromEnv, openStore } from "../shared/connection.js";
import { Queue } from "../shared/queue.js";

const [queueName, count, leaseMs] = process.argv.slice(2);
// The one connection rule, as the functions and the CLI read it; the stack hands this process the
// Upstash endpoint's URL and token (no secret to read here).
const store = await openStore(connectionFromEnv(process.env));
const queue = new Queue(store, { name: queueName });
// The leases follow the queue's config (the stack's worker wrote it); the claim takes only what
// fits `leaseMs`, the crash demo's short lease type.
const claimed = await queue.claim({ count: Number(count), now: Date.now(), maxLeaseMs: Number(leaseMs) });
process.stdout.write(
  `${JSON.stringify({ pid: process.pid, claimed: claimed.map(({ id, token }) => ({ id, token })) })}\n`,
);
// Keep the process (and its connection) alive until it is killed.
setInterval(() => {}, 60_000);
