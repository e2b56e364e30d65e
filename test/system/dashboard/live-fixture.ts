// What the live-update tests share (live.test.ts, live-pages.test.ts): a fresh queue on the real
// Redis and a dashboard over it polling every `refreshMs`, both closed with the file's browser; and
// what they ask of a page (whether an element is shown, a tab hidden or shown again).
import type { Page } from "puppeteer-core";
import { type RunningDashboard, startDashboard } from "../../../cli/dashboard/server.js";
import { type Adapter, adapters, openQueue, type TestQueueOptions } from "../../helpers/stores.js";

const tcp = adapters.find((adapter) => adapter.name === "tcp") as Adapter;

/** How often the pages of these tests poll: short, so that a test waits little. */
export const REFRESH_MS = 200;

/** Long enough for any update the page has coming, on a loaded machine. */
export const UPDATE_TIMEOUT_MS = 10_000;

/** A queue (with `options`) and a dashboard over it; `running` gets what closes them. */
export async function liveFixture(
  running: Array<() => Promise<void>>,
  options: { queue?: TestQueueOptions; refreshMs?: number } = {},
) {
  const opened = await openQueue(tcp, options.queue);
  running.push(opened.close);
  const dashboard = await startDashboard({
    queue: opened.queue,
    where: "test Redis",
    port: 0,
    refreshMs: options.refreshMs ?? REFRESH_MS,
    log: () => {},
  });
  running.push(dashboard.close);
  const base = `${new URL(dashboard.url).origin}/q/${opened.queue.name}`;
  return { queue: opened.queue, dashboard, base };
}

export const cookieOf = (dashboard: RunningDashboard) => `${dashboard.cookieName}=${dashboard.token}`;

/** Whether the element of `selector` is shown (not hidden, itself or by an ancestor). */
export const isShown = (page: Page, selector: string) => page.$eval(selector, (el) => el.getClientRects().length > 0);

/** Tells the page its tab is hidden (or shown again), as the browser does when the user switches tabs. */
export async function setTabHidden(page: Page, hidden: boolean) {
  await page.evaluate(`(() => {
    Object.defineProperty(document, "hidden", { configurable: true, get: () => ${hidden} });
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "${hidden ? "hidden" : "visible"}" });
    document.dispatchEvent(new Event("visibilitychange"));
  })()`);
}
