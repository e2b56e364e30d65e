// Real headless Chromium through puppeteer-core, for the dashboard's browser tests
// (test/system/dashboard) and its screenshots (bin/screenshots.ts). A missing browser is a failure
// naming what to install, not a skip: `.ci/run` installs Debian's chromium.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer, { type Browser } from "puppeteer-core";

/** Debian's chromium, or the browser CHROMIUM_PATH names. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export async function launchBrowser(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install it (apt-get install -y chromium); the browser tests need it`);
  }
  const userDataDir = mkdtempSync(join(tmpdir(), "leaseq-chromium-"));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
