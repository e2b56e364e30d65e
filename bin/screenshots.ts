// Re-makes docs/dashboard-overview.png and docs/dashboard-task.png: fills a fresh queue on the local
// Redis (REDIS_URL, default redis://127.0.0.1:6379) with an hour of history and some live tasks,
// serves the dashboard over it, photographs two pages in headless Chromium, then deletes the queue.
//   node --import tsx bin/screenshots.ts
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer from "puppeteer-core";
import { startDashboard } from "../local/dashboard/server.js";
import { Queue } from "../shared/queue.js";
import { TcpStore } from "../shared/stores/tcp.js";

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const store = TcpStore.fromUrl(url);
const name = `screenshots-${Math.random().toString(36).slice(2, 8)}`;
const queue = new Queue(store, { name });
await queue.configure();
const userDataDir = mkdtempSync(join(tmpdir(), "leaseq-screenshots-"));

const ERRORS = [
  "SMTP 421: service not available (mx1.example.com)",
  "timeout after 30000 ms calling https://api.example.com/render",
  "PermanentError: no recipient",
];

try {
  const now = Date.now();
  // An hour of work, minute by minute: each minute's tasks are enqueued, claimed and settled then.
  for (let minute = 59; minute >= 1; minute--) {
    const at = now - minute * 60_000;
    const count = 8 + Math.round(6 * Math.sin(minute / 7) ** 2) + (minute % 5);
    const tasks = Array.from({ length: count }, (_, i) => ({
      id: `m${minute}-${i}`,
      type: i % 3 === 0 ? "render-pdf" : "send-email",
      payload: { to: `user${i}@example.com`, template: "welcome" },
    }));
    await queue.enqueue(tasks, { now: at });
    const claimed = await queue.claim({ count, now: at });
    await queue.settle(
      claimed.map(({ id, token }, i) =>
        (i + minute) % 9 === 0
          ? { id, token, outcome: "fail" as const, error: ERRORS[(i + minute) % ERRORS.length] }
          : { id, token, outcome: "ack" as const },
      ),
      { now: at + 20_000 },
    );
  }
  // Work in flight: one lease already past its deadline, ready tasks, scheduled ones.
  await queue.enqueue([{ id: "report-2291", type: "render-pdf", payload: { report: 2291 } }], { now: now - 300_000 });
  await queue.claim({ count: 1, now: now - 300_000, maxLeaseMs: 60_000 });
  await queue.enqueue(
    Array.from({ length: 42 }, (_, i) => ({
      id: `email-${4100 + i}`,
      type: "send-email",
      payload: { to: `customer${i}@example.com`, template: "invoice" },
      priority: i % 4 === 0 ? -1 : 0,
    })),
    { now: now - 95_000 },
  );
  await queue.enqueue(
    Array.from({ length: 7 }, (_, i) => ({ id: `digest-${i}`, type: "send-email", delayMs: 3_600_000 * (i + 1) })),
    { now },
  );
  const failedId = "email-3817";
  await queue.enqueue(
    [
      {
        id: failedId,
        type: "send-email",
        payload: {
          to: "ops@example.com",
          template: "weekly-report",
          attachments: [{ name: "report.pdf", bytes: 48213 }],
          locale: "en-GB",
        },
        priority: -2,
      },
    ],
    { now: now - 40_000 },
  );
  const [failing] = await queue.claim({ count: 1, now: now - 30_000 });
  await queue.settle([{ id: failing.id, token: failing.token, outcome: "fail", error: ERRORS[0] }], {
    now: now - 25_000,
  });

  const dashboard = await startDashboard({ queue, where: "Redis at redis://127.0.0.1:6379", port: 0 });
  const browser = await puppeteer.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    userDataDir,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 800, deviceScaleFactor: 1 });
    await page.goto(dashboard.url, { waitUntil: "load" });
    await page.waitForSelector("#history-chart[data-drawn=true] canvas");
    await page.screenshot({ path: "docs/dashboard-overview.png", fullPage: true });
    await page.goto(`${new URL(dashboard.url).origin}/task/${failedId}`, { waitUntil: "load" });
    await page.screenshot({ path: "docs/dashboard-task.png", fullPage: true });
    console.log("wrote docs/dashboard-overview.png and docs/dashboard-task.png");
  } finally {
    await browser.close();
    await dashboard.close();
  }
} finally {
  await queue.drop({ confirm: name });
  await store.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
