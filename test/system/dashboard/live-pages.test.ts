// A task's page and the groups page keep up to date while open (docs/dashboard.md, "Live
// updates"): each polls its own live.json (one inspect; one read of the groups hash), builds its
// table rows with DOM methods (hostile text stays text), and asks nothing while the tab is hidden.
// In real Chromium, against a real Redis.
import type { Page } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { newPage } from "./browser.js";
import { browserPerFile } from "./browser-per-file.js";
import { cookieOf, isShown, liveFixture, REFRESH_MS, setTabHidden, UPDATE_TIMEOUT_MS } from "./live-fixture.js";

const { browser, running } = browserPerFile();

/** An error no handler should send, that would run script if it were parsed as markup. */
const HOSTILE = `<img src=x onerror="top.__xss='img'">&"'`;

/** A fresh queue (job: 3 attempts; its groups run one task at a time) and a dashboard polling every REFRESH_MS. */
const fixture = () =>
  liveFixture(running, {
    queue: { policies: { job: { leaseMs: 30_000, maxAttempts: 3 } }, typeGroups: { job: { concurrency: 1 } } },
  });

/** Resolves once the text of `selector` is `text`. */
function textShows(page: Page, selector: string, text: string) {
  return page.waitForFunction(
    `document.querySelector(${JSON.stringify(selector)})?.textContent === ${JSON.stringify(text)}`,
    {
      timeout: UPDATE_TIMEOUT_MS,
    },
  );
}

/** The attempts table's rows: outcome, then each cell's text. */
const attemptRows = (page: Page) =>
  page.$$eval("table[data-attempts] tbody tr", (rows) =>
    rows.map((row) => [
      row.getAttribute("data-outcome"),
      ...[...row.querySelectorAll("td")].map((cell) => cell.textContent?.trim() ?? ""),
    ]),
  );

/** Counts the page's requests whose path ends with `suffix`. */
function countRequests(page: Page, suffix: string): number[] {
  const seen: number[] = [];
  page.on("request", (request) => {
    if (new URL(request.url()).pathname.endsWith(suffix)) seen.push(Date.now());
  });
  return seen;
}

/** A mark the page keeps until it is loaded again. */
type Marked = { notReloaded?: boolean; __xss?: string };

