// The groups page (docs/dashboard.md, "Groups"): a queue's groups with what waits, is parked and
// runs, the stuck first; filtered by name on the server, read in bounded pages of the groups hash;
// a group's name, whatever Redis holds, shown as text and its link encoded. In real Chromium,
// against a real Redis.
import type { Page } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { GROUPS_READ_PAGES, GROUPS_SHOWN_MAX, groupsPage } from "../../../cli/dashboard/groups.js";
import { type RunningDashboard, startDashboard } from "../../../cli/dashboard/server.js";
import type { Queue } from "../../../shared/queue.js";
import { type Adapter, adapters, openQueue, rawClient } from "../../helpers/stores.js";
import { clickAndWait, newPage } from "./browser.js";
import { browserPerFile } from "./browser-per-file.js";

const tcp = adapters.find((adapter) => adapter.name === "tcp") as Adapter;

const { browser, running } = browserPerFile();

/**
 * A group name no producer could send (groups are `A-Z a-z 0-9 _ . - : @`), written into Redis by
 * hand. It has no "a", which the filter below looks for.
 */
const HOSTILE = `<img src=x onerror="top.__xss='img'">&"'`;

/**
 * A fresh queue whose `job` groups run one task at a time and whose `import` groups wait behind a
 * FAILED task, and a dashboard over it.
 */
async function fixture() {
  const opened = await openQueue(tcp, {
    policies: { import: { leaseMs: 30_000, maxAttempts: 1 } },
    typeGroups: { job: { concurrency: 1 }, import: { ordered: true, onFailure: "hold" } },
  });
  running.push(opened.close);
  const dashboard = await startDashboard({ queue: opened.queue, where: "test Redis", port: 0, log: () => {} });
  running.push(dashboard.close);
  const base = `${new URL(dashboard.url).origin}/q/${opened.queue.name}`;
  return { queue: opened.queue, dashboard, base };
}

const cookieOf = (dashboard: RunningDashboard) => `${dashboard.cookieName}=${dashboard.token}`;

/** `count` tasks of type job in `group`, ids `<group>-0`, `<group>-1`, … */
const tasksOf = (group: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({ id: `${group}-${i}`, type: "job", group }));

/** Writes group records into the groups hash as the scripts keep them: `<type>|<group>` -> "<ready>||". */
async function writeGroupRecords(queue: Queue, records: Array<[name: string, ready: number]>) {
  const redis = rawClient();
  try {
    for (let i = 0; i < records.length; i += 1000) {
      await redis.hset(
        queue.keys.groups,
        Object.fromEntries(records.slice(i, i + 1000).map(([name, ready]) => [`job|${name}`, `${ready}||`])),
      );
    }
  } finally {
    redis.disconnect();
  }
}

/** The groups page's rows as a user reads them: type, group, waiting, parked, running, held by. */
function rowsOf(page: Page) {
  return page.$$eval("tr[data-group-row]", (rows) =>
    rows.map((row) =>
      ["type", "group", "ready", "parked", "leased", "heldBy"].map(
        (field) => row.querySelector(`[data-field="${field}"]`)?.textContent?.trim() ?? "",
      ),
    ),
  );
}

const summaryOf = (page: Page) => page.$eval("[data-groups-summary]", (el) => el.textContent ?? "");

