import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startDashboard } from "../../cli/dashboard/server.js";
import { PAYLOAD_SHOWN_BYTES } from "../../cli/dashboard/task.js";
import { adapters, openQueue, redisUrl, uniqueQueueName } from "../helpers/stores.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Starts `leaseq dashboard ...args` from source; resolves once it printed its URL. */
async function startCli(args: string[]) {
  const child = spawn(process.execPath, ["--import", "tsx", "cli/bin.ts", "dashboard", "--port", "0", ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", REDIS_URL: redisUrl() },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const match = /^Dashboard (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{32})$/m.exec(stdout);
      if (match) resolve(match[1]);
    });
    child.once("close", (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  const stop = async () => {
    const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
    child.kill("SIGTERM");
    return exited;
  };
  return { url, stdout, stop };
}

describe("leaseq dashboard", () => {
  it("the CLI verb prints its URL with the token, answers a missing or wrong token with a 401 naming the verb, serves the queue, and stops on SIGTERM", {
    timeout: 30_000,
  }, async () => {
    const name = uniqueQueueName("dashcli");
    const { url, stdout, stop } = await startCli(["--queue", name, "--read-only", "--refresh", "2"]);
    expect(stdout).toContain(`queue "${name}" on Redis at redis://127.0.0.1:`);
    expect(stdout).toContain("read-only");
    const origin = new URL(url).origin;
    const without = await fetch(`${origin}/`);
    expect(without.status).toBe(401);
    expect(await without.text()).toBe("401 Unauthorized: open the URL with ?token= that `leaseq dashboard` printed\n");
    const wrong = await fetch(`${origin}/?token=wrong`);
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toBe(
      "401 Unauthorized: wrong token; open the URL with ?token= that `leaseq dashboard` printed\n",
    );
    const first = await fetch(url, { redirect: "manual" });
    expect(first.status).toBe(303);
    const cookie = (first.headers.get("set-cookie") ?? "").split(";")[0];
    const page = await fetch(`${origin}/q/${name}/`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const body = await page.text();
    expect(body).toContain('data-count="ready">0<');
    // --refresh: the overview reads its numbers again every 2 s.
    expect(body).toContain(`data-live-url="/q/${name}/live.json" data-refresh-ms="2000"`);
    expect(await stop()).toBe(0);
  });

  it("without --queue it serves every queue: / lists them, each under /q/<queue>/", { timeout: 30_000 }, async () => {
    const { queue, close } = await openQueue(adapters[0]);
    await queue.enqueue([{ id: "one", type: "job" }], { now: Date.now() });
    const { url, stdout, stop } = await startCli([]);
    try {
      expect(stdout).toMatch(/every leaseq queue on Redis at redis:\/\/127\.0\.0\.1:\d+ \(\d+ queues? now\)/);
      const origin = new URL(url).origin;
      const headers = { authorization: `Bearer ${new URL(url).searchParams.get("token")}` };
      const home = await fetch(`${origin}/?name=${queue.name}`, { headers });
      expect(home.status).toBe(200);
      const body = await home.text();
      expect(body).toContain(`data-queue-row="${queue.name}"`);
      expect(body).toContain(`href="/q/${queue.name}/"`);
      const page = await fetch(`${origin}/q/${queue.name}/`, { headers });
      expect(await page.text()).toContain('data-count="ready">1<');
    } finally {
      expect(await stop()).toBe(0);
      await close();
    }
  });

  it("a task page shows at most 64 KiB of the payload, with a note", async () => {
    const { queue, close } = await openQueue(adapters[0]);
    try {
      const big = { blob: "x".repeat(100_000) };
      await queue.enqueue([{ id: "big", type: "job", payload: big }], { now: Date.now() });
      const dashboard = await startDashboard({ queue, where: "test", port: 0, log: () => {} });
      try {
        const origin = new URL(dashboard.url).origin;
        const html = await (
          await fetch(`${origin}/q/${queue.name}/task/big`, { headers: { authorization: `Bearer ${dashboard.token}` } })
        ).text();
        expect(html).toContain(`Showing the first 64 KiB of ${JSON.stringify(big).length} bytes.`);
        const shown = (/<pre id="payload">([^<]*)<\/pre>/.exec(html)?.[1] ?? "").replaceAll("&quot;", '"');
        expect(shown.length).toBeGreaterThan(PAYLOAD_SHOWN_BYTES - 100);
        expect(shown.length).toBeLessThanOrEqual(PAYLOAD_SHOWN_BYTES);
      } finally {
        await dashboard.close();
      }
    } finally {
      await close();
    }
  });
});
