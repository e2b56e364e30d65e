// The dashboard tests' pages in a real headless Chromium (bin/browser.ts launches it).
import type { Browser, Page } from "puppeteer-core";

/** A page that records every dialog (accepting it) and every console error. */
export async function newPage(browser: Browser) {
  const page: Page = await browser.newPage();
  const dialogs: string[] = [];
  const errors: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.accept();
  });
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(String(error)));
  return { page, dialogs, errors };
}

/** Clicks `selector` and waits for the page it leads to. */
export async function clickAndWait(page: Page, selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
}
