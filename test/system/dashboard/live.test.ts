// A queue's overview keeps its numbers up to date while it is open (docs/dashboard.md, "Live
// updates"): the page script polls /q/<queue>/live.json, asks nothing while the tab is hidden, and
// the endpoint needs the token like every page. In real Chromium, against a real Redis.
import type { Page } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { newPage } from "./browser.js";
import { browserPerFile } from "./browser-per-file.js";
import { cookieOf, isShown, liveFixture, REFRESH_MS, setTabHidden, UPDATE_TIMEOUT_MS } from "./live-fixture.js";

const { browser, running } = browserPerFile();

/** A fresh queue on the real Redis and a dashboard over it polling every `refreshMs`. */
const fixture = (refreshMs = REFRESH_MS) => liveFixture(running, { refreshMs });

/** Resolves once the count of `state` on the page shows `count`. */
function countShows(page: Page, state: string, count: number) {
  return page.waitForFunction(`document.querySelector('[data-count="${state}"]')?.textContent === "${count}"`, {
    timeout: UPDATE_TIMEOUT_MS,
  });
}

/** A mark the page keeps until it is loaded again. */
type Marked = { notReloaded?: boolean };

describe("live overview in real Chromium", { timeout: 60_000 }, () => {
  it("shows tasks enqueued, claimed and a pause made elsewhere without a reload; a hidden tab asks nothing", async () => {
    const { queue, dashboard } = await fixture();
    const { page, errors } = await newPage(browser());
    const polls: number[] = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname.endsWith("/live.json")) polls.push(Date.now());
    });
    await page.goto(dashboard.url, { waitUntil: "load" });
    const loadedAt = Date.now();
    expect(await page.$eval('[data-count="ready"]', (el) => el.textContent)).toBe("0");
    expect(await isShown(page, "[data-oldest-ready]")).toBe(false);
    expect(await page.$eval("main", (el) => el.textContent)).not.toContain("Reload to refresh");
    await page.evaluate(() => {
      (globalThis as Marked).notReloaded = true;
    });

    await queue.enqueue(
      ["a", "b", "c"].map((id) => ({ id, type: "job" })),
      { now: Date.now() },
    );
    await countShows(page, "ready", 3);
    expect(await isShown(page, "[data-oldest-ready]")).toBe(true);
    expect(await page.$eval("[data-oldest-ready]", (el) => el.textContent)).toMatch(/^\d+(\.\d)? (ms|s)$/);

    await queue.claim({ count: 1, now: Date.now() });
    await countShows(page, "leased", 1);
    expect(await page.$eval('[data-count="ready"]', (el) => el.textContent)).toBe("2");

    // Paused by someone else: the state line says so and the button becomes Resume.
    await queue.admin.pause({ now: Date.now() });
    await page.waitForSelector('[data-paused="true"]', { timeout: UPDATE_TIMEOUT_MS });
    expect(await page.$eval("[data-paused]", (el) => el.textContent)).toContain("The queue is paused");
    expect(await isShown(page, "#resume-queue")).toBe(true);
    expect(await isShown(page, "#pause-queue")).toBe(false);
    expect(await page.evaluate(() => (globalThis as Marked).notReloaded)).toBe(true);
    // One request at a time, one per interval: never more than the time open allows.
    expect(polls.length).toBeLessThanOrEqual(Math.ceil((Date.now() - loadedAt) / REFRESH_MS) + 1);

    // Hidden, the tab asks nothing, and its numbers stay as they were.
    await setTabHidden(page, true);
    const pollsWhenHidden = polls.length;
    await queue.enqueue([{ id: "d", type: "job" }], { now: Date.now() });
    // Absence takes a wait to see: five intervals, in which a visible page would have asked five times.
    await new Promise((resolve) => setTimeout(resolve, 5 * REFRESH_MS));
    expect(polls.length).toBe(pollsWhenHidden);
    expect(await page.$eval('[data-count="ready"]', (el) => el.textContent)).toBe("2");
    // Shown again, it asks at once.
    await setTabHidden(page, false);
    await countShows(page, "ready", 3);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("live.json gives the overview's values, needs the token, and a dashboard told not to poll says so", async () => {
    const { queue, dashboard, base } = await fixture();
    await queue.enqueue([{ id: "one", type: "job" }], { now: Date.now() });
    expect((await fetch(`${base}/live.json`)).status).toBe(401);
    const response = await fetch(`${base}/live.json`, { headers: { cookie: cookieOf(dashboard) } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toMatchObject({
      ready: 1,
      scheduled: 0,
      leased: 0,
      done: 0,
      failed: 0,
      corrupt: 0,
      paused: false,
      pausedTypes: "",
      mostOverdue: "",
    });

    const still = await fixture(0);
    const { page } = await newPage(browser());
    const polls: string[] = [];
    page.on("request", (request) => {
      if (request.url().endsWith("/live.json")) polls.push(request.url());
    });
    await page.goto(still.dashboard.url, { waitUntil: "load" });
    expect(await page.$("[data-live-url]")).toBeNull();
    expect(await page.$eval("main", (el) => el.textContent)).toContain("Reload to refresh");
    await still.queue.enqueue([{ id: "two", type: "job" }], { now: Date.now() });
    await new Promise((resolve) => setTimeout(resolve, 5 * REFRESH_MS));
    expect(polls).toEqual([]);
    expect(await page.$eval('[data-count="ready"]', (el) => el.textContent)).toBe("0");
    await page.close();
  });

  it("stops asking, and says so, once the dashboard refuses the page's token", async () => {
    const { dashboard } = await fixture();
    const { page } = await newPage(browser());
    const polls: number[] = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname.endsWith("/live.json")) polls.push(Date.now());
    });
    await page.goto(dashboard.url, { waitUntil: "load" });
    // As when the dashboard was restarted with another token: the cookie no longer opens it.
    const cookies = await browser().cookies();
    await browser().deleteCookie(...cookies.filter((cookie) => cookie.name === dashboard.cookieName));
    await page.waitForFunction(`document.querySelector("[data-live-status]").textContent.includes("updates stopped")`, {
      timeout: UPDATE_TIMEOUT_MS,
    });
    expect(await page.$eval("[data-live-status]", (el) => el.textContent)).toBe(
      " (updates stopped: HTTP 401; reload the page)",
    );
    const pollsWhenStopped = polls.length;
    await new Promise((resolve) => setTimeout(resolve, 5 * REFRESH_MS));
    expect(polls.length).toBe(pollsWhenStopped);
    await page.close();
  });
});
