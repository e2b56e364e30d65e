import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { type RunningDashboard, startDashboard } from "../../../cli/dashboard/server.js";
import { type Adapter, adapters, failTasks, openQueue } from "../../helpers/stores.js";
import { clickAndWait, newPage } from "./browser.js";
import { browserPerFile } from "./browser-per-file.js";

const tcp = adapters.find((adapter) => adapter.name === "tcp") as Adapter;

const { browser, running } = browserPerFile();

/** A fresh queue on the real Redis (deleted after the file by the cleanup setup) and a dashboard over it. */
async function fixture(options: { readOnly?: boolean; adapter?: Adapter } = {}) {
  const opened = await openQueue(options.adapter ?? tcp);
  running.push(opened.close);
  const dashboard = await startDashboard({
    queue: opened.queue,
    where: `test Redis (${(options.adapter ?? tcp).name})`,
    port: 0,
    readOnly: options.readOnly,
    log: () => {},
  });
  running.push(dashboard.close);
  const origin = new URL(dashboard.url).origin;
  // The queue's pages: /q/<queue>
  const base = `${origin}/q/${opened.queue.name}`;
  return { queue: opened.queue, dashboard, base, origin };
}

const cookieOf = (dashboard: RunningDashboard) => `${dashboard.cookieName}=${dashboard.token}`;

/** A POST of an action to the queue at `base` (/q/<queue>) as its page's form would send it (cookie, CSRF field, Origin). */
function postAction(dashboard: RunningDashboard, base: string, fields: Record<string, string>, headers = {}) {
  return fetch(`${base}/action`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookieOf(dashboard), origin: new URL(dashboard.url).origin, ...headers },
    body: new URLSearchParams({ _csrf: dashboard.csrf, ...fields }),
  });
}