describe("groups page in real Chromium", { timeout: 60_000 }, () => {
  it("lists the groups the stuck first, filters by name, shows a hostile name as text and links a group's tasks", async () => {
    const { queue, dashboard, base } = await fixture();
    const now = Date.now();
    const imports = ["acme-0", "acme-1"].map((id) => ({ id, type: "import", group: "acme" }));
    await queue.enqueue([...tasksOf("alpha", 4), ...tasksOf("beta", 2), ...tasksOf("tenant@eu:42", 3), ...imports], {
      now,
    });
    // Each group's first task runs; acme's fails, and acme waits behind it.
    const claimed = await queue.claim({ count: 10, now });
    expect(claimed.map((task) => task.id).sort()).toEqual(["acme-0", "alpha-0", "beta-0", "tenant@eu:42-0"]);
    const [acme] = claimed.filter((task) => task.id === "acme-0");
    await queue.settle([{ ...acme, outcome: "fail", error: "bad file" }], { now });
    // The next claim parks the others behind their group's one slot.
    expect(await queue.claim({ count: 10, now })).toEqual([]);
    // Most waiting, but nothing parked: after every group with parked tasks.
    await queue.enqueue(tasksOf("delta", 5), { now });
    await writeGroupRecords(queue, [[HOSTILE, 1]]);

    const { page, dialogs, errors } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    await clickAndWait(page, "[data-nav-groups]");
    expect(new URL(page.url()).pathname).toBe(`/q/${queue.name}/groups`);
    expect(await page.$eval("h1", (el) => el.textContent)).toBe("Groups");
    // Held behind a FAILED task first, then the longest parked (alike here: by most waiting), then
    // the groups with nothing parked, most waiting first.
    expect(await rowsOf(page)).toEqual([
      ["import", "acme", "1", "1", "0", "acme-0"],
      ["job", "alpha", "3", "3", "1", ""],
      ["job", "tenant@eu:42", "2", "2", "1", ""],
      ["job", "beta", "1", "1", "1", ""],
      ["job", "delta", "5", "0", "0", ""],
      ["job", HOSTILE, "1", "0", "0", ""],
    ]);
    expect(await summaryOf(page)).toBe("6 groups with work read, in 1 read of the groups hash (to its end).");
    expect(await page.$$eval("thead th", (cells) => cells.map((cell) => cell.textContent))).toEqual([
      "type",
      "group",
      "waiting",
      "parked",
      "running",
      "held by",
      "oldest waiting",
    ]);
    // The age of each group's parked tasks (ms since they were parked, as the page was drawn); none
    // for a group with nothing parked.
    const ages = await page.$$eval("tr[data-group-row] [data-field=oldestWaiting]", (cells) =>
      cells.map((cell) => cell.textContent?.trim() ?? ""),
    );
    expect(ages.slice(0, 4).every((age) => /^\d+ ms$|^[\d.]+ s$/.test(age))).toBe(true);
    expect(ages.slice(4)).toEqual(["", ""]);

    // The hostile name is text: no element made of it, no handler run; its link encodes it.
    await new Promise((resolve) => setTimeout(resolve, 200)); // room for an image error handler
    expect(await page.evaluate(() => (globalThis as { __xss?: string }).__xss)).toBeUndefined();
    expect(await page.$$eval("main img", (found) => found.length)).toBe(0);
    const hostileHref = await page.$eval("tr[data-group-row]:last-child [data-group-link]", (el) =>
      el.getAttribute("href"),
    );
    expect(new URL(hostileHref ?? "", base).searchParams.get("group")).toBe(HOSTILE);
    expect(hostileHref).not.toMatch(/[<>"' ]/);
    const raw = await (await fetch(`${base}/groups`, { headers: { cookie: cookieOf(dashboard) } })).text();
    expect(raw).not.toContain("<img src=x");
    expect(raw).toContain("&lt;img src=x");

    // Filtered on the server, by any case, in the same order.
    await page.type("input[name=group]", "A");
    await clickAndWait(page, "form.filters button");
    expect(new URL(page.url()).searchParams.get("group")).toBe("A");
    expect((await rowsOf(page)).map((row) => row[1])).toEqual(["acme", "alpha", "tenant@eu:42", "beta", "delta"]);
    expect(await summaryOf(page)).toBe(
      '6 groups with work read, in 1 read of the groups hash (to its end); 5 of them contain "A".',
    );
    await page.goto(`${base}/groups?group=${encodeURIComponent("eu:4")}`, { waitUntil: "load" });
    expect((await rowsOf(page)).map((row) => row[1])).toEqual(["tenant@eu:42"]);

    // A group leads to its waiting tasks, and its running count to the one leased.
    await clickAndWait(page, "[data-group-link]");
    expect(new URL(page.url()).pathname).toBe(`/q/${queue.name}/tasks/ready`);
    expect(new URL(page.url()).search).toBe("?type=job&group=tenant%40eu%3A42");
    expect(await page.$eval("input[name=group]", (el) => (el as unknown as { value: string }).value)).toBe(
      "tenant@eu:42",
    );
    const listed = () =>
      page.$$eval("tbody tr[data-id]", (rows) => rows.map((row) => row.getAttribute("data-id")).sort());
    expect(await listed()).toEqual(["tenant@eu:42-1", "tenant@eu:42-2"]);
    // "Cancel all" of that list cancels that group's waiting tasks, not every ready task.
    await clickAndWait(page, "input[name=scope] ~ button[value=cancel]");
    expect(dialogs.at(-1)).toBe("confirm: Cancel ALL ready tasks matching the filter?");
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("cancelled 2 of 2 tasks");
    expect((await queue.admin.inspect("tenant@eu:42-1"))?.state).toBe("failed");
    expect((await queue.admin.inspect("alpha-1"))?.state).toBe("ready");
    expect((await queue.stats({ now: Date.now() })).ready).toBe(12 - 2);

    await page.goto(`${base}/groups?group=eu`, { waitUntil: "load" });
    await clickAndWait(page, "tr[data-group-row] [data-field=leased] a");
    expect(new URL(page.url()).pathname).toBe(`/q/${queue.name}/tasks/leased`);
    expect(await listed()).toEqual(["tenant@eu:42-0"]);
    // A held group leads to the FAILED task it waits behind.
    await page.goto(`${base}/groups?group=acme`, { waitUntil: "load" });
    await clickAndWait(page, "tr[data-group-row] [data-field=heldBy] a");
    expect(new URL(page.url()).pathname).toBe(`/q/${queue.name}/task/acme-0`);
    expect(await page.$eval("[data-field=holds]", (el) => el.textContent)).toContain("its group acme waits behind it");
    expect(errors).toEqual([]);
    await page.close();
  });

  it(`reads at most ${GROUPS_READ_PAGES} pages of the groups hash a view, says so, and reads on from there`, async () => {
    const { queue, dashboard, base } = await fixture();
    const total = 12_000;
    await writeGroupRecords(
      queue,
      Array.from({ length: total }, (_, i) => [`g${String(i).padStart(5, "0")}`, 1 + (i % 7)]),
    );
    const { page } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    await page.goto(`${base}/groups`, { waitUntil: "load" });
    const first = await summaryOf(page);
    expect(first).toMatch(
      new RegExp(
        `^\\d+ groups with work read, in ${GROUPS_READ_PAGES} reads of the groups hash, the most one view makes; more follow; showing the ${GROUPS_SHOWN_MAX} most stuck of the \\d+ that match\\. read on →$`,
      ),
    );
    const rows = await rowsOf(page);
    expect(rows).toHaveLength(GROUPS_SHOWN_MAX);
    // Nothing parked: the most waiting first.
    expect(rows[0][2]).toBe("7");
    expect(rows.at(-1)?.[2]).toBe("7");
    await clickAndWait(page, "[data-read-on]");
    const second = await summaryOf(page);
    expect(second).toMatch(
      /^\d+ groups with work read from where the last view stopped, in \d+ reads? of the groups hash/,
    );
    // HSCAN returns every record there all along at least once.
    const readIn = (summary: string) => Number(/^(\d+) groups/.exec(summary)?.[1]);
    let read = readIn(first) + readIn(second);
    let summary = second;
    while (summary.includes("more follow")) {
      await clickAndWait(page, "[data-read-on]");
      summary = await summaryOf(page);
      read += readIn(summary);
    }
    expect(summary).toContain("(to its end)");
    expect(read).toBeGreaterThanOrEqual(total);
    // A cursor that is not one is refused, not echoed as markup.
    const bad = await fetch(`${base}/groups?cursor=%3Cb%3E`, { headers: { cookie: cookieOf(dashboard) } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).not.toContain("<b>");
    await page.close();
  });
});

describe("groups page markup", () => {
  it("shows an oldest waiting column when a group has parked tasks, and none without", async () => {
    const ctx = {
      where: "test Redis",
      readOnly: false,
      csrf: "x",
      allQueues: false,
      refreshMs: 0,
      queueName: "q",
      base: "/q/q",
    };
    const group = {
      type: "job",
      group: "acme",
      leased: 1,
      ready: 2,
      parked: 0,
      heldBy: undefined,
      oldestWaitingAgeMs: undefined,
    };
    const view = { matching: 1, read: 1, pages: 1, filter: "", cursor: "0", next: undefined };
    const withAge = String(
      await groupsPage(ctx, { ...view, groups: [{ ...group, parked: 1, oldestWaitingAgeMs: 90_000 }] }, 0),
    );
    expect(withAge).toContain('<th class="num">oldest waiting</th>');
    expect(withAge).toContain('<td class="num" data-field="oldestWaiting">1.5 min</td>');
    const without = String(await groupsPage(ctx, { ...view, groups: [group] }, 0));
    expect(without).not.toContain('<th class="num">oldest waiting</th>');
  });
});
