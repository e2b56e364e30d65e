// The browser lifecycle of a dashboard test file (kept apart from browser.ts, which the screenshots
// script imports outside vitest).
import type { Browser } from "puppeteer-core";
import { afterAll, afterEach, beforeAll } from "vitest";
import { launchBrowser } from "../../../bin/browser.js";

/**
 * For one test file: a Chromium for all its tests (`browser()`), and `running`, closers run after
 * each test, last first (its dashboards, its stores).
 */
export function browserPerFile() {
  let browser: Browser | undefined;
  let close: () => Promise<void> = async () => {};
  const running: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    ({ browser, close } = await launchBrowser());
  });
  afterAll(async () => {
    await close();
  });
  afterEach(async () => {
    for (const closer of running.splice(0).reverse()) await closer();
  });
  return {
    browser: (): Browser => {
      if (!browser) throw new Error("the browser is not started (beforeAll)");
      return browser;
    },
    running,
  };
}
