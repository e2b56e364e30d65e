// The task page (docs/dashboard.md, "Task"): its attempts, the result a DONE task kept, its
// progress, and edit-and-requeue of a FAILED task's payload (confirmed, CSRF-checked, refused when
// read-only, kept in its attempts). In real Chromium, against a real Redis.
import type { Page } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { amendNote } from "../../../cli/dashboard/amend.js";
import { type RunningDashboard, startDashboard } from "../../../cli/dashboard/server.js";
import { taskPage } from "../../../cli/dashboard/task.js";
import { Queue } from "../../../shared/queue.js";
import type { TaskInfo } from "../../../shared/types.js";
import { type Adapter, adapters, openQueue } from "../../helpers/stores.js";
import { clickAndWait, newPage } from "./browser.js";
import { browserPerFile } from "./browser-per-file.js";

const tcp = adapters.find((adapter) => adapter.name === "tcp") as Adapter;

const { browser, running } = browserPerFile();

/** The largest payload the test queues take (their config in Redis; the dashboard's Queue keeps the default). */
const MAX_PAYLOAD_BYTES = 2048;

/**
 * A fresh queue whose `job` tasks have 3 attempts, and a dashboard over it. The dashboard opens the
 * queue by name as `leaseq dashboard` does (default settings): the payload cap it meets is the one
 * the queue's scripts read from Redis.
 */
async function fixture(options: { readOnly?: boolean } = {}) {
  const opened = await openQueue(tcp, {
    policies: { job: { leaseMs: 30_000, maxAttempts: 3 } },
    maxPayloadBytes: MAX_PAYLOAD_BYTES,
  });
  running.push(opened.close);
  const dashboard = await startDashboard({
    queue: new Queue(opened.store, { name: opened.queue.name }),
    where: "test Redis",
    port: 0,
    readOnly: options.readOnly,
    log: () => {},
  });
  running.push(dashboard.close);
  const base = `${new URL(dashboard.url).origin}/q/${opened.queue.name}`;
  return { queue: opened.queue, dashboard, base };
}

const cookieOf = (dashboard: RunningDashboard) => `${dashboard.cookieName}=${dashboard.token}`;

/**
 * Enqueues `id` a minute apart from `start`, runs it three times: two retries with the first two
 * `errors`, then a failure with the third. It ends FAILED with three attempts.
 */
async function retriedTwiceThenFailed(queue: Queue, id: string, errors: string[], payload: unknown, start: number) {
  await queue.enqueue([{ id, type: "job", payload }], { now: start });
  for (let attempt = 0; attempt < 3; attempt++) {
    const at = start + attempt * 60_000;
    const [claimed] = await queue.claim({ count: 1, now: at + 1_000 });
    expect(claimed?.id).toBe(id);
    const error = errors[attempt];
    const [settled] = await queue.settle(
      [
        attempt < 2
          ? { ...claimed, outcome: "retry", retryAtMs: at + 30_000, error }
          : { ...claimed, outcome: "fail", error },
      ],
      { now: at + 5_000 },
    );
    expect(settled.status).toBe("ok");
  }
  expect((await queue.admin.inspect(id))?.state).toBe("failed");
}

/** What the attempts table shows, row by row. */
function attemptRows(page: Page) {
  return page.$$eval("table[data-attempts] tbody tr", (rows) =>
    rows.map((row) => ({
      outcome: row.getAttribute("data-outcome"),
      cells: [...row.querySelectorAll("td")].map((cell) => cell.textContent?.trim() ?? ""),
      fullError: row.querySelector("[data-error] pre")?.textContent ?? row.querySelector("[data-error]")?.textContent,
    })),
  );
}

/** The edit form's text (the DOM's types are not in this project's lib: the element is cast). */
function payloadText(page: Page): Promise<string> {
  return page.$eval("textarea[name=payload]", (el) => (el as unknown as { value: string }).value);
}

/** Replaces the edit form's text, as a paste would. */
async function setPayloadText(page: Page, text: string): Promise<void> {
  await page.$eval(
    "textarea[name=payload]",
    (el, value) => {
      (el as unknown as { value: string }).value = value;
    },
    text,
  );
}

