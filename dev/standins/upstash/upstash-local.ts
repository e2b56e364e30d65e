// `npm run upstash-local`: the local Upstash-compatible REST endpoint in front of REDIS_URL (else
// redis://127.0.0.1:6379), printing the two variables @upstash/redis reads. Stops on Ctrl-C.
//   UPSTASH_LOCAL_PORT   port on 127.0.0.1 (default 8079; 0 picks a free one)
//   UPSTASH_LOCAL_TOKEN  the bearer token (default: a fresh random one)
import { startUpstashEndpoint } from "./index.js";
import { parseRedisUrl, RespConnection } from "./resp.js";

const redisUrl = process.env.REDIS_URL || "redis://127.0.0.1:6379";
const port = Number(process.env.UPSTASH_LOCAL_PORT ?? 8079);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`UPSTASH_LOCAL_PORT must be a port from 0 to 65535, got "${process.env.UPSTASH_LOCAL_PORT}"`);
  process.exit(2);
}

// Fail at start, with the reason, rather than on the first request.
try {
  (await RespConnection.open(parseRedisUrl(redisUrl))).close();
} catch (error) {
  console.error(`upstash-local: cannot reach Redis at ${redisUrl} (${(error as Error).message}).`);
  console.error("Start redis-server, or set REDIS_URL, e.g. REDIS_URL=redis://127.0.0.1:6380 npm run upstash-local");
  process.exit(1);
}

const endpoint = await startUpstashEndpoint({ redisUrl, port, token: process.env.UPSTASH_LOCAL_TOKEN || undefined });
console.log(`Upstash-compatible endpoint on ${endpoint.url}, in front of ${redisUrl}`);
console.log(`export UPSTASH_REDIS_REST_URL=${endpoint.url}`);
console.log(`export UPSTASH_REDIS_REST_TOKEN=${endpoint.token}`);
console.log("Ctrl-C stops it.");

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    endpoint.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`upstash-local: error while stopping (${(error as Error).message})`);
        process.exit(1);
      },
    );
  });
}
