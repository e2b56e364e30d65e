import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import type { Store } from "../shared/store.js";
import { UpstashStore } from "../shared/stores/upstash.js";

/**
 * The local Upstash-compatible endpoint (dev/standins/upstash) in front of the benchmark's
 * redis-server, in a process of its own: Upstash does not run inside the worker, so its HTTP and
 * JSON work must not eat the consumers' event loop. The consumers use the real UpstashStore.
 */
export interface LocalUpstash {
  url: string;
  token: string;
  openStore(): Store;
  close(): Promise<void>;
}

export async function startLocalUpstash(
  root: string,
  redisUrl: string,
): Promise<LocalUpstash | { unavailable: string }> {
  const endpoint = pathToFileURL(resolve(root, "dev/standins/upstash/index.ts")).href;
  const script = [
    `const { startUpstashEndpoint } = await import(${JSON.stringify(endpoint)});`,
    `const endpoint = await startUpstashEndpoint({ redisUrl: ${JSON.stringify(redisUrl)} });`,
    "console.log(JSON.stringify({ url: endpoint.url, token: endpoint.token }));",
    "process.on('SIGTERM', async () => { await endpoint.close(); process.exit(0); });",
  ].join("\n");
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (data) => {
    stderr += String(data);
  });
  const line = await firstLine(child);
  if (line === undefined) {
    child.kill("SIGKILL");
    return { unavailable: `the local Upstash endpoint did not start: ${stderr.split("\n")[0] || "no output"}` };
  }
  const { url, token } = JSON.parse(line) as { url: string; token: string };
  return {
    url,
    token,
    openStore: () => new UpstashStore({ url, token }),
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

function firstLine(child: ChildProcess, timeoutMs = 20_000): Promise<string | undefined> {
  return new Promise((done) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const timer = setTimeout(() => done(undefined), timeoutMs);
    lines.once("line", (line) => {
      clearTimeout(timer);
      done(line);
    });
    child.once("exit", () => {
      clearTimeout(timer);
      done(undefined);
    });
  });
}
