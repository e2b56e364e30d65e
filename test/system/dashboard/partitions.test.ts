// The dashboard of a partitioned queue (docs/partitions.md, docs/dashboard.md "Partitions"), in real
// Chromium over the real Redis: its overview sums the partitions and lists each, a partition's link
// leads to its own lists, tasks and actions, a partition it does not have is a 404 page, the
// all-queues page lists it once, and a queue of one partition looks as it always did.
import { describe, expect, it } from "vitest";
import { type RunningDashboard, type StartOptions, startDashboard } from "../../../cli/dashboard/server.js";
import { PartitionedQueue } from "../../../shared/partitioned-queue.js";
import { TcpStore } from "../../../shared/stores/tcp.js";
import { duration } from "../../../shared/text.js";
import { type Adapter, adapters, openQueue, redisUrl, uniqueQueueName } from "../../helpers/stores.js";
import { clickAndWait, newPage } from "./browser.js";
import { browserPerFile } from "./browser-per-file.js";

const tcp = adapters.find((adapter) => adapter.name === "tcp") as Adapter;

const { browser, running } = browserPerFile();

const COUNTS = ["ready", "scheduled", "leased", "done", "failed"] as const;

/**
 * A 3-partition queue on the real Redis whose partitions hold different tasks at `now`:
 * partition 0 two READY (waiting 1 min) and one DONE; partition 1 one READY (30 s) and one FAILED;
 * partition 2 four READY (2 min), one SCHEDULED and one LEASED. Deleted after the file.
 */
/** The dashboard of a partitioned queue's partitions, closed with the file's browser. */
async function servePartitions(
  queue: PartitionedQueue,
  options: Partial<StartOptions> = {},
): Promise<RunningDashboard> {
  const dashboard = await startDashboard({
    partitions: queue.partitions,
    where: "test Redis",
    port: 0,
    log: () => {},
    ...options,
  });
  running.push(dashboard.close);
  return dashboard;
}

async function partitionedQueue(now: number) {
  const store = TcpStore.fromUrl(redisUrl());
  running.push(() => store.close());
  const queue = new PartitionedQueue(store, {
    name: uniqueQueueName("dash-p"),
    partitions: 3,
    settings: { trustCallerClock: true },
  });
  await queue.configure();
  // Ids routed to each partition (an ungrouped task's partition is its id's).
  const idsOf = (partition: number, prefix: string, count: number) => {
    const ids: string[] = [];
    for (let i = 0; ids.length < count; i++) {
      if (queue.partitionFor({ id: `${prefix}-${i}` }) === partition) ids.push(`${prefix}-${i}`);
    }
    return ids;
  };
  const ready = [idsOf(0, "a", 3), idsOf(1, "b", 2), idsOf(2, "c", 5)];
  const waitedMs = [60_000, 30_000, 120_000];
  for (const [partition, ids] of ready.entries()) {
    await queue.enqueue(
      ids.map((id) => ({ id, type: "email" })),
      { now: now - waitedMs[partition] },
    );
  }
  const [scheduled] = idsOf(2, "s", 1);
  await queue.enqueue([{ id: scheduled, type: "email", delayMs: 600_000 }], { now });
  // Each claim takes its partition's head: its first id.
  const [done] = await queue.claim({ partition: 0, count: 1, now });
  await queue.ack([done], { now });
  const [failed] = await queue.claim({ partition: 1, count: 1, now });
  await queue.settle([{ ...failed, outcome: "fail", error: "SMTP 550" }], { now });
  const [leased] = await queue.claim({ partition: 2, count: 1, now });
  return {
    queue,
    store,
    failed: failed.id,
    leased: leased.id,
    readyOf: (partition: number) => ready[partition].filter((id) => ![done.id, failed.id, leased.id].includes(id)),
  };
}

const cookieOf = (dashboard: RunningDashboard) => `${dashboard.cookieName}=${dashboard.token}`;

