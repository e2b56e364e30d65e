// Re-makes docs/dashboard-overview.png (the overview of every queue) and docs/dashboard-task.png:
// fills three fresh queues with an hour of history and some live tasks, in a logical database of
// the local Redis that holds no leaseq queue (REDIS_URL, default redis://127.0.0.1:6379; database
// SCREENSHOTS_DB, default 15), serves the all-queues dashboard over it, photographs two pages in
// headless Chromium, then drops the three queues.
//   node --import tsx bin/screenshots.ts
import { startDashboard } from "../cli/dashboard/server.js";
import { Queue } from "../shared/queue.js";
import { listQueues } from "../shared/queue-admin.js";
import { TcpStore } from "../shared/stores/tcp.js";
import { launchBrowser } from "./browser.js";

const url = new URL(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
url.pathname = `/${process.env.SCREENSHOTS_DB ?? "15"}`;
const store = TcpStore.fromUrl(url.toString());
const already = await listQueues(store);
if (already.length > 0) {
  await store.close();
  throw new Error(
    `database ${url.pathname.slice(1)} of ${url.host} holds leaseq queues (${already.join(", ")}): set SCREENSHOTS_DB to an empty one`,
  );
}
const emails = new Queue(store, { name: "emails" });
const reports = new Queue(store, { name: "reports" });
const webhooks = new Queue(store, { name: "webhooks.v2" });
const queues = [emails, reports, webhooks];
for (const queue of queues) await queue.configure();

const ERRORS = [
  "SMTP 421: service not available (mx1.example.com)",
  "timeout after 30000 ms calling https://api.example.com/render",
  "PermanentError: no recipient",
];

/** An hour of work, minute by minute: each minute's tasks enqueued, claimed and settled then. */
async function fillHour(
  queue: Queue,
  options: { now: number; base: number; swing: number; failEvery: number; types: string[]; quietFrom?: number },
) {
  for (let minute = 59; minute >= 1; minute--) {
    // A paused queue: nothing done since it was paused.
    if (options.quietFrom !== undefined && minute < options.quietFrom) continue;
    const at = options.now - minute * 60_000;
    const count = options.base + Math.round(options.swing * Math.sin(minute / 7) ** 2) + (minute % 5);
    const tasks = Array.from({ length: count }, (_, i) => ({
      id: `m${minute}-${i}`,
      type: options.types[i % options.types.length],
      payload: { n: i },
    }));
    await queue.enqueue(tasks, { now: at });
    const claimed = await queue.claim({ count, now: at });
    await queue.settle(
      claimed.map(({ id, token }, i) =>
        (i + minute) % options.failEvery === 0
          ? { id, token, outcome: "fail" as const, error: ERRORS[(i + minute) % ERRORS.length] }
          : { id, token, outcome: "ack" as const },
      ),
      { now: at + 20_000 },
    );
  }
}

try {
  const now = Date.now();
  await fillHour(emails, { now, base: 8, swing: 6, failEvery: 9, types: ["send-email", "send-email", "render-pdf"] });
  await fillHour(reports, { now, base: 3, swing: 3, failEvery: 4, types: ["render-pdf"], quietFrom: 18 });
  await fillHour(webhooks, { now, base: 1, swing: 4, failEvery: 13, types: ["partner-acme", "partner-globex"] });

  // emails: one lease already past its deadline, ready tasks, scheduled ones, a failed task.
  await emails.enqueue([{ id: "report-2291", type: "render-pdf", payload: { report: 2291 } }], { now: now - 300_000 });
  await emails.claim({ count: 1, now: now - 300_000, maxLeaseMs: 60_000 });
  await emails.enqueue(
    Array.from({ length: 42 }, (_, i) => ({
      id: `email-${4100 + i}`,
      type: "send-email",
      payload: { to: `customer${i}@example.com`, template: "invoice" },
      priority: i % 4 === 0 ? -1 : 0,
    })),
    { now: now - 95_000 },
  );
  await emails.enqueue(
    Array.from({ length: 7 }, (_, i) => ({ id: `digest-${i}`, type: "send-email", delayMs: 3_600_000 * (i + 1) })),
    { now },
  );
  const failedId = "email-3817";
  await emails.enqueue(
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
  const [failing] = await emails.claim({ count: 1, now: now - 30_000 });
  await emails.settle([{ id: failing.id, token: failing.token, outcome: "fail", error: ERRORS[0] }], {
    now: now - 25_000,
  });
  // reports: paused 17 minutes ago, with work waiting.
  await reports.admin.pause({ now: now - 17 * 60_000 });
  await reports.enqueue(
    Array.from({ length: 23 }, (_, i) => ({ id: `report-${3000 + i}`, type: "render-pdf" })),
    { now: now - 16 * 60_000 },
  );
  // webhooks.v2: one partner's type paused, its deliveries waiting.
  await webhooks.admin.pause({ now: now - 6 * 60_000, type: "partner-acme" });
  await webhooks.enqueue(
    Array.from({ length: 9 }, (_, i) => ({ id: `hook-${700 + i}`, type: "partner-acme" })),
    { now: now - 5 * 60_000 },
  );
  await webhooks.enqueue(
    Array.from({ length: 3 }, (_, i) => ({ id: `retry-${i}`, type: "partner-globex", delayMs: 120_000 * (i + 1) })),
    { now },
  );

  const dashboard = await startDashboard({ store, where: "Redis at redis://127.0.0.1:6379", port: 0 });
  const { browser, close: closeBrowser } = await launchBrowser();

  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 560, deviceScaleFactor: 1 });
    await page.goto(dashboard.url, { waitUntil: "load" });
    await page.waitForFunction(
      `document.querySelectorAll("[data-spark][data-drawn=true] canvas").length === ${queues.length}`,
    );
    await page.screenshot({ path: "docs/dashboard-overview.png", fullPage: true });
    await page.setViewport({ width: 1200, height: 800, deviceScaleFactor: 1 });
    await page.goto(`${new URL(dashboard.url).origin}/q/emails/task/${failedId}`, { waitUntil: "load" });
    await page.screenshot({ path: "docs/dashboard-task.png", fullPage: true });
    console.log("wrote docs/dashboard-overview.png and docs/dashboard-task.png");
  } finally {
    await closeBrowser();
    await dashboard.close();
  }
} finally {
  for (const queue of queues) await queue.admin.drop({ confirm: queue.name });
  await store.close();
}
