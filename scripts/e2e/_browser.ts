// The browser for the web UI's end-to-end tests: Debian's chromium
// (/usr/bin/chromium, `apt-get install chromium`; .ci/run installs it)
// driven by playwright-core, which never downloads a browser. Playwright
// gives every launch a fresh temporary profile and removes it on close.
// The flags keep chromium off the network: no update checks, no sync, no
// QUIC, nothing fetched in the background (the test machine has none).
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

export const chromiumPath = process.env.CAIRN_CHROMIUM ?? "/usr/bin/chromium";

/** Where the tests' screenshots go (CI keeps them as artefacts): CAIRN_E2E_ARTIFACTS, default .tmp/ui-screenshots. */
export const screenshotDir = resolve(process.env.CAIRN_E2E_ARTIFACTS ?? join(import.meta.dirname, "../../.tmp"), "ui-screenshots");

/** Save the whole page as <screenshotDir>/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `${name}.png`), fullPage: true });
}

/** Why the browser tests cannot run here, or undefined when they can (node:test `skip`). */
export function browserMissing(): string | undefined {
  return existsSync(chromiumPath) ? undefined : `${chromiumPath} is not installed: apt-get install -y chromium (.ci/run does)`;
}

export async function launchBrowser(): Promise<Browser> {
  return await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
}

/** A page whose console errors and failed requests fail the test (collected, checked with `problems()`). */
export async function openPage(browser: Browser, options: { width?: number; height?: number } = {}): Promise<{ page: Page; problems: () => string[] }> {
  const context = await browser.newContext({ viewport: { width: options.width ?? 1200, height: options.height ?? 800 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (msg) => {
    if (msg.type() === "error" && !/Failed to load resource: the server responded with a status of (403|404|409)/.test(msg.text())) problems.push(`console: ${msg.text()}`);
  });
  // Anything not on the agent itself would be fetched from elsewhere: the UI must need nothing else.
  page.on("request", (req) => {
    const url = new URL(req.url());
    if (url.hostname !== "127.0.0.1") problems.push(`request off the agent: ${req.url()}`);
  });
  page.setDefaultTimeout(10_000);
  return { page, problems: () => problems };
}