describe("dashboard of a partitioned queue, in real Chromium", { timeout: 60_000 }, () => {
  it("the overview sums the partitions and lists each; partition 2's link leads to its tasks only and a task's page", async () => {
    const now = Date.now();
    const { queue, readyOf, leased } = await partitionedQueue(now);
    const dashboard = await servePartitions(queue, { now: () => now });
    const { page, errors } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    const base = `/q/${queue.name}`;
    expect(new URL(page.url()).pathname).toBe(`${base}/`);
    expect(await page.$eval("[data-partitions]", (el) => el.textContent)).toBe("3 partitions");

    // The sum, ages the oldest of any partition.
    const cards = await page.$$eval("[data-count]", (cells) =>
      Object.fromEntries(cells.map((cell) => [cell.getAttribute("data-count"), Number(cell.textContent)])),
    );
    expect(cards).toEqual({ ready: 7, scheduled: 1, leased: 1, done: 1, failed: 1, corrupt: 0 });
    expect(await page.$eval("[data-oldest-ready]", (el) => el.textContent)).toBe(duration(120_000));
    // Each partition's counts, as its row shows them.
    const rows = await page.$$eval("tr[data-partition-row]", (found) =>
      found.map((row) =>
        Object.fromEntries(
          [...row.querySelectorAll("[data-field]")].map((cell) => [cell.getAttribute("data-field"), cell.textContent]),
        ),
      ),
    );
    expect(rows).toEqual([
      {
        partition: "partition 0",
        ready: "2",
        scheduled: "0",
        leased: "0",
        done: "1",
        failed: "0",
        oldestReady: duration(60_000),
        paused: "running",
      },
      {
        partition: "partition 1",
        ready: "1",
        scheduled: "0",
        leased: "0",
        done: "0",
        failed: "1",
        oldestReady: duration(30_000),
        paused: "running",
      },
      {
        partition: "partition 2",
        ready: "4",
        scheduled: "1",
        leased: "1",
        done: "0",
        failed: "0",
        oldestReady: duration(120_000),
        paused: "running",
      },
    ]);
    // The figures are the library's own.
    const { partitions } = await queue.stats({ now });
    expect(rows.map((row) => COUNTS.map((state) => Number(row[state])))).toEqual(
      partitions.map((stats) => COUNTS.map((state) => stats[state])),
    );

    // Partition 2's pages: its overview, its READY list (its tasks only), a task's page.
    await clickAndWait(page, 'tr[data-partition-row="2"] a[data-partition-link]');
    expect(new URL(page.url()).pathname).toBe(`${base}/p/2/`);
    expect(await page.$eval("[data-partition]", (el) => el.textContent)).toBe("partition 2");
    const partitionCards = await page.$$eval("[data-count]", (cells) =>
      Object.fromEntries(cells.map((cell) => [cell.getAttribute("data-count"), Number(cell.textContent)])),
    );
    expect(partitionCards).toEqual({ ready: 4, scheduled: 1, leased: 1, done: 0, failed: 0, corrupt: 0 });
    await clickAndWait(page, `header a[href="${base}/p/2/tasks/ready"]`);
    const listed = await page.$$eval("tr[data-id]", (found) => found.map((row) => row.getAttribute("data-id")));
    expect(listed.sort()).toEqual(readyOf(2).sort());
    const [first] = readyOf(2);
    await clickAndWait(page, `tr[data-id="${first}"] a`);
    expect(new URL(page.url()).pathname).toBe(`${base}/p/2/task/${first}`);
    expect(await page.$eval("[data-field=id]", (el) => el.textContent)).toBe(first);
    expect(await page.$eval("[data-field=state]", (el) => el.textContent)).toBe("ready");
    // Its state's link stays in the partition.
    expect(await page.$eval("[data-field=state] a", (el) => el.getAttribute("href"))).toBe(`${base}/p/2/tasks/ready`);

    // The overview's search finds a task in whichever partition holds it.
    await page.goto(`${new URL(dashboard.url).origin}${base}/`, { waitUntil: "load" });
    await page.type("header input[name=id]", leased);
    await clickAndWait(page, "header form[role=search] button");
    expect(new URL(page.url()).pathname).toBe(`${base}/p/2/task/${leased}`);
    expect(await page.$eval("[data-field=state]", (el) => el.textContent)).toBe("leased");
    expect(errors).toEqual([]);
    await page.close();
  });

  it("an action acts on its partition only: partition 1's FAILED task requeued from its page", async () => {
    const now = Date.now();
    const { queue, failed } = await partitionedQueue(now);
    const dashboard = await servePartitions(queue);
    const { page, dialogs } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    await clickAndWait(page, 'tr[data-partition-row="1"] [data-field=failed] a');
    expect(new URL(page.url()).pathname).toBe(`/q/${queue.name}/p/1/tasks/failed`);
    await clickAndWait(page, `tr[data-id="${failed}"] a`);
    await clickAndWait(page, "button[value=requeue]");
    expect(dialogs).toEqual([`confirm: Requeue task ${failed}?`]);
    expect(await page.$eval("[data-result]", (el) => el.textContent)).toContain("requeued 1 of 1 task");
    expect(await queue.partitions[1].admin.inspect(failed)).toMatchObject({ state: "ready" });
    const { partitions } = await queue.stats({ now: Date.now() });
    expect(partitions.map((stats) => [stats.ready, stats.failed])).toEqual([
      [2, 0],
      [2, 0],
      [4, 0],
    ]);
    await page.close();
  });

  it("the overview's sum and partitions' rows update live", async () => {
    const { queue } = await partitionedQueue(Date.now());
    const dashboard = await servePartitions(queue, { refreshMs: 200 });
    const { page, errors } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    expect(await page.$eval('tr[data-partition-row="1"] [data-field=ready]', (el) => el.textContent)).toBe("1");
    const [id] = Array.from({ length: 100 }, (_, i) => `live-${i}`).filter(
      (each) => queue.partitionFor({ id: each }) === 1,
    );
    await queue.enqueue([{ id, type: "email" }], { now: Date.now() });
    const textOf = (selector: string) => `document.querySelector('${selector}')?.textContent`;
    await page.waitForFunction(
      `${textOf('tr[data-partition-row="1"] [data-field=ready]')} === "2" && ${textOf('[data-count="ready"]')} === "8"`,
    );
    // The rows drawn again keep their links.
    expect(await page.$eval('tr[data-partition-row="1"] a[data-partition-link]', (el) => el.getAttribute("href"))).toBe(
      `/q/${queue.name}/p/1/`,
    );
    expect(errors).toEqual([]);
    await page.close();
  });

  it("a partition the queue does not have, or a partitioned queue's page without one, is a clear 404 page", async () => {
    const { queue } = await partitionedQueue(Date.now());
    const dashboard = await servePartitions(queue);
    const origin = new URL(dashboard.url).origin;
    const base = `${origin}/q/${queue.name}`;
    const { page, dialogs, errors } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    const visit = async (path: string) => {
      const response = await page.goto(`${base}${path}`, { waitUntil: "load" });
      return {
        status: response?.status(),
        title: await page.$eval("h1", (el) => el.textContent),
        message: await page.$eval("[data-message]", (el) => el.textContent),
      };
    };
    for (const [path, partition] of [
      ["/p/3/", 3],
      ["/p/3/tasks/ready", 3],
      ["/p/64/task/x", 64],
    ]) {
      expect(await visit(`${path}`)).toEqual({
        status: 404,
        title: "Not found",
        message: `Queue "${queue.name}" has 3 partitions, 0 to 2: no partition ${partition}.`,
      });
    }
    // Not a number: not echoed, and no markup runs.
    for (const path of ["/p/-1/", "/p/01/", "/p/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E/"]) {
      expect(await visit(path)).toEqual({
        status: 404,
        title: "Not found",
        message: `Queue "${queue.name}" has 3 partitions, 0 to 2: the path names none of them.`,
      });
    }
    expect(dialogs).toEqual([]);
    // A list without a partition names the partitions, each a link to the same list there.
    expect(await visit("/tasks/ready?type=email")).toMatchObject({ status: 404 });
    expect(await page.$$eval("[data-links] a", (links) => links.map((link) => link.getAttribute("href")))).toEqual(
      [0, 1, 2].map((k) => `/q/${queue.name}/p/${k}/tasks/ready?type=email`),
    );
    // An action without a partition changes nothing.
    const action = await fetch(`${base}/action`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: cookieOf(dashboard), origin },
      body: new URLSearchParams({ _csrf: dashboard.csrf, action: "pause" }),
    });
    expect(action.status).toBe(404);
    expect((await queue.stats({ now: Date.now() })).partitions.map((stats) => stats.paused)).toEqual([
      false,
      false,
      false,
    ]);
    expect(errors.filter((error) => !error.includes("404"))).toEqual([]);
    await page.close();
  });

  it("the all-queues page lists a partitioned queue once, summed, leading to its overview", async () => {
    const now = Date.now();
    const { queue, store } = await partitionedQueue(now);
    const dashboard = await startDashboard({ store, where: "test Redis", port: 0, now: () => now, log: () => {} });
    running.push(dashboard.close);
    const { page } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    await page.goto(`${new URL(dashboard.url).origin}/?name=${queue.name}`, { waitUntil: "load" });
    const rows = await page.$$eval("tr[data-queue-row]", (found) =>
      found.map((row) => row.getAttribute("data-queue-row")),
    );
    expect(rows).toEqual([queue.name]);
    const row = `tr[data-queue-row="${queue.name}"]`;
    expect(
      await page.$$eval(`${row} [data-count]`, (cells) =>
        Object.fromEntries(cells.map((cell) => [cell.getAttribute("data-count"), Number(cell.textContent)])),
      ),
    ).toEqual({ ready: 7, scheduled: 1, leased: 1, done: 1, failed: 1, corrupt: 0 });
    expect(await page.$eval(`${row} [data-partitions]`, (el) => el.textContent)).toBe("3 partitions");
    expect(await page.$eval(`${row} [data-hour-done]`, (el) => el.textContent)).toBe("1");
    expect(await page.$eval(`${row} [data-hour-failed]`, (el) => el.textContent)).toBe("1");
    await clickAndWait(page, `${row} a[data-queue-link]`);
    expect(await page.$$eval("tr[data-partition-row]", (found) => found.length)).toBe(3);
    await page.close();
  });

  it("a queue of one partition looks as it always did: no partitions, its lists its own", async () => {
    const opened = await openQueue(tcp);
    running.push(opened.close);
    const { queue } = opened;
    await queue.enqueue([{ id: "only-1", type: "email" }], { now: Date.now() });
    const dashboard = await startDashboard({ queue, where: "test Redis", port: 0, log: () => {} });
    running.push(dashboard.close);
    const { page } = await newPage(browser());
    await page.goto(dashboard.url, { waitUntil: "load" });
    const base = `/q/${queue.name}`;
    expect(new URL(page.url()).pathname).toBe(`${base}/`);
    expect(
      await page.$$eval("[data-partitions], [data-partition], [data-partitions-table]", (found) => found.length),
    ).toBe(0);
    expect(
      await page.$eval('[data-count="ready"]', (el) => [el.textContent, el.closest("a")?.getAttribute("href")]),
    ).toEqual(["1", `${base}/tasks/ready`]);
    expect(await page.$$eval("#pause-queue", (found) => found.length)).toBe(1);
    await clickAndWait(page, '[data-count="ready"]');
    expect(await page.$$eval("tr[data-id]", (found) => found.map((row) => row.getAttribute("data-id")))).toEqual([
      "only-1",
    ]);
    const response = await page.goto(`${new URL(dashboard.url).origin}${base}/p/0/`, { waitUntil: "load" });
    expect(response?.status()).toBe(404);
    expect(await page.$eval("[data-message]", (el) => el.textContent)).toBe(
      `Queue "${queue.name}" has one partition: its pages are under ${base}/.`,
    );
    await page.close();
  });
});
