// End-to-end: the web UI in a real browser (Debian's chromium through
// playwright-core, scripts/e2e/_browser.ts) against `cairn agent -dev` (the
// built binary, UI on as in Consul's -dev). Skipped, saying why, only when
// /usr/bin/chromium is absent.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import { browserMissing, launchBrowser, openPage } from "./_browser.ts";
import { startDevAgent, type Agent } from "./harness.ts";

const skip = browserMissing();
let browser: Browser | undefined;
before(async () => {
  if (!skip) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

test("ui e2e: / redirects to /ui/, the page and its assets come from the binary, it lists the agent's datacenter and services", { skip, timeout: 60_000 }, async () => {
  const a = await startDevAgent();
  try {
    const root = await fetch(`${a.http}/`, { redirect: "manual" });
    assert.equal(root.status, 301);
    assert.equal(root.headers.get("location"), "/ui/");
    const index = await fetch(`${a.http}/ui/`);
    assert.equal(index.status, 200);
    assert.match(await index.text(), /<base href="\/ui\/">/);
    assert.equal((await fetch(`${a.http}/ui/assets/ui.js`)).headers.get("content-type"), "text/javascript; charset=utf-8");
    assert.equal((await fetch(`${a.http}/v1/nope`)).status, 404, "the API's own 404 is untouched");
    // The services list's one request: names, tags and instance counts, filtered by the server, blocking.
    const list = await fetch(`${a.http}/v1/internal/ui/services?filter=${encodeURIComponent('ServiceName == "consul"')}`);
    assert.deepEqual(await list.json(), [{ Name: "consul", Datacenter: "dc1", Tags: [], InstanceCount: 1 }]);
    assert.ok(Number(list.headers.get("x-consul-index")) > 0);

    const { page, problems } = await openPage(browser!);
    await page.goto(`${a.http}/`);
    await page.locator('[data-service="consul"]').waitFor();
    assert.match(page.url(), /\/ui\/#\/dc1\/services$/);
    assert.equal(await page.locator("#dc").inputValue(), "dc1");
    assert.equal(await page.locator("h1").textContent(), "Services");
    assert.deepEqual(problems(), []);
  } finally {
    await a.stop();
  }
});

test("ui e2e: ui_config.content_path moves it; with the UI off there is no /ui/ and / is a 404", { skip, timeout: 60_000 }, async () => {
  const moved = await startDevAgent(["-hcl", 'ui_config { content_path = "console" }']);
  let off: Agent | undefined;
  try {
    assert.equal((await fetch(`${moved.http}/`, { redirect: "manual" })).headers.get("location"), "/console/");
    assert.equal((await fetch(`${moved.http}/ui/`)).status, 404);
    const { page, problems } = await openPage(browser!);
    await page.goto(`${moved.http}/console/`);
    await page.locator('[data-service="consul"]').waitFor();
    assert.deepEqual(problems(), []);

    off = await startDevAgent(["-hcl", "ui_config { enabled = false }"]);
    assert.equal((await fetch(`${off.http}/ui/`)).status, 404);
    assert.equal((await fetch(`${off.http}/`, { redirect: "manual" })).status, 404);
  } finally {
    await moved.stop();
    await off?.stop();
  }
});
