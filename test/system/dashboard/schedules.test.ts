// The dashboard's schedules page in real Chromium, over a real Redis: what an operator sees of a
// paused schedule and of one with slots made (its last slot's task linked, its id encoded), a
// group and payload holding markup shown as text, and pause, resume, run now and remove under the
// dashboard's protection (CSRF token, Origin, --read-only).
import { describe, expect, it } from "vitest";
import { type RunningDashboard, startDashboard } from "../../../cli/dashboard/server.js";
import { type Adapter, adapters, openQueue, rawClient } from "../../helpers/stores.js";
import { clickAndWait, newPage } from "./browser.js";
import { browserPerFile } from "./browser-per-file.js";

const tcp = adapters.find((adapter) => adapter.name === "tcp") as Adapter;

const { browser, running } = browserPerFile();

const HOSTILE = "<script>window.__xss='script'</script><img src=x onerror=\"window.__xss='img';alert('img')\">";
const MINUTE = 60_000;

/** A fresh queue with two schedules: "nightly" (paused) and "tick" (3 slots made), and a dashboard over it. */
async function fixture(options: { readOnly?: boolean } = {}) {
  const opened = await openQueue(tcp);
  running.push(opened.close);
  const { queue } = opened;
  const now = Date.now();
  await queue.schedules.set("nightly", { cron: "0 3 * * *", tz: "Europe/Berlin", type: "report" }, { now });
  await queue.schedules.pause("nightly", { now });
  await queue.schedules.set("tick", { every: MINUTE, type: "job", payload: { note: HOSTILE } }, { now });
  expect((await queue.schedules.plan({ now, horizonMs: 3 * MINUTE })).made).toBe(3);
  // A group the library would refuse, written into Redis by hand: the page must show it as text.
  const redis = rawClient();
  try {
    const definition = JSON.parse((await redis.hget(queue.keys.schedules, "tick")) ?? "{}");
    await redis.hset(queue.keys.schedules, "tick", JSON.stringify({ ...definition, group: HOSTILE }));
  } finally {
    redis.disconnect();
  }
  const dashboard = await startDashboard({
    queue,
    where: "test Redis",
    port: 0,
    readOnly: options.readOnly,
    log: () => {},
  });
  running.push(dashboard.close);
  const base = `${new URL(dashboard.url).origin}/q/${queue.name}`;
  return { queue, dashboard, base };
}

const cookieOf = (dashboard: RunningDashboard) => `${dashboard.cookieName}=${dashboard.token}`;

function postAction(dashboard: RunningDashboard, base: string, fields: Record<string, string>) {
  return fetch(`${base}/action`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookieOf(dashboard), origin: new URL(dashboard.url).origin },
    body: new URLSearchParams({ _csrf: dashboard.csrf, ...fields }),
  });
}

/** The cells of each schedule's row, by data-field, as the user reads them. */
function rows(page: import("puppeteer-core").Page) {
  return page.$$eval("tr[data-schedule]", (found) =>
    found.map((row) => {
      const field = (name: string) => row.querySelector(`[data-field="${name}"]`)?.textContent?.trim() ?? null;
      return {
        schedule: row.getAttribute("data-schedule"),
        paused: row.getAttribute("data-paused"),
        when: field("when"),
        next: field("next"),
        last: field("last")?.replace(/\s+/g, " ") ?? null,
        lastHref: row.querySelector('[data-field="lastState"]')?.getAttribute("href") ?? null,
        made: field("made"),
        passedOver: field("passedOver"),
        type: field("type"),
        group: field("group"),
        payload: field("payload"),
        setBy: field("set-by"),
        button: row.querySelector("button[name=action]")?.getAttribute("value") ?? null,
      };
    }),
  );
}