describe("dashboard in real Chromium", { timeout: 60_000 }, () => {
  for (const adapter of adapters) {
    it(`the overview shows the counts of the queue (${adapter.name}) and draws the chart`, async () => {
      const { queue, dashboard } = await fixture({ adapter });
      const now = Date.now();
      await failTasks(queue, ["f1", "f2"]);
      await queue.enqueue(
        ["d1", "l1"].map((id) => ({ id, type: "job" })),
        { now },
      );
      const [first, second] = await queue.claim({ count: 2, now });
      await queue.ack([{ id: first.id, token: first.token }], { now });
      expect(second).toBeDefined();
      await queue.enqueue(
        [
          ...["r1", "r2", "r3"].map((id) => ({ id, type: "email" })),
          ...["s1", "s2"].map((id) => ({ id, type: "email", delayMs: 600_000 })),
        ],
        { now },
      );

      const { page, errors } = await newPage(browser());
      await page.goto(dashboard.url, { waitUntil: "load" });
      // The token went into a cookie and out of the address bar.
      expect(new URL(page.url()).search).toBe("");
      const counts = await page.$$eval("[data-count]", (cells) =>
        Object.fromEntries(cells.map((cell) => [cell.getAttribute("data-count"), Number(cell.textContent)])),
      );
      expect(counts).toEqual({ ready: 3, scheduled: 2, leased: 1, done: 1, failed: 2, corrupt: 0 });
      expect(await page.$eval("[data-paused]", (el) => el.getAttribute("data-paused"))).toBe("false");
      // uPlot, served by the dashboard itself, ran under the CSP and drew the last hour.
      await page.waitForSelector("#history-chart[data-drawn=true] canvas");
      expect(errors).toEqual([]);
      await page.close();
    });
  }

  it("requeue of a failed task from its task page moves it to READY", async () => {
    const { queue, dashboard } = await fixture();
    await failTasks(queue, ["job-1"], { error: "upstream timed out" });
    const { page, dialogs } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${new URL(dashboard.url).origin}/q/${queue.name}/task/job-1`);
    expect(await page.$eval("[data-field=state]", (el) => el.textContent)).toBe("failed");
    expect(await page.$eval("[data-field=lastError]", (el) => el.textContent)).toBe("upstream timed out");
    await clickAndWait(page, "button[value=requeue]");
    expect(dialogs).toEqual(["confirm: Requeue task job-1?"]);
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("requeued 1 of 1 task");
    expect(await queue.admin.inspect("job-1")).toMatchObject({ state: "ready", attempts: 0 });
    await page.close();
  });

  it("a FAILED task its ordered group waits behind says so, with its stalls, and Skip lets the group go on", async () => {
    const opened = await openQueue(tcp, {
      policies: { import: { leaseMs: 30_000, maxAttempts: 1 } },
      typeGroups: { import: { ordered: true, onFailure: "hold" } },
    });
    running.push(opened.close);
    const { queue } = opened;
    const dashboard = await startDashboard({ queue, where: "test Redis (tcp)", port: 0, log: () => {} });
    running.push(dashboard.close);
    const now = Date.now();
    await queue.enqueue(
      [
        { id: "acme-1", type: "import", group: "acme" },
        { id: "acme-2", type: "import", group: "acme" },
      ],
      { now },
    );
    // Its first lease ran out once (a stall), then it failed for good: acme waits behind it.
    await queue.claim({ count: 1, now });
    await queue.reclaim({ now: now + 60_000 });
    const [again] = await queue.claim({ count: 1, now: now + 60_000 });
    await queue.settle([{ ...again, outcome: "fail", error: "bad file" }], { now: now + 60_001 });
    const { page, dialogs } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${new URL(dashboard.url).origin}/q/${queue.name}/task/acme-1`);
    expect(await page.$eval("[data-field=stalls]", (el) => el.textContent)).toBe(
      "1 (its lease ran out while held: its worker stopped)",
    );
    expect(await page.$eval("[data-field=holds]", (el) => el.textContent)).toContain("its group acme waits behind it");
    await clickAndWait(page, "button[value=skip]");
    expect(dialogs).toEqual(["confirm: Skip task acme-1?"]);
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("skipped 1 of 1 task");
    expect(await queue.admin.inspect("acme-1")).toMatchObject({ state: "failed", holdsGroup: false });
    expect((await queue.claim({ count: 10, now: now + 60_002 })).map((task) => task.id)).toEqual(["acme-2"]);
    // No Skip where nothing waits behind the task.
    await page.goto(`${new URL(dashboard.url).origin}/q/${queue.name}/task/acme-1`);
    expect(await page.$$eval("button[value=skip]", (found) => found.length)).toBe(0);
    await page.close();
  });

  it("cancel of a leased task from its task page revokes the lease: FAILED, its worker's ack refused", async () => {
    const { queue, dashboard, base } = await fixture();
    await queue.enqueue([{ id: "running-1", type: "job" }], { now: Date.now() });
    const [claimed] = await queue.claim({ count: 1, now: Date.now() });
    const { page } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/task/running-1`);
    expect(await page.$eval("[data-field=state]", (el) => el.textContent)).toBe("leased");
    expect(await page.$$eval("button[value=delete]", (found) => found.length)).toBe(0);
    await clickAndWait(page, "button[value=cancel]");
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("cancelled 1 of 1 task");
    expect(await queue.admin.inspect("running-1")).toMatchObject({ state: "failed", lastError: "cancelled" });
    const [ack] = await queue.ack([{ id: claimed.id, token: claimed.token }], { now: Date.now() });
    expect(ack.status).not.toBe("ok");
    await page.close();
  });

  it("pause shows on the overview and stops claims; resume lets them through", async () => {
    const { queue, dashboard, base } = await fixture();
    await queue.enqueue(
      ["p1", "p2"].map((id) => ({ id, type: "job" })),
      { now: Date.now() },
    );
    const { page, dialogs } = await newPage(browser());
    await page.goto(dashboard.url);
    await clickAndWait(page, "#pause-queue");
    expect(dialogs[0]).toMatch(/^confirm: Pause the queue /);
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("paused queue");
    await page.goto(`${base}/`);
    expect(await page.$eval("[data-paused]", (el) => el.getAttribute("data-paused"))).toBe("true");
    expect(await page.$eval("[data-paused]", (el) => el.textContent)).toContain("The queue is paused");
    expect(await queue.claim({ count: 10, now: Date.now() })).toEqual([]);

    await clickAndWait(page, "#resume-queue");
    await page.goto(`${base}/`);
    expect(await page.$eval("[data-paused]", (el) => el.getAttribute("data-paused"))).toBe("false");
    expect(await queue.claim({ count: 10, now: Date.now() })).toHaveLength(2);
    await page.close();
  });

  it("a hostile payload and error render as text: no script runs, no handler fires", async () => {
    const { queue, dashboard, base } = await fixture();
    const hostile =
      "<script>window.__xss='script';alert('script')</script><img src=x onerror=\"window.__xss='img';alert('img')\">";
    await failTasks(queue, ["evil"], {
      error: hostile,
      payload: { note: hostile, "</pre><script>alert(3)</script>": 1 },
    });
    const { page, dialogs } = await newPage(browser());
    await page.goto(dashboard.url);
    for (const path of ["/task/evil", "/tasks/failed", "/tasks/failed?error=%3Cscript%3E"]) {
      await page.goto(`${base}${path}`, { waitUntil: "load" });
      await new Promise((resolve) => setTimeout(resolve, 200)); // room for an image error handler
      expect(await page.evaluate(() => (globalThis as unknown as { __xss?: string }).__xss)).toBeUndefined();
      expect(await page.$$eval("main img, main script", (found) => found.length)).toBe(0);
    }
    expect(dialogs).toEqual([]);
    await page.goto(`${base}/task/evil`);
    expect(await page.$eval("[data-field=lastError]", (el) => el.textContent)).toBe(hostile);
    const payload = await page.$eval("#payload", (el) => el.textContent ?? "");
    expect(JSON.parse(payload)).toEqual({ note: hostile, "</pre><script>alert(3)</script>": 1 });
    // Escaped by the template, not only stopped by the CSP:
    const raw = await (await fetch(`${base}/task/evil`, { headers: { cookie: cookieOf(dashboard) } })).text();
    expect(raw).not.toContain("<script>window.__xss");
    expect(raw).toContain("&lt;script&gt;window.__xss");
    await page.close();
  });

  it("lists filter by error, requeue selected and all matching tasks, and search finds a task by id", async () => {
    const { queue, dashboard, base } = await fixture();
    await failTasks(queue, ["a1"], { error: "timeout calling api" });
    await failTasks(queue, ["a2"], { error: "timeout again" });
    await failTasks(queue, ["a3"], { error: "bad input" });
    await failTasks(queue, ["a4"], { error: "timeout at last" });
    const { page, dialogs } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/tasks/failed?error=timeout`);
    const ids = () => page.$$eval("tbody tr[data-id]", (rows) => rows.map((row) => row.getAttribute("data-id")).sort());
    expect(await ids()).toEqual(["a1", "a2", "a4"]);
    await page.click('input[name=ids][value="a2"]');
    await clickAndWait(page, "button[value=requeue]");
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("requeued 1 of 1 task");
    expect((await queue.admin.inspect("a2"))?.state).toBe("ready");
    await clickAndWait(page, "[data-back]");
    expect(await ids()).toEqual(["a1", "a4"]);
    await clickAndWait(page, "input[name=scope] ~ button[value=requeue]");
    expect(dialogs.at(-1)).toBe("confirm: Requeue ALL failed tasks matching the filter?");
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("requeued 2 of 2 tasks");
    expect((await queue.admin.inspect("a1"))?.state).toBe("ready");
    expect((await queue.admin.inspect("a4"))?.state).toBe("ready");
    expect((await queue.admin.inspect("a3"))?.state).toBe("failed");
    await page.goto(`${base}/`);
    await page.type("input[name=id]", "a3");
    await clickAndWait(page, "header form button");
    expect(new URL(page.url()).pathname).toBe(`/q/${queue.name}/task/a3`);
    expect(await page.$eval("[data-field=lastError]", (el) => el.textContent)).toBe("bad input");
    await page.close();
  });

  it("ids with ':' and '@' are URL-encoded in links, found by search, shown as given, and acted on", async () => {
    const { queue, dashboard, base } = await fixture();
    const ids = ["user:42", "nightly@2026-12-01T03:00:00Z", "sweep-2026-12-01T21:15:00Z"];
    await failTasks(queue, ids, { error: "declined" });
    await queue.enqueue([{ id: "@lead", type: "job", group: "@email" }], { now: Date.now() });
    const { page, dialogs, errors } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/tasks/failed`);
    const links = await page.$$eval("tbody tr a[href*='/task/']", (found) =>
      found.map((link) => [link.textContent, link.getAttribute("href")]),
    );
    expect(links.sort()).toEqual(ids.map((id) => [id, `/q/${queue.name}/task/${encodeURIComponent(id)}`]).sort());
    expect(links.map(([, href]) => href).join(" ")).toContain("user%3A42");
    await clickAndWait(page, `tbody tr a[href$="${encodeURIComponent("nightly@2026-12-01T03:00:00Z")}"]`);
    expect(await page.$eval("[data-field=lastError]", (el) => el.textContent)).toBe("declined");
    expect(await page.$eval("main", (el) => el.textContent)).toContain("nightly@2026-12-01T03:00:00Z");
    await clickAndWait(page, "button[value=requeue]");
    expect(dialogs).toEqual(["confirm: Requeue task nightly@2026-12-01T03:00:00Z?"]);
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("requeued 1 of 1 task");
    expect((await queue.admin.inspect("nightly@2026-12-01T03:00:00Z"))?.state).toBe("ready");
    // The answer page links back to the task, encoded.
    expect(await page.$$eval("a[href*='/task/']", (found) => found.map((link) => link.getAttribute("href")))).toContain(
      `/q/${queue.name}/task/nightly%402026-12-01T03%3A00%3A00Z`,
    );
    // Search by id, and a group "@email" on the task page.
    await page.goto(`${base}/`);
    await page.type("input[name=id]", "@lead");
    await clickAndWait(page, "header form button");
    expect(new URL(page.url()).pathname).toBe(`/q/${queue.name}/task/%40lead`);
    expect(await page.$eval("[data-field=group]", (el) => el.textContent)).toBe("@email");
    // Select two on the failed list and delete them.
    await page.goto(`${base}/tasks/failed`);
    await page.click('input[name=ids][value="user:42"]');
    await page.click('input[name=ids][value="sweep-2026-12-01T21:15:00Z"]');
    await clickAndWait(page, "button[value=delete]");
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("deleted 2 of 2 tasks");
    expect(await queue.admin.inspect("user:42")).toBeUndefined();
    expect(errors).toEqual([]);
    expect(await queue.admin.checkAll({ now: Date.now() })).toEqual([]);
    await page.close();
  });

  it("delete of tasks selected on the failed list leaves one requeued since the page was drawn", async () => {
    const { queue, dashboard, base } = await fixture();
    await failTasks(queue, ["d1", "d2"], { error: "gone" });
    const { page } = await newPage(browser());
    await page.goto(dashboard.url);
    await page.goto(`${base}/tasks/failed`);
    await page.click('input[name=ids][value="d1"]');
    await page.click('input[name=ids][value="d2"]');
    // Another operator requeues d2 while this page is open.
    await queue.admin.requeue(["d2"], { now: Date.now() });
    await clickAndWait(page, "button[value=delete]");
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("deleted 1 of 2 tasks");
    expect(await page.$eval("body", (el) => el.textContent)).toContain("not_in_state");
    expect(await queue.admin.inspect("d1")).toBeUndefined();
    expect((await queue.admin.inspect("d2"))?.state, "the requeued task stays READY").toBe("ready");
    await page.close();
  });

  it("read-only mode shows no action and refuses an action POST with 403", async () => {
    const { queue, dashboard, base } = await fixture({ readOnly: true });
    await failTasks(queue, ["ro-1"]);
    const { page } = await newPage(browser());
    await page.goto(dashboard.url);
    for (const path of ["/", "/task/ro-1", "/tasks/failed"]) {
      await page.goto(`${base}${path}`);
      expect(await page.$$eval("form[method=post], button[name=action]", (found) => found.length)).toBe(0);
    }
    expect(await page.$eval("[data-read-only]", (el) => el.textContent)).toBe("read-only");
    await page.close();
    const refused: Array<Record<string, string>> = [
      { action: "requeue", ids: "ro-1" },
      { action: "delete", ids: "ro-1" },
      { action: "pause" },
    ];
    for (const fields of refused) {
      const response = await postAction(dashboard, base, fields);
      expect(response.status).toBe(403);
    }
    expect(await queue.admin.inspect("ro-1")).toMatchObject({ state: "failed" });
    expect((await queue.stats({ now: Date.now() })).paused).toBe(false);
  });
});

describe("dashboard access without a browser", () => {
  it("refuses a request without a valid token with 401; the right token sets an HttpOnly SameSite=Strict cookie", async () => {
    const { dashboard, origin: base, queue } = await fixture();
    const status = async (path: string, init: RequestInit = {}) =>
      (await fetch(`${base}${path}`, { redirect: "manual", ...init })).status;
    expect(await status("/")).toBe(401);
    expect(await status(`/q/${queue.name}/`)).toBe(401);
    expect(await status(`/q/${queue.name}/tasks/failed`)).toBe(401);
    expect(await status("/q/other/")).toBe(401);
    expect(await status("/tasks/failed")).toBe(401);
    expect(await status("/task/x")).toBe(401);
    expect(await status("/assets/uplot.js")).toBe(401);
    expect(await status("/action", { method: "POST", body: new URLSearchParams({ action: "pause" }) })).toBe(401);
    expect(await status("/?token=wrong")).toBe(401);
    expect(await status(`/?token=${dashboard.token}x`)).toBe(401);
    expect(await status("/", { headers: { cookie: `${dashboard.cookieName}=wrong` } })).toBe(401);
    expect(await status("/", { headers: { authorization: "Bearer wrong" } })).toBe(401);

    const first = await fetch(dashboard.url, { redirect: "manual" });
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/");
    const cookie = first.headers.get("set-cookie") ?? "";
    expect(cookie).toContain(`${dashboard.cookieName}=${dashboard.token}`);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    const home = await fetch(`${base}/`, { redirect: "manual", headers: { cookie: cookieOf(dashboard) } });
    expect(home.status).toBe(303);
    expect(home.headers.get("location")).toBe(`/q/${queue.name}/`);
    const page = await fetch(`${base}/q/${queue.name}/`, { headers: { cookie: cookieOf(dashboard) } });
    expect(page.status).toBe(200);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    const uplot = await fetch(`${base}/assets/uplot.js`, { headers: { cookie: cookieOf(dashboard) } });
    expect(uplot.status).toBe(200);
    expect(await uplot.text()).toContain("uPlot");
  });

  it("binds 127.0.0.1 by default and refuses a foreign Host header (DNS rebinding)", async () => {
    const { queue } = await fixture();
    const dashboard = await startDashboard({ queue, where: "test", port: 0, log: () => {} });
    running.push(dashboard.close);
    expect(new URL(dashboard.url).hostname).toBe("127.0.0.1");
    const statusWithHost = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port: dashboard.port,
            path: `/q/${queue.name}/`,
            headers: { host, cookie: cookieOf(dashboard) },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        req.end();
      });
    expect(await statusWithHost(`evil.example:${dashboard.port}`)).toBe(403);
    expect(await statusWithHost(`127.0.0.1:${dashboard.port}`)).toBe(200);
    expect(await statusWithHost(`localhost:${dashboard.port}`)).toBe(200);
  });

  it("an id in the path that is not one is refused with 400, its text escaped; one that is but names no task is 404", async () => {
    const { dashboard, base } = await fixture();
    const get = (path: string) => fetch(`${base}${path}`, { headers: { cookie: cookieOf(dashboard) } });
    for (const id of ["<img src=x onerror=alert(1)>", "a|b", "a b", "user:s"]) {
      const response = await get(`/task/${encodeURIComponent(id)}`);
      expect(response.status, id).toBe(400);
      const text = await response.text();
      expect(text, id).toMatch(/inspect: id must (be 1-128 characters of A-Z a-z 0-9 _ \. - : @|not end in)/);
      expect(text).not.toContain("<img src=x");
    }
    const unknown = await get(`/task/${encodeURIComponent("user:404")}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('No task with id "user:404"'.replace(/"/g, "&quot;"));
  });

  it("an action POST needs the CSRF token and this server's Origin", async () => {
    const { queue, dashboard, base } = await fixture();
    await failTasks(queue, ["c1"]);
    const fields = { action: "requeue", ids: "c1" };
    expect((await postAction(dashboard, base, { ...fields, _csrf: "forged" })).status).toBe(403);
    expect((await postAction(dashboard, base, fields, { origin: "http://evil.example" })).status).toBe(403);
    expect((await queue.admin.inspect("c1"))?.state).toBe("failed");
    const accepted = await postAction(dashboard, base, fields);
    expect(accepted.status).toBe(200);
    expect(await accepted.text()).toContain("requeued 1 of 1 task");
    expect((await queue.admin.inspect("c1"))?.state).toBe("ready");
  });
});