/** A POST of the edit form as its page sends it (cookie, Origin, CSRF token), fields overridden by `fields`. */
function postEdit(dashboard: RunningDashboard, base: string, fields: Record<string, string>) {
  return fetch(`${base}/action`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookieOf(dashboard), origin: new URL(dashboard.url).origin },
    body: new URLSearchParams({ _csrf: dashboard.csrf, action: "amend", ...fields }),
  });
}

describe("the task page in real Chromium", { timeout: 60_000 }, () => {
  it("a task retried twice then failed shows its three attempts in order, with outcomes, times and errors", async () => {
    const { queue, dashboard, base } = await fixture();
    const stack = [
      "TypeError: Cannot read properties of undefined (reading 'address')",
      "    at sendEmail (/var/task/worker.js:41:17)",
      "    at handler (/var/task/worker.js:12:9)",
    ].join("\n");
    const errors = ["SMTP 421: service not available", stack, "PermanentError: no recipient"];
    await retriedTwiceThenFailed(queue, "mail-1", errors, { to: "a@example.com" }, Date.now() - 600_000);
    const { page, errors: pageErrors } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/task/mail-1`);
    const rows = await attemptRows(page);
    expect(rows.map((row) => row.outcome)).toEqual(["retried", "retried", "failed"]);
    expect(rows.map((row) => row.cells[0])).toEqual(["1", "2", "3"]);
    // Waited: claimed 1 s after the enqueue, then 31 s after each retry was due; ran 4 s each.
    expect(rows.map((row) => [row.cells[2], row.cells[3]])).toEqual([
      ["1.0 s", "4.0 s"],
      ["31.0 s", "4.0 s"],
      ["31.0 s", "4.0 s"],
    ]);
    expect(rows.map((row) => row.cells[4])).toEqual(["retried", "retried", "failed"]);
    // The started column: the claim's time, to the second (UTC), with its ISO time in the title.
    const started = await page.$$eval("table[data-attempts] tbody tr td:nth-child(2) time", (cells) =>
      cells.map((cell) => cell.getAttribute("datetime")),
    );
    const start = (await queue.admin.inspect("mail-1"))?.history.map((attempt) => attempt.startedAtMs) ?? [];
    expect(started).toEqual(start.map((ms) => new Date(ms ?? 0).toISOString()));
    // A short error as it is; a multi-line one folded to its first line, all of it in a <pre>.
    expect(rows.map((row) => row.fullError)).toEqual(errors);
    expect(await page.$eval("tr[data-attempt='1'] summary", (el) => el.textContent)).toBe(
      "TypeError: Cannot read properties of undefined (reading 'address') …",
    );
    // Its <pre> is drawn only once opened.
    const drawn = () =>
      page.$eval("tr[data-attempt='1'] pre", (el) =>
        (el as unknown as { checkVisibility(): boolean }).checkVisibility(),
      );
    expect(await drawn(), "folded").toBe(false);
    await page.click("tr[data-attempt='1'] summary");
    expect(await drawn(), "unfolded").toBe(true);
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it("a DONE task with a kept result shows it pretty-printed, with the progress its handler reported", async () => {
    const { queue, dashboard, base } = await fixture();
    const now = Date.now();
    await queue.enqueue([{ id: "report-7", type: "job", payload: { report: 7 } }], { now: now - 10_000 });
    const [claimed] = await queue.claim({ count: 1, now: now - 9_000 });
    await queue.extend([{ ...claimed, leaseMs: 30_000, progress: { pages: 3, of: 12 } }], { now: now - 5_000 });
    const { page } = await newPage(browser());
    await page.goto(dashboard.url);
    // While it runs: its attempt is running, its progress shown, no result.
    await page.goto(`${base}/task/report-7`);
    const [running] = await attemptRows(page);
    expect(running.outcome).toBe("running");
    expect(running.cells[3]).toMatch(/^\d+\.\d s so far$/);
    expect(JSON.parse(await page.$eval("#progress", (el) => el.textContent ?? ""))).toEqual({ pages: 3, of: 12 });
    // The result's section is drawn hidden (the live page shows it once the task is DONE).
    expect(await page.$$eval("#result", (found) => found.filter((el) => el.getClientRects().length > 0).length)).toBe(
      0,
    );
    const result = { url: "s3://reports/7.pdf", pages: 12, sizes: [1, 2, 3] };
    const [acked] = await queue.settle([{ ...claimed, outcome: "ack", result }], { now: now - 1_000 });
    expect(acked.state).toBe("done");
    await page.goto(`${base}/task/report-7`);
    expect(await page.$eval("[data-field=state]", (el) => el.textContent)).toBe("done");
    const shown = await page.$eval("#result", (el) => el.textContent ?? "");
    expect(shown).toBe(JSON.stringify(result, null, 2));
    expect((await attemptRows(page)).map((row) => [row.outcome, row.cells[3]])).toEqual([["done", "8.0 s"]]);
    // No edit offered but for a FAILED task.
    expect(await page.$$eval("[data-edit], button[value=amend]", (found) => found.length)).toBe(0);
    await page.close();
  });

  it("edit and requeue through the page, confirmed: the payload changes, the task goes READY, its page shows the edit", async () => {
    const { queue, dashboard, base } = await fixture();
    const old = { to: "a@exmaple.com", template: "invoice" };
    await retriedTwiceThenFailed(queue, "mail-2", ["e1", "e2", "bounced: no such domain"], old, Date.now() - 600_000);
    const { page, dialogs, errors } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/task/mail-2`);
    // The form holds the current payload, pretty-printed.
    expect(await payloadText(page)).toBe(JSON.stringify(old, null, 2));
    await page.click("details[data-edit] summary");
    const edited = { to: "a@example.com", template: "invoice", note: "domain fixed by hand" };
    await setPayloadText(page, "");
    await page.type("textarea[name=payload]", JSON.stringify(edited, null, 1));
    await clickAndWait(page, "button[value=amend]");
    expect(dialogs).toEqual(["confirm: Replace the payload of task mail-2 and requeue it?"]);
    // Back on the task's page: READY, the new payload, and the edit as its newest attempt entry.
    expect(new URL(page.url()).pathname).toBe(`/q/${queue.name}/task/mail-2`);
    expect(await page.$eval("[data-field=state]", (el) => el.textContent)).toBe("ready");
    expect(JSON.parse(await page.$eval("#payload", (el) => el.textContent ?? ""))).toEqual(edited);
    const rows = await attemptRows(page);
    expect(rows.map((row) => row.outcome)).toEqual(["retried", "retried", "failed", "edited"]);
    const note = amendNote(JSON.stringify(old).length, JSON.stringify(edited).length);
    expect(rows[3].fullError).toBe(note);
    expect(await queue.admin.inspect("mail-2")).toMatchObject({
      state: "ready",
      attempts: 0,
      payload: JSON.stringify(edited),
    });
    expect(await page.$$eval("[data-edit]", (found) => found.length), "a READY task is not editable").toBe(0);
    // Its next run gets the new payload.
    const [claimed] = await queue.claim({ count: 1, now: Date.now() });
    expect(JSON.parse(claimed.payload)).toEqual(edited);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("text that is not JSON, or over the queue's payload cap, shows again with the reason; nothing changes", async () => {
    const { queue, dashboard, base } = await fixture();
    const old = { n: 1 };
    await retriedTwiceThenFailed(queue, "job-3", ["a", "b", "c"], old, Date.now() - 600_000);
    const { page, dialogs } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/task/job-3`);
    await page.click("details[data-edit] summary");
    const big = JSON.stringify({ blob: "x".repeat(MAX_PAYLOAD_BYTES) });
    const attempts: Array<[string, RegExp]> = [
      ['{"n": 2,', /^Not saved: the payload is not JSON \(.+\)\. Nothing changed\.$/],
      [big, new RegExp(`payload is ${big.length} bytes; the cap is ${MAX_PAYLOAD_BYTES}`)],
    ];
    for (const [sent, reason] of attempts) {
      await setPayloadText(page, sent);
      const [response] = await Promise.all([page.waitForNavigation(), page.click("button[value=amend]")]);
      expect(response?.status()).toBe(400);
      expect(await page.$eval("[data-edit-error]", (el) => el.textContent)).toMatch(reason);
      // The form is open again with the text sent, ready to be fixed.
      expect(await page.$eval("details[data-edit]", (el) => el.hasAttribute("open"))).toBe(true);
      expect(await payloadText(page)).toBe(sent);
      expect(await queue.admin.inspect("job-3")).toMatchObject({ state: "failed", payload: JSON.stringify(old) });
    }
    expect(dialogs).toHaveLength(2);
    // Fixed, it goes through from the page the refusal drew.
    await setPayloadText(page, '{"n": 2}');
    await clickAndWait(page, "button[value=amend]");
    expect(await queue.admin.inspect("job-3")).toMatchObject({ state: "ready", payload: '{"n":2}' });
    await page.close();
  });

  it("hostile errors, results and progress render as text: no script runs, no handler fires", async () => {
    const { queue, dashboard, base } = await fixture();
    const hostile = `<script>window.__xss='script'</script><img src=x onerror="window.__xss='img'">"'&`;
    const now = Date.now() - 600_000;
    await retriedTwiceThenFailed(queue, "evil-1", [hostile, `${hostile}\n${hostile}`, hostile], { hostile }, now);
    const later = now + 300_000;
    await queue.enqueue([{ id: "evil-2", type: "job" }], { now: later });
    const [claimed] = await queue.claim({ count: 1, now: later });
    await queue.extend([{ ...claimed, leaseMs: 30_000, progress: hostile }], { now: later + 1 });
    await queue.settle([{ ...claimed, outcome: "ack", result: { hostile, "</pre><script>x</script>": 1 } }], {
      now: later + 2,
    });
    const { page, dialogs } = await newPage(browser());
    await page.goto(dashboard.url);
    for (const id of ["evil-1", "evil-2"]) {
      await page.goto(`${base}/task/${id}`, { waitUntil: "load" });
      await new Promise((resolve) => setTimeout(resolve, 200)); // room for an image error handler
      expect(await page.evaluate(() => (globalThis as unknown as { __xss?: string }).__xss)).toBeUndefined();
      expect(await page.$$eval("main img, main script", (found) => found.length)).toBe(0);
    }
    expect(dialogs).toEqual([]);
    await page.goto(`${base}/task/evil-1`);
    expect((await attemptRows(page)).map((row) => row.fullError)).toEqual([hostile, `${hostile}\n${hostile}`, hostile]);
    expect(JSON.parse(await payloadText(page))).toEqual({ hostile });
    await page.goto(`${base}/task/evil-2`);
    expect(JSON.parse(await page.$eval("#result", (el) => el.textContent ?? ""))).toEqual({
      hostile,
      "</pre><script>x</script>": 1,
    });
    expect(JSON.parse(await page.$eval("#progress", (el) => el.textContent ?? ""))).toBe(hostile);
    // Escaped by the template, not only stopped by the CSP:
    const raw = await (await fetch(`${base}/task/evil-1`, { headers: { cookie: cookieOf(dashboard) } })).text();
    expect(raw).not.toContain("<script>window.__xss");
    expect(raw).toContain("&lt;script&gt;window.__xss");
    await page.close();
  });

  it("read-only: no edit form, and an edit POST is refused with 403, the task left FAILED with its payload", async () => {
    const { queue, dashboard, base } = await fixture({ readOnly: true });
    await retriedTwiceThenFailed(queue, "ro-1", ["a", "b", "c"], { n: 1 }, Date.now() - 600_000);
    const { page } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/task/ro-1`);
    expect(await page.$$eval("[data-edit], textarea, form[method=post]", (found) => found.length)).toBe(0);
    expect((await attemptRows(page)).map((row) => row.outcome)).toEqual(["retried", "retried", "failed"]);
    await page.close();
    const response = await postEdit(dashboard, base, { id: "ro-1", payload: '{"n":2}' });
    expect(response.status).toBe(403);
    expect(await queue.admin.inspect("ro-1")).toMatchObject({ state: "failed", payload: '{"n":1}' });
  });
});

describe("edit and requeue without a browser", () => {
  it("is refused with 403 without the CSRF token or with a wrong one; nothing changes", async () => {
    const { queue, dashboard, base } = await fixture();
    await retriedTwiceThenFailed(queue, "c-1", ["a", "b", "c"], { n: 1 }, Date.now() - 600_000);
    const without = await fetch(`${base}/action`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: cookieOf(dashboard), origin: new URL(dashboard.url).origin },
      body: new URLSearchParams({ action: "amend", id: "c-1", payload: '{"n":2}' }),
    });
    expect(without.status).toBe(403);
    expect((await postEdit(dashboard, base, { id: "c-1", payload: '{"n":2}', _csrf: "forged" })).status).toBe(403);
    expect(await queue.admin.inspect("c-1")).toMatchObject({
      state: "failed",
      payload: '{"n":1}',
      history: [{ outcome: "retried" }, { outcome: "retried" }, { outcome: "failed" }],
    });
    // The same POST with the token goes through: the refusals were the token's.
    const accepted = await postEdit(dashboard, base, { id: "c-1", payload: '{"n":2}' });
    expect(accepted.status).toBe(303);
    expect(accepted.headers.get("location")).toBe(`/q/${queue.name}/task/c-1`);
    expect(await queue.admin.inspect("c-1")).toMatchObject({ state: "ready", payload: '{"n":2}' });
  });

  it("a task that failed again since its page was drawn is refused with 409, one not FAILED with the library's not_failed", async () => {
    const { queue, dashboard, base } = await fixture();
    await retriedTwiceThenFailed(queue, "s-1", ["a", "b", "c"], { n: 1 }, Date.now() - 600_000);
    const drawnAt = String((await queue.admin.inspect("s-1"))?.finishedAt);
    // Another operator requeues it, and it fails again, before this page's edit is sent.
    await queue.admin.requeue(["s-1"], { now: Date.now() });
    const [claimed] = await queue.claim({ count: 1, now: Date.now() + 1 });
    await queue.settle([{ ...claimed, outcome: "fail", error: "again" }], { now: Date.now() + 2 });
    const stale = await postEdit(dashboard, base, { id: "s-1", payload: '{"n":2}', failedAt: drawnAt });
    expect(stale.status).toBe(409);
    expect(await stale.text()).toContain("failed again since this page was drawn");
    expect(await queue.admin.inspect("s-1")).toMatchObject({ state: "failed", payload: '{"n":1}' });

    await queue.enqueue([{ id: "r-1", type: "job", payload: { n: 1 } }], { now: Date.now() });
    const notFailed = await postEdit(dashboard, base, { id: "r-1", payload: '{"n":2}' });
    expect(notFailed.status).toBe(409);
    expect(await notFailed.text()).toContain('<b data-status="not_failed">1</b> not_failed');
    expect(await queue.admin.inspect("r-1")).toMatchObject({ state: "ready", payload: '{"n":1}' });

    const unknown = await postEdit(dashboard, base, { id: "nobody", payload: "{}" });
    expect(unknown.status).toBe(404);
  });

  it("shows a task's trace id once its record carries a W3C traceparent, and no row before", async () => {
    const { queue, dashboard, base } = await fixture();
    await queue.enqueue([{ id: "t-1", type: "job" }], { now: Date.now() });
    const task = await queue.admin.inspect("t-1");
    if (!task) throw new Error("t-1 was not enqueued");
    const ctx = {
      where: "test",
      readOnly: false,
      csrf: "x",
      allQueues: false,
      refreshMs: 0,
      queueName: queue.name,
      base,
    };
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const traced = String(await taskPage(ctx, { ...task, traceparent } as TaskInfo, Date.now()));
    expect(traced).toContain(
      '<dd data-field="traceId" title="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"><code>4bf92f3577b34da6a3ce929d0e0e4736</code></dd>',
    );
    const page = await (await fetch(`${base}/task/t-1`, { headers: { cookie: cookieOf(dashboard) } })).text();
    expect(page).toContain('data-field="id"');
    expect(page).not.toContain("trace id");
  });
});
