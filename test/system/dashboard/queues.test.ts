// The dashboard over every queue of a store (`leaseq dashboard` without --queue), and the
// isolation of a one-queue dashboard (`--queue q`, npm start) from the other queues.
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import type { Page } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { queueOfSegment, queueSegment } from "../../../cli/dashboard/queue.js";
import { type RunningDashboard, startDashboard } from "../../../cli/dashboard/server.js";
import type { Queue } from "../../../shared/queue.js";
import { type Adapter, adapters, failTasks, openQueue, uniqueQueueName } from "../../helpers/stores.js";
import { clickAndWait, newPage } from "./browser.js";
import { browserPerFile } from "./browser-per-file.js";

const tcp = adapters.find((adapter) => adapter.name === "tcp") as Adapter;

const { browser, running } = browserPerFile();

/** A fresh, configured queue named `name` on the real Redis (deleted after the file by the cleanup setup). */
async function freshQueue(name: string): Promise<{ queue: Queue; store: Awaited<ReturnType<Adapter["open"]>> }> {
  const opened = await openQueue(tcp, { name });
  running.push(opened.close);
  return { queue: opened.queue, store: opened.store };
}

const cookieOf = (dashboard: RunningDashboard) => `${dashboard.cookieName}=${dashboard.token}`;

/** The counts of a row of the all-queues overview, or of a queue's overview (no row). */
function countsOf(page: Page, scope: string) {
  return page.$$eval(`${scope} [data-count]`, (cells) =>
    Object.fromEntries(cells.map((cell) => [cell.getAttribute("data-count"), Number(cell.textContent)])),
  );
}

/** GET `path` with the dashboard's cookie: status and body, redirects not followed. */
async function get(dashboard: RunningDashboard, path: string) {
  const response = await fetch(`${new URL(dashboard.url).origin}${path}`, {
    redirect: "manual",
    headers: { cookie: cookieOf(dashboard) },
  });
  return { status: response.status, body: await response.text(), location: response.headers.get("location") };
}