describe("live task and groups pages in real Chromium", { timeout: 60_000 }, () => {
  it("a task page follows READY -> LEASED -> a retry -> LEASED again -> DONE with its result, without a reload", async () => {
    const { queue, dashboard, base } = await fixture();
    await queue.enqueue([{ id: "report-1", type: "job", payload: { report: 1 } }], { now: Date.now() });
    const { page, errors } = await newPage(browser());
    const polls = countRequests(page, "/task/report-1/live.json");
    await page.goto(dashboard.url);
    await page.goto(`${base}/task/report-1`);
    expect(await page.$eval("[data-field=state]", (el) => el.textContent)).toBe("ready");
    expect(await isShown(page, "[data-attempts-none]")).toBe(true);
    expect(await isShown(page, "table[data-attempts]")).toBe(false);
    expect(await isShown(page, "button[value=cancel]")).toBe(true);
    expect(await page.$eval("main", (el) => el.textContent)).not.toContain("Reload to refresh");
    await page.evaluate(() => {
      (globalThis as Marked).notReloaded = true;
    });

    // Claimed through the library: LEASED, its lease's end, a running attempt.
    const [claimed] = await queue.claim({ count: 1, now: Date.now() });
    await textShows(page, "[data-field=state]", "leased");
    expect(await page.$eval("[data-field=attempts]", (el) => el.textContent)).toBe("1 of 3");
    expect(await page.$eval("main", (el) => el.textContent)).toContain("lease until");
    expect(await page.$eval("[data-field=stateTime] time", (el) => el.getAttribute("datetime"))).toMatch(/^\d{4}-/);
    expect((await attemptRows(page)).map((row) => row[0])).toEqual(["running"]);
    expect(await isShown(page, "table[data-attempts]")).toBe(true);
    // Its actions were drawn for READY: hidden, and a reload offered.
    expect(await isShown(page, "button[value=cancel]")).toBe(false);
    expect(await isShown(page, "[data-state-changed]")).toBe(true);
    expect(await page.$eval("[data-state-changed] a", (el) => el.getAttribute("href"))).toBe(
      `/q/${queue.name}/task/report-1`,
    );

    // A retry with a hostile error, then a new claim: a new attempt row, the error as text.
    await queue.settle([{ ...claimed, outcome: "retry", retryAtMs: Date.now() - 1, error: HOSTILE }], {
      now: Date.now(),
    });
    await textShows(page, "[data-field=lastError]", HOSTILE);
    const [again] = await queue.claim({ count: 1, now: Date.now() });
    await page.waitForFunction(`document.querySelectorAll("table[data-attempts] tbody tr").length === 2`, {
      timeout: UPDATE_TIMEOUT_MS,
    });
    await textShows(page, "[data-field=attempts]", "2 of 3");
    const rows = await attemptRows(page);
    expect(rows.map((row) => row[0])).toEqual(["retried", "running"]);
    expect(rows.map((row) => row[1])).toEqual(["1", "2"]);
    expect(rows[0][6]).toBe(HOSTILE);
    expect(await page.$$eval("table[data-attempts] img", (found) => found.length)).toBe(0);

    // Acked with a result: DONE, the result shown pretty-printed.
    expect(await isShown(page, "#result")).toBe(false);
    const result = { url: "s3://reports/1.pdf", pages: 12 };
    await queue.settle([{ ...again, outcome: "ack", result }], { now: Date.now() });
    await textShows(page, "[data-field=state]", "done");
    await page.waitForFunction(`document.querySelector("#result")?.getClientRects().length > 0`, {
      timeout: UPDATE_TIMEOUT_MS,
    });
    expect(await page.$eval("#result", (el) => el.textContent)).toBe(JSON.stringify(result, null, 2));
    expect(await page.$eval("[data-state-changed]", (el) => el.textContent)).toContain("The task is now done");
    expect((await attemptRows(page)).map((row) => row[0])).toEqual(["retried", "done"]);
    expect(await page.evaluate(() => (globalThis as Marked).notReloaded)).toBe(true);
    expect(await page.evaluate(() => (globalThis as Marked).__xss)).toBeUndefined();

    // Hidden, the tab asks nothing; shown again, it asks at once.
    await setTabHidden(page, true);
    const pollsWhenHidden = polls.length;
    await new Promise((resolve) => setTimeout(resolve, 5 * REFRESH_MS));
    expect(polls.length).toBe(pollsWhenHidden);
    await Promise.all([
      page.waitForResponse((response) => response.url().endsWith("/task/report-1/live.json"), {
        timeout: UPDATE_TIMEOUT_MS,
      }),
      setTabHidden(page, false),
    ]);

    // Deleted meanwhile: 404, the updates stop and the page says so.
    await queue.admin.delete(["report-1"]);
    await page.waitForFunction(`document.querySelector("[data-live-status]").textContent.includes("updates stopped")`, {
      timeout: UPDATE_TIMEOUT_MS,
    });
    expect(await page.$eval("[data-live-status]", (el) => el.textContent)).toBe(
      " (updates stopped: HTTP 404; reload the page)",
    );
    expect(errors.filter((error) => !error.includes("404"))).toEqual([]);
    await page.close();
  });

  it("the task's live.json needs the token and is 404 for no such task", async () => {
    const { queue, dashboard, base } = await fixture();
    await queue.enqueue([{ id: "t1", type: "job" }], { now: Date.now() });
    expect((await fetch(`${base}/task/t1/live.json`)).status).toBe(401);
    const response = await fetch(`${base}/task/t1/live.json`, { headers: { cookie: cookieOf(dashboard) } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await response.json()).toMatchObject({ state: "ready", attempts: "0 (no claim yet)", history: [] });
    expect((await fetch(`${base}/task/nope/live.json`, { headers: { cookie: cookieOf(dashboard) } })).status).toBe(404);
  });

  it("the groups page shows a group's parked count change without a reload; a hidden tab asks nothing", async () => {
    const { queue, dashboard, base } = await fixture();
    const tasksOf = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({ id: `acme-${from + i}`, type: "job", group: "acme" }));
    await queue.enqueue(tasksOf(0, 3), { now: Date.now() });
    await queue.claim({ count: 1, now: Date.now() });
    const { page, errors } = await newPage(browser());
    const polls = countRequests(page, "/groups/live.json");
    await page.goto(dashboard.url);
    await page.goto(`${base}/groups`);
    const parked = "tr[data-group-row] [data-field=parked]";
    // The library's count, as the page should show it.
    const parkedNow = async () => String((await queue.admin.groups({ cursor: "0" })).groups[0]?.parked);
    expect(await page.$eval(parked, (el) => el.textContent)).toBe("0");
    await page.evaluate(() => {
      (globalThis as Marked).notReloaded = true;
    });

    // A claim finds the group full (one at a time) and parks its waiting tasks.
    await queue.claim({ count: 5, now: Date.now() });
    const parkedAfterClaim = await parkedNow();
    expect(parkedAfterClaim).not.toBe("0");
    await textShows(page, parked, parkedAfterClaim);
    expect(await page.$eval(`${parked} span`, (el) => el.className)).toBe("warn");
    expect(await page.$eval("tr[data-group-row] [data-group-link]", (el) => el.getAttribute("href"))).toBe(
      `/q/${queue.name}/tasks/ready?type=job&group=acme`,
    );
    expect(await page.evaluate(() => (globalThis as Marked).notReloaded)).toBe(true);

    // Hidden, the tab asks nothing, and its numbers stay as they were.
    await setTabHidden(page, true);
    const pollsWhenHidden = polls.length;
    await queue.enqueue(tasksOf(3, 2), { now: Date.now() });
    await queue.claim({ count: 5, now: Date.now() });
    const parkedLater = await parkedNow();
    expect(parkedLater).not.toBe(parkedAfterClaim);
    await new Promise((resolve) => setTimeout(resolve, 5 * REFRESH_MS));
    expect(polls.length).toBe(pollsWhenHidden);
    expect(await page.$eval(parked, (el) => el.textContent)).toBe(parkedAfterClaim);
    // Shown again, it asks at once.
    await setTabHidden(page, false);
    await textShows(page, parked, parkedLater);
    expect(errors).toEqual([]);
    await page.close();
  });
});