describe("dashboard schedules page in real Chromium", { timeout: 60_000 }, () => {
  it("shows each schedule as an operator reads it, markup from Redis as text; pauses, resumes, runs now and removes", async () => {
    const { queue, dashboard, base } = await fixture();
    const tick = (await queue.schedules.list()).find((info) => info.name === "tick");
    const lastId = tick?.lastTaskId ?? "";
    const lastSlot = tick?.lastSlotMs ?? 0;
    expect(lastId).toBe(`tick@${new Date(lastSlot).toISOString()}`);
    const shown = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 19);

    const { page, dialogs, errors } = await newPage(browser());
    await page.goto(dashboard.url);
    await clickAndWait(page, "[data-nav-schedules]");
    expect(new URL(page.url()).pathname).toBe(`/q/${queue.name}/schedules`);
    await new Promise((resolve) => setTimeout(resolve, 200)); // room for an image error handler
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: string }).__xss)).toBeUndefined();
    expect(await page.$$eval("main img, main script", (found) => found.length)).toBe(0);
    expect(dialogs).toEqual([]);

    const [first, second] = await rows(page);
    expect(first).toMatchObject({
      schedule: "tick",
      paused: "false",
      when: "every 60 s",
      lastHref: `/q/${queue.name}/task/${encodeURIComponent(lastId)}`,
      made: "3",
      passedOver: "0",
      type: "job",
      group: HOSTILE,
      payload: JSON.stringify({ note: HOSTILE }),
      setBy: "run-time",
      button: "schedule-pause",
    });
    expect(first.next).toContain(shown(lastSlot + MINUTE));
    expect(first.last).toMatch(new RegExp(`^${shown(lastSlot)} \\(in [^)]+\\) scheduled$`));
    expect(first.lastHref).toContain("%40");
    expect(first.lastHref).toContain("%3A");
    expect(second).toEqual({
      schedule: "nightly",
      paused: "true",
      when: 'cron "0 3 * * *" Europe/Berlin',
      next: "paused",
      last: "none yet",
      lastHref: null,
      made: "0",
      passedOver: "0",
      type: "report",
      group: null,
      payload: null,
      setBy: "run-time",
      button: "schedule-resume",
    });
    // Escaped by the template, not only stopped by the CSP.
    const raw = await (await fetch(`${base}/schedules`, { headers: { cookie: cookieOf(dashboard) } })).text();
    expect(raw).not.toContain("<img src=x");
    expect(raw).toContain("&lt;img src=x");

    // The last slot's task, through its link.
    await clickAndWait(page, `tr[data-schedule="tick"] a[data-field="lastState"]`);
    expect(await page.$eval("[data-field=id]", (el) => el.textContent)).toBe(lastId);
    expect(await page.$eval("[data-field=state]", (el) => el.textContent)).toBe("scheduled");

    await page.goto(`${base}/schedules`);
    await clickAndWait(page, 'tr[data-schedule="tick"] button[value="schedule-pause"]');
    expect(dialogs).toEqual(["confirm: Pause the schedule tick? No slot is made while it is paused."]);
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain('paused schedule "tick"');
    expect((await queue.schedules.list()).find((info) => info.name === "tick")?.paused).toBe(true);
    await clickAndWait(page, "[data-back]");
    await clickAndWait(page, 'tr[data-schedule="nightly"] button[value="schedule-resume"]');
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain('resumed schedule "nightly"');
    await clickAndWait(page, "[data-back]");
    const after = await rows(page);
    expect(after.map(({ schedule, paused, button }) => ({ schedule, paused, button }))).toEqual([
      { schedule: "nightly", paused: "false", button: "schedule-pause" },
      { schedule: "tick", paused: "true", button: "schedule-resume" },
    ]);
    expect(after[0].next).toMatch(/^\d{4}-\d\d-\d\d 0[12]:00:00 \(in /);

    // Run now: one task of the schedule, now; remove: the schedule goes, its tasks stay.
    await clickAndWait(page, 'tr[data-schedule="nightly"] button[value="schedule-run"]');
    expect(dialogs.at(-1)).toBe(
      "confirm: Run the schedule nightly now? One task of it is enqueued now, besides its slots.",
    );
    const ran = (await page.$eval("[data-result]", (el) => el.textContent)) ?? "";
    const ranId = /enqueued (nightly@run-\S+) \(schedule "nightly"\): it starts at the reclaimer's next run/.exec(
      ran,
    )?.[1];
    expect(ranId, ran).toMatch(/^nightly@run-\d{4}-\d\d-\d\dT/);
    expect((await queue.admin.inspect(ranId ?? ""))?.state).toBe("ready");
    await clickAndWait(page, "[data-back]");
    // tick's group was written by hand, out of bounds: its run is refused, saying why, as text.
    await clickAndWait(page, 'tr[data-schedule="tick"] button[value="schedule-run"]');
    expect(await page.$eval("[data-message]", (el) => el.textContent)).toMatch(/group must be 1-128 characters/);
    expect(await page.$$eval("main img, main script", (found) => found.length)).toBe(0);
    await page.goto(`${base}/schedules`);
    await clickAndWait(page, 'tr[data-schedule="tick"] button[value="schedule-remove"]');
    expect(dialogs.at(-1)).toBe(
      "confirm: Remove the schedule tick? No slot of it is made any more; its tasks already made stay.",
    );
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain('removed schedule "tick"');
    expect((await queue.schedules.list()).map((info) => info.name)).toEqual(["nightly"]);
    expect((await queue.admin.inspect(lastId))?.state).toBe("scheduled");
    // The one error the page logged: the refused run's 400.
    expect(errors).toEqual(["Failed to load resource: the server responded with a status of 400 (Bad Request)"]);
    await page.close();
  });

  it("shows a schedule the planner set aside with its reason (as text), and a declared schedule's deployment", async () => {
    const { queue, dashboard, base } = await fixture();
    const now = Date.now();
    await queue.schedules.syncDeclared({ hourly: { every: 3_600_000, type: "job" } }, { now, owner: "stack-a" });
    await queue.schedules.set("broken", { every: MINUTE, type: "job" }, { now });
    // A definition written by hand that croner refuses, with markup in it: the planner sets it aside.
    const redis = rawClient();
    try {
      await redis.hset(queue.keys.schedules, "broken", JSON.stringify({ cron: HOSTILE, type: "job" }));
    } finally {
      redis.disconnect();
    }
    expect((await queue.schedules.plan({ now, horizonMs: 3 * MINUTE })).setAside).toBe(1);
    const { page, errors } = await newPage(browser());
    await page.goto(dashboard.url);
    await clickAndWait(page, "[data-nav-schedules]");
    const byName = Object.fromEntries((await rows(page)).map((row) => [row.schedule, row]));
    expect(byName.broken.next).toMatch(/^set aside.*is not valid/s);
    expect(byName.broken.next).toContain("<script>");
    expect(byName.hourly.setBy).toBe("deploy stack-a");
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: string }).__xss)).toBeUndefined();
    const raw = await (await fetch(`${base}/schedules`, { headers: { cookie: cookieOf(dashboard) } })).text();
    expect(raw).toContain('data-field="aside"');
    expect(errors).toEqual([]);
  });

  it("a queue without schedules says so; an unknown or invalid schedule name in an action is refused", async () => {
    const { queue, dashboard, base } = await fixture();
    for (const action of ["schedule-pause", "schedule-run", "schedule-remove"]) {
      const unknown = await postAction(dashboard, base, { action, schedule: "tock" });
      expect(unknown.status, action).toBe(404);
      expect(await unknown.text()).toContain("No schedule &quot;tock&quot; in queue");
    }
    const invalid = await postAction(dashboard, base, { action: "schedule-pause", schedule: "<b>x</b>" });
    expect(invalid.status).toBe(400);
    const text = await invalid.text();
    expect(text).toContain("schedule name must be 1-64 characters");
    expect(text).not.toContain("<b>x</b>");
    const forged = await postAction(dashboard, base, { action: "schedule-pause", schedule: "tick", _csrf: "forged" });
    expect(forged.status).toBe(403);
    expect((await queue.schedules.list()).find((info) => info.name === "tick")?.paused).toBe(false);
    await queue.schedules.remove("tick", { now: Date.now() });
    await queue.schedules.remove("nightly", { now: Date.now() });
    const { page } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/schedules`);
    expect(await page.$eval("[data-schedules-summary]", (el) => el.textContent)).toContain(
      "The queue has no schedules",
    );
    expect(await page.$$eval("tr[data-schedule]", (found) => found.length)).toBe(0);
    await page.close();
  });

  it("read-only shows the schedules without buttons and refuses their actions with 403", async () => {
    const { queue, dashboard, base } = await fixture({ readOnly: true });
    const { page } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/schedules`);
    expect((await rows(page)).map((row) => [row.schedule, row.button])).toEqual([
      ["tick", null],
      ["nightly", null],
    ]);
    expect(await page.$$eval("form[method=post]", (found) => found.length)).toBe(0);
    await page.close();
    for (const action of ["schedule-pause", "schedule-resume", "schedule-run", "schedule-remove"]) {
      expect((await postAction(dashboard, base, { action, schedule: "nightly" })).status).toBe(403);
    }
    expect((await queue.schedules.list()).map((info) => [info.name, info.paused])).toEqual([
      ["tick", false],
      ["nightly", true],
    ]);
  });
});
