// The rows of the throughput table, one factory per system, so the benchmark and its test build
// the same cases: a row's key names its system, transport, batch (or concurrency) and payload size.
import type { Store } from "../shared/store.js";
import { TcpStore } from "../shared/stores/tcp.js";
import { bullmqContender } from "./bullmq.js";
import { leaseqContender } from "./leaseq.js";
import { naiveContender } from "./naive.js";
import type { ThroughputCase } from "./throughput.js";

/** How a row runs: tasks per claim, concurrent consumers, and a payload other than the standard one. */
export interface CaseShape {
  batchSize: number;
  consumers: number;
  payloadBytes?: number;
}

const payloadSuffix = (payloadBytes?: number) => (payloadBytes ? ` ${payloadBytes / 1024}KiB` : "");

/** leaseq over TCP to `url`, each consumer and the producer on a store of its own. */
export function leaseqTcpCase(url: string, shape: CaseShape): ThroughputCase {
  return leaseqCase("tcp", () => TcpStore.fromUrl(url), shape);
}

/** leaseq through the local Upstash endpoint (`openStore` opens a store on it). */
export function leaseqUpstashCase(openStore: () => Store, shape: CaseShape): ThroughputCase {
  return leaseqCase("upstash", openStore, shape);
}

function leaseqCase(via: "tcp" | "upstash", openStore: () => Store | Promise<Store>, shape: CaseShape): ThroughputCase {
  const { batchSize, consumers } = shape;
  return {
    key: `leaseq ${via} b${batchSize}${payloadSuffix(shape.payloadBytes)}`,
    system: via === "tcp" ? "leaseq" : "leaseq-upstash",
    ...shape,
    open: (queueName) => leaseqContender({ openStore, queueName, batchSize, consumers }),
  };
}

/** The naive ZPOPMIN design over `url`. */
export function naiveCase(url: string, shape: CaseShape): ThroughputCase {
  const { batchSize, consumers } = shape;
  return {
    key: `naive b${batchSize}${payloadSuffix(shape.payloadBytes)}`,
    system: "naive",
    ...shape,
    open: (queueName) => naiveContender({ url, queueName, batchSize, consumers }),
  };
}

/** A BullMQ Worker of `concurrency` on the server at `host`:`port` (one job per fetch). */
export function bullmqCase(server: { host: string; port: number }, concurrency: number): ThroughputCase {
  return {
    key: `bullmq c${concurrency}`,
    system: "bullmq",
    batchSize: 1,
    consumers: concurrency,
    open: (queueName) => bullmqContender({ host: server.host, port: server.port, queueName, concurrency }),
  };
}