/** A raw GET of `path` as sent (no URL normalisation by a client), with the dashboard's cookie. */
function rawGet(dashboard: RunningDashboard, path: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: dashboard.port, path, headers: { cookie: cookieOf(dashboard) } },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("dashboard of every queue, in real Chromium", { timeout: 60_000 }, () => {
  it("lists each queue with its counts and pausing, and a queue's link leads to its lists and actions", async () => {
    // A tag of this test's queues, to find them among whatever else the shared Redis holds.
    const tag = `ov${randomBytes(3).toString("hex")}`;
    // Valid names, hostile-looking: dots, dashes and underscores.
    const { queue: emails, store } = await freshQueue(uniqueQueueName(`${tag}.b-c_d`));
    const { queue: reports } = await freshQueue(uniqueQueueName(`${tag}_reports`));
    const now = Date.now();
    await failTasks(emails, ["e-f1", "e-f2"], { error: "SMTP 421" });
    await emails.enqueue(
      ["e-r1", "e-r2", "e-r3"].map((id) => ({ id, type: "send" })),
      { now },
    );
    await emails.enqueue([{ id: "e-s1", type: "send", delayMs: 600_000 }], { now });
    await reports.enqueue(
      ["p-r1", "p-d1"].map((id) => ({ id, type: "render" })),
      { now },
    );
    const [claimed] = await reports.claim({ count: 1, now });
    await reports.ack([{ id: claimed.id, token: claimed.token }], { now });
    await reports.admin.pause({ now });
    await emails.admin.pause({ now, type: "digest" });

    const dashboard = await startDashboard({ store, where: "test Redis", port: 0, log: () => {} });
    running.push(dashboard.close);
    const origin = new URL(dashboard.url).origin;
    const { page, dialogs, errors } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    expect(new URL(page.url()).pathname).toBe("/");
    expect(await page.$eval("h1", (el) => el.textContent)).toBe("All queues");
    const summary = await page.$eval("[data-queues-summary]", (el) => el.textContent ?? "");
    // The unfiltered list has both unless the shared Redis holds more than 50 busier queues.
    if (!summary.includes("busiest")) {
      for (const queue of [emails, reports]) expect(await page.$(`tr[data-queue-row="${queue.name}"]`)).not.toBeNull();
    }
    // Filtered by name: just this test's two.
    await page.goto(`${origin}/?name=${tag}`, { waitUntil: "load" });
    const rows = await page.$$eval("tr[data-queue-row]", (found) =>
      found.map((row) => row.getAttribute("data-queue-row")),
    );
    expect(rows).toEqual([emails.name, reports.name].sort());
    expect(await countsOf(page, `tr[data-queue-row="${emails.name}"]`)).toEqual({
      ready: 3,
      scheduled: 1,
      leased: 0,
      done: 0,
      failed: 2,
      corrupt: 0,
    });
    expect(await countsOf(page, `tr[data-queue-row="${reports.name}"]`)).toEqual({
      ready: 1,
      scheduled: 0,
      leased: 0,
      done: 1,
      failed: 0,
      corrupt: 0,
    });
    const pausedOf = (name: string) =>
      page.$eval(`tr[data-queue-row="${name}"] [data-paused]`, (el) => [
        el.getAttribute("data-paused"),
        el.textContent,
      ]);
    const [reportsPaused, reportsText] = await pausedOf(reports.name);
    expect(reportsPaused).toBe("true");
    expect(reportsText).toContain("paused");
    const [emailsPaused, emailsText] = await pausedOf(emails.name);
    expect(emailsPaused).toBe("false");
    expect(emailsText).toContain("digest");
    expect(await page.$eval(`tr[data-queue-row="${emails.name}"] [data-hour-failed]`, (el) => el.textContent)).toBe(
      "2",
    );
    expect(await page.$eval(`tr[data-queue-row="${reports.name}"] [data-hour-done]`, (el) => el.textContent)).toBe("1");
    // One small uPlot chart per queue, drawn under the CSP.
    await page.waitForFunction('document.querySelectorAll("[data-spark][data-drawn=true] canvas").length === 2');

    // The queue's name leads to its overview, its lists, a task.
    await clickAndWait(page, `tr[data-queue-row="${emails.name}"] a[data-queue-link]`);
    expect(new URL(page.url()).pathname).toBe(`/q/${emails.name}/`);
    expect(await page.$eval("[data-queue]", (el) => el.textContent)).toBe(emails.name);
    expect(await countsOf(page, ".cards")).toMatchObject({ ready: 3, failed: 2 });
    await clickAndWait(page, 'header a[href$="/tasks/failed"]');
    expect(new URL(page.url()).pathname).toBe(`/q/${emails.name}/tasks/failed`);
    const ids = await page.$$eval("tbody tr[data-id]", (found) =>
      found.map((row) => row.getAttribute("data-id")).sort(),
    );
    expect(ids).toEqual(["e-f1", "e-f2"]);
    await clickAndWait(page, 'tbody a[href$="/task/e-f1"]');
    expect(new URL(page.url()).pathname).toBe(`/q/${emails.name}/task/e-f1`);
    expect(await page.$eval("[data-field=lastError]", (el) => el.textContent)).toBe("SMTP 421");

    // An action goes to the queue of the page: resume the paused one from its overview.
    await clickAndWait(page, "header a[data-all-queues]");
    expect(new URL(page.url()).pathname).toBe("/");
    // The unfiltered list may show only the 50 busiest of a shared Redis: filter to this test's.
    await page.goto(`${origin}/?name=${tag}`, { waitUntil: "load" });
    await clickAndWait(page, `tr[data-queue-row="${reports.name}"] a[data-queue-link]`);
    expect(await page.$eval("[data-paused]", (el) => el.getAttribute("data-paused"))).toBe("true");
    await clickAndWait(page, "#resume-queue");
    expect(dialogs.at(-1)).toBe(`confirm: Resume the queue ${reports.name}?`);
    expect((await reports.stats({ now: Date.now() })).paused).toBe(false);
    expect((await emails.stats({ now: Date.now() })).pausedTypes).toEqual(["digest"]);
    await clickAndWait(page, "[data-back]");
    expect(new URL(page.url()).pathname).toBe(`/q/${reports.name}/`);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("a queue created after the start shows up; a bad or unknown name is 404, not echoed", async () => {
    const { queue: first, store } = await freshQueue(uniqueQueueName("later"));
    const dashboard = await startDashboard({ store, where: "test Redis", port: 0, log: () => {} });
    running.push(dashboard.close);
    const { queue: later } = await freshQueue(uniqueQueueName("later"));
    await later.enqueue([{ id: "x1", type: "job" }], { now: Date.now() });
    expect((await get(dashboard, `/?name=${later.name}`)).body).toContain(`data-queue-row="${later.name}"`);
    expect((await get(dashboard, `/q/${later.name}/`)).status).toBe(200);
    expect((await get(dashboard, `/q/${first.name}/tasks/ready`)).status).toBe(200);
    expect((await get(dashboard, `/q/${later.name}`)).location).toBe(`/q/${later.name}/`);

    const unknown = await get(dashboard, `/q/${uniqueQueueName("never")}/`);
    expect(unknown.status).toBe(404);
    const hostile = [
      "/q/%3Cscript%3Ealert(1)%3C%2Fscript%3E/",
      "/q/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E/tasks/ready",
      "/q/a%2Fb/",
      "/q/a%20b/task/x",
      `/q/${"a".repeat(65)}/`,
      "/q/%C3%A9t%C3%A9/",
      "/q/~x/",
    ];
    for (const path of hostile) {
      const { status, body } = await get(dashboard, path);
      expect(status, path).toBe(404);
      expect(body).not.toMatch(/<script>|<img|onerror|%3C|a".repeat/i);
      expect(body).not.toContain("a".repeat(65));
    }
    // As sent, not encoded by a client.
    for (const path of ["/q/<script>/", "/q/<img/tasks/ready", "/q/a'b/task/x"]) {
      const { status, body } = await rawGet(dashboard, path);
      expect(status, path).toBe(404);
      expect(body).not.toContain("<script>");
    }
    // The POST too, with a valid CSRF token and Origin: 404, nothing done.
    const post = await fetch(`${new URL(dashboard.url).origin}/q/%3Cb%3E/action`, {
      method: "POST",
      headers: { cookie: cookieOf(dashboard), origin: new URL(dashboard.url).origin },
      body: new URLSearchParams({ _csrf: dashboard.csrf, action: "pause" }),
    });
    expect(post.status).toBe(404);
    expect(await post.text()).not.toContain("<b>");
  });

  it('"." and ".." (valid names) get a segment a browser keeps', () => {
    expect(queueSegment(".")).toBe("~");
    expect(queueSegment("..")).toBe("~~");
    expect(queueSegment("a.b-c_d")).toBe("a.b-c_d");
    expect(queueOfSegment("~~")).toBe("..");
    expect(queueOfSegment("~")).toBe(".");
    expect(queueOfSegment("...")).toBe("...");
    expect(queueOfSegment("a.b-c_d")).toBe("a.b-c_d");
    for (const bad of [".", "..", "", "~~~", "a/b", "<b>", "a".repeat(65), "é"])
      expect(queueOfSegment(bad)).toBeUndefined();
  });
});

describe("a one-queue dashboard", { timeout: 60_000 }, () => {
  it("answers 404 for another queue's path, in the browser and to actions", async () => {
    const { queue: mine } = await freshQueue(uniqueQueueName("mine"));
    const { queue: other } = await freshQueue(uniqueQueueName("other"));
    await failTasks(other, ["o-1"]);
    const dashboard = await startDashboard({ queue: mine, where: "test Redis", port: 0, log: () => {} });
    running.push(dashboard.close);
    const origin = new URL(dashboard.url).origin;
    const { page } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    // "/" leads to the one queue's overview, with no link to other queues.
    expect(new URL(page.url()).pathname).toBe(`/q/${mine.name}/`);
    expect(await page.$("header a[data-all-queues]")).toBeNull();
    for (const path of [`/q/${other.name}/`, `/q/${other.name}/tasks/failed`, `/q/${other.name}/task/o-1`]) {
      const response = await page.goto(`${origin}${path}`, { waitUntil: "load" });
      expect(response?.status(), path).toBe(404);
      expect(await page.content()).not.toContain("o-1</");
    }
    const search = await page.goto(`${origin}/q/${other.name}/search?id=o-1`, { waitUntil: "load" });
    expect(search?.status()).toBe(404);
    // The old one-queue paths are gone.
    expect((await page.goto(`${origin}/tasks/failed`))?.status()).toBe(404);
    await page.close();
    const post = await fetch(`${origin}/q/${other.name}/action`, {
      method: "POST",
      headers: { cookie: cookieOf(dashboard), origin },
      body: new URLSearchParams({ _csrf: dashboard.csrf, action: "requeue", ids: "o-1" }),
    });
    expect(post.status).toBe(404);
    await fetch(`${origin}/q/${other.name}/action`, {
      method: "POST",
      headers: { cookie: cookieOf(dashboard), origin },
      body: new URLSearchParams({ _csrf: dashboard.csrf, action: "pause" }),
    });
    expect(await other.admin.inspect("o-1")).toMatchObject({ state: "failed" });
    expect((await other.stats({ now: Date.now() })).paused).toBe(false);
    expect((await get(dashboard, `/q/${mine.name}/`)).status).toBe(200);
  });
});
