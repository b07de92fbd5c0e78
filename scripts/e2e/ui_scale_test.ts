// End-to-end: the web UI with 10,000 services and 100,000 keys in a real
// browser (Debian's chromium via playwright-core). The lists hold only the
// rows in view, the name search is the server's (?filter), and the page
// makes a handful of requests, not one per row.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import { until } from "../../core/testing/until.ts";
import { browserMissing, launchBrowser, openPage, screenshot } from "./_browser.ts";
import { startDevAgent, type Agent } from "./harness.ts";

const skip = browserMissing();
let browser: Browser | undefined;
let a: Agent | undefined;

async function txn(ops: unknown[]): Promise<void> {
  const r = await fetch(`${a!.http}/v1/txn`, { method: "PUT", body: JSON.stringify(ops) });
  assert.equal(r.status, 200, await r.text());
}

/** `count` items in /v1/txn batches of 128 (its limit), a few batches at a time. */
async function inBatches(count: number, op: (i: number) => unknown): Promise<void> {
  const batches: unknown[][] = [];
  for (let i = 0; i < count; i += 128) batches.push(Array.from({ length: Math.min(128, count - i) }, (_, k) => op(i + k)));
  for (let i = 0; i < batches.length; i += 8) await Promise.all(batches.slice(i, i + 8).map((b) => txn(b)));
}

before(async () => {
  if (skip) return;
  [browser, a] = await Promise.all([launchBrowser(), startDevAgent()]);
  await txn([{ Node: { Verb: "set", Node: { Node: "bulk", Address: "10.1.0.1" } } }]);
  const pad = (i: number) => String(i).padStart(5, "0");
  await inBatches(10_000, (i) => ({ Service: { Verb: "set", Node: "bulk", Service: { ID: `svc-${pad(i)}`, Service: `svc-${pad(i)}`, Port: 1000 + (i % 50_000), Tags: i % 2 ? ["odd"] : ["even"] } } }));
  await inBatches(100_000, (i) => ({ KV: { Verb: "set", Key: `big/key-${String(i).padStart(6, "0")}`, Value: "eA==" } }));
});

after(async () => {
  await browser?.close();
  await a?.stop();
});

test("ui scale e2e: 10,000 services: a few dozen rows in the DOM, scrolling reaches the last, search is the server's, no request per row", { skip, timeout: 50_000 }, async () => {
  const { page, problems } = await openPage(browser!);
  const requests: string[] = [];
  page.on("request", (r) => requests.push(new URL(r.url()).pathname));
  const list = "/v1/internal/ui/services";
  await page.goto(`${a!.http}/ui/#/dc1/services`);
  await page.locator(".summary", { hasText: "10001 services" }).waitFor({ timeout: 20_000 });
  const rows = await page.locator(".vrow").count();
  assert.ok(rows > 10 && rows < 100, `rows in the DOM: ${rows}`);
  const api = requests.filter((p) => p.startsWith("/v1/"));
  assert.ok(api.length <= 6, `API requests for the whole list: ${api.join(" ")}`);

  await page.locator(".vlist").evaluate((el) => (el.scrollTop = el.scrollHeight));
  await page.locator('[data-service="svc-09999"]').waitFor();
  assert.match(await page.locator('[data-service="svc-09999"]').innerText(), /1 instance/);
  await screenshot(page, "services-10000");
  assert.ok((await page.locator(".vrow").count()) < 100);

  const before = requests.length;
  await page.fill("#service-search", "svc-0999");
  await page.locator(".summary", { hasText: "10 services" }).waitFor();
  const searches = requests.slice(before).filter((p) => p === list);
  assert.ok(searches.length >= 1, "the search went to the server");
  assert.deepEqual(problems(), []);
});

test("ui scale e2e: a folder of 100,000 keys lists in one request, holds a few dozen rows, and searches", { skip, timeout: 50_000 }, async () => {
  const { page, problems } = await openPage(browser!);
  const requests: string[] = [];
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(`${a!.http}/ui/#/dc1/kv/big/`);
  await page.locator(".summary", { hasText: "100000 items" }).waitFor({ timeout: 20_000 });
  assert.ok((await page.locator(".vrow").count()) < 100);
  // One listing; after it only the blocking query that waits for changes (?index=).
  const listings = requests.filter((u) => u.includes("/v1/kv/big/"));
  assert.equal(listings.filter((u) => !/[?&]index=/.test(u)).length, 1, listings.join(" "));
  assert.ok(listings.length <= 2, listings.join(" "));
  await page.locator(".vlist").evaluate((el) => (el.scrollTop = el.scrollHeight));
  await page.locator('[data-key="big/key-099999"]').waitFor();
  await page.fill("#kv-search", "key-05000");
  await page.locator(".summary", { hasText: "10 items" }).waitFor();
  assert.deepEqual(problems(), []);
});
