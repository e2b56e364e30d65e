// Re-makes docs/dashboard-overview.png (the overview of every queue), docs/dashboard-task.png (a
// task retried twice, then failed: its attempts) and docs/dashboard-groups.png (a queue's groups:
// parked behind a long task, held behind a FAILED one): fills four fresh queues with an hour of
// history and some live tasks, in a logical database of the local Redis that holds no leaseq queue
// (REDIS_URL, default redis://127.0.0.1:6379; database SCREENSHOTS_DB, default 15), serves the
// all-queues dashboard over it, photographs three pages in headless Chromium, then drops the four
// queues (whatever happened).
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
// A customer's contacts sync one at a time; a customer's CSV imports run in order, and one that
// fails holds the customer's next ones until an operator requeues or skips it.
const imports = new Queue(store, {
  name: "imports",
  settings: {
    policies: { "sync-contacts": { leaseMs: 3_600_000, maxAttempts: 3 } },
    typeGroups: { "sync-contacts": { concurrency: 1 }, "import-csv": { ordered: true, onFailure: "hold" } },
  },
});
const queues = [emails, reports, webhooks, imports];
for (const queue of queues) await queue.configure();

const ERRORS = [
  "SMTP 421: service not available (mx1.example.com)",
  "timeout after 30000 ms calling https://api.example.com/render",
  "PermanentError: no recipient",
];

/**
 * Task `id` of `emails`, enqueued at `start`: its first two attempts retried (an SMTP refusal, then
 * a connection timeout with its stack), its third failed for good.
 */
async function retriedTwiceThenFailed(id: string, start: number) {
  await emails.enqueue(
    [
      {
        id,
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
    { now: start },
  );
  const errors = [
    ERRORS[0],
    "Error: connect ETIMEDOUT 203.0.113.25:587\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16)\n    at sendMail (/var/task/worker.js:88:11)",
    "PermanentError: 550 5.1.1 <ops@example.com>: recipient address rejected",
  ];
  for (let attempt = 0; attempt < 3; attempt++) {
    const at = start + attempt * 120_000;
    const [claimed] = await emails.claim({ count: 1, now: at + 2_000 });
    if (claimed?.id !== id) throw new Error(`expected to claim ${id}, claimed ${claimed?.id}`);
    const ran = 1_500 + attempt * 9_000;
    await emails.settle(
      [
        attempt < 2
          ? { ...claimed, outcome: "retry", retryAtMs: at + 60_000, error: errors[attempt] }
          : { ...claimed, outcome: "fail", error: errors[attempt] },
      ],
      { now: at + 2_000 + ran },
    );
  }
}

/**
 * The groups of `imports`: acme's contacts sync parked behind a task running for 25 minutes,
 * globex's behind a newer one, initech's running alone; umbrella's CSV imports held behind a FAILED
 * one, hooli's waiting their turn.
 */
async function fillGroups(now: number) {
  const minutes = (n: number) => now - n * 60_000;
  const sync = (group: string, count: number) =>
    Array.from({ length: count }, (_, i) => ({ id: `sync-${group}-${i}`, type: "sync-contacts", group }));
  const csv = (group: string, first: number, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      id: `csv-${group}-${first + i}`,
      type: "import-csv",
      group,
      payload: { file: `s3://imports/${group}/${first + i}.csv` },
    }));
  await imports.enqueue(sync("acme", 7), { now: minutes(26) });
  await imports.claim({ count: 1, now: minutes(25) });
  await imports.enqueue(csv("umbrella", 41, 5), { now: minutes(12) });
  const [failing] = await imports.claim({ count: 1, now: minutes(11) });
  await imports.settle([{ ...failing, outcome: "fail", error: "CSV line 1823: column 'email' is missing" }], {
    now: minutes(10),
  });
  await imports.enqueue(sync("globex", 4), { now: minutes(3) });
  await imports.claim({ count: 1, now: minutes(2) });
  await imports.enqueue(sync("initech", 1), { now: minutes(1) });
  await imports.claim({ count: 1, now: minutes(1) });
  await imports.enqueue(csv("hooli", 7, 2), { now: now - 20_000 });
}

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
  await fillHour(imports, { now, base: 2, swing: 2, failEvery: 11, types: ["index-catalog"] });
  await fillGroups(now);
  const failedId = "email-3817";
  await retriedTwiceThenFailed(failedId, now - 15 * 60_000);

  // emails: one lease already past its deadline, ready tasks, scheduled ones.
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
    // The second attempt's error (a stack) unfolded.
    await page.click("tr[data-attempt='1'] summary");
    await page.screenshot({ path: "docs/dashboard-task.png", fullPage: true });
    await page.setViewport({ width: 1200, height: 480, deviceScaleFactor: 1 });
    await page.goto(`${new URL(dashboard.url).origin}/q/imports/groups`, { waitUntil: "load" });
    await page.screenshot({ path: "docs/dashboard-groups.png", fullPage: true });
    console.log("wrote docs/dashboard-overview.png, docs/dashboard-task.png and docs/dashboard-groups.png");
  } finally {
    await closeBrowser();
    await dashboard.close();
  }
} finally {
  for (const queue of queues) await queue.admin.drop({ confirm: queue.name });
  await store.close();
}
