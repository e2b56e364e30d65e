// A local 3-master Redis Cluster for the cluster suite: three redis-server processes with
// --cluster-enabled on loopback ports, joined by `redis-cli --cluster create`.
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { type StartedRedis, startRedisServer } from "../../helpers/redis-server.js";

/** Why the cluster suite cannot run here, or undefined when it can. */
export function clusterUnavailable(): string | undefined {
  const cli = spawnSync("redis-cli", ["--cluster", "help"], { encoding: "utf8" });
  if (cli.error) return `redis-cli is not on PATH (${cli.error.message})`;
  if (!`${cli.stdout}${cli.stderr}`.includes("create")) return "this redis-cli has no --cluster create";
  return undefined;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A port p with p and its cluster bus port p + 10000 both free (so p ≤ 55535). */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await canListen(port)) && (await canListen(port + 10_000))) {
      taken.add(port);
      taken.add(port + 10_000);
      return port;
    }
  }
  throw new Error("no free pair of ports for a cluster node");
}

export interface LocalCluster {
  ports: number[];
  /** The port of the master serving `slot`. */
  ownerOf(slot: number): number;
  stop(): Promise<void>;
}

/** Starts three masters, creates the cluster, and waits until every node reports cluster_state:ok. */
export async function startCluster(): Promise<LocalCluster> {
  const dir = mkdtempSync(join(tmpdir(), "leaseq-cluster-"));
  const taken = new Set<number>();
  const servers: StartedRedis[] = [];
  const stop = async () => {
    for (const server of servers) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await clusterPort(taken);
      servers.push(
        await startRedisServer(
          ["--cluster-enabled", "yes", "--cluster-config-file", join(dir, `nodes-${port}.conf`), "--dir", dir],
          port,
        ),
      );
    }
    const ports = servers.map((server) => server.port);
    await promisify(execFile)("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((port) => `127.0.0.1:${port}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    const clients = ports.map((port) => new Redis(port, "127.0.0.1", { lazyConnect: false }));
    try {
      for (let i = 0; i < 100; i++) {
        const infos = await Promise.all(clients.map((client) => client.cluster("INFO") as Promise<string>));
        if (infos.every((info) => info.includes("cluster_state:ok"))) break;
        if (i === 99) throw new Error("the local cluster never reached cluster_state:ok");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const slots = (await clients[0].cluster("SLOTS")) as unknown as Array<[number, number, [string, number, string]]>;
      const ownerOf = (slot: number) => {
        const range = slots.find(([start, end]) => slot >= start && slot <= end);
        if (!range) throw new Error(`no node serves slot ${slot}`);
        return Number(range[2][1]);
      };
      return { ports, ownerOf, stop };
    } finally {
      for (const client of clients) client.disconnect();
    }
  } catch (error) {
    await stop();
    throw error;
  }
}
