import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** True when a Redis server answers PING at host:port within `timeoutMs`. */
export function pingRedis(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("error", () => done(false));
    socket.connect(port, host, () => socket.write("PING\r\n"));
    socket.once("data", (data) => done(data.toString().startsWith("+PONG")));
  });
}

/** A TCP port on 127.0.0.1 that nothing listened on a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export interface StartedRedis {
  url: string;
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `redis-server` from PATH on a free loopback port, no persistence, in a temp dir that
 * `stop()` removes. `detached` puts it in its own process group (see the spawn call); `env` (its
 * PATH) is where redis-server is looked up. Rejects with the spawn error (code ENOENT when PATH has no redis-server).
 */
export async function startRedisServer(
  extraArgs: string[] = [],
  port?: number,
  options: { detached?: boolean; env?: NodeJS.ProcessEnv } = {},
): Promise<StartedRedis> {
  const chosen = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), "leaseq-redis-"));
  const child = spawn(
    "redis-server",
    ["--port", String(chosen), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extraArgs],
    // detached: its own process group, so a terminal's Ctrl-C reaches only the parent, which
    // then stops it last, after the workers have released their tasks.
    { stdio: "ignore", detached: options.detached ?? false, env: options.env ?? process.env },
  );
  const spawnError = new Promise<never>((_, reject) => child.once("error", reject));
  // Nothing else cleans the temp dir when the server never comes up.
  spawnError.catch(() => rmSync(dir, { recursive: true, force: true }));
  for (let i = 0; i < 100; i++) {
    if (await Promise.race([pingRedis("127.0.0.1", chosen, 200), spawnError])) {
      return {
        url: `redis://127.0.0.1:${chosen}`,
        port: chosen,
        process: child,
        stop: async () => {
          if (child.exitCode === null) {
            const exited = new Promise((resolve) => child.once("exit", resolve));
            child.kill("SIGTERM");
            await exited;
          }
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`redis-server did not answer on 127.0.0.1:${chosen}`);
}
