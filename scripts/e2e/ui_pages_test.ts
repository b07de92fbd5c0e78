// End-to-end: the web UI's pages in a real browser (Debian's chromium via
// playwright-core) against `cairn agent -dev` holding registered services,
// failing checks, a lock session and KV data: the services list (filters,
// sort) and a service (live update through blocking queries), nodes and a
// node (checks, instances, round-trip times, invalidating a session), the KV
// browser and editor (create / edit / delete round trip, JSON, base64,
// locks, recursive folder delete), errors, keyboard and a narrow window.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { until } from "../../core/testing/until.ts";
import { browserMissing, launchBrowser, openPage, screenshot } from "./_browser.ts";
import { startDevAgent, type Agent } from "./harness.ts";

const skip = browserMissing();
let browser: Browser | undefined;
let a: Agent | undefined;
let agentNode = "";

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const payload: string | Uint8Array | undefined = body === undefined ? undefined : typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
  const r = await fetch(`${a!.http}${path}`, { method, body: payload as BodyInit | undefined });
  return { status: r.status, text: await r.text() };
}

async function ok(method: string, path: string, body?: unknown): Promise<string> {
  const r = await call(method, path, body);
  assert.equal(r.status, 200, `${method} ${path}: ${r.text}`);
  return r.text;
}

function register(node: string, address: string, service: { id: string; name: string; port: number; tags?: string[]; meta?: Record<string, string> }, check: { status: string; output: string }) {
  return ok("PUT", "/v1/catalog/register", {
    Node: node,
    Address: address,
    Service: { ID: service.id, Service: service.name, Port: service.port, Tags: service.tags ?? [], Meta: service.meta ?? {} },
    Check: { CheckID: `${service.id}-check`, Name: `${service.name} health`, Status: check.status, Output: check.output, ServiceID: service.id },
  });
}

before(async () => {
  if (skip) return;
  // Coordinates batched every 100 ms (Consul's default is 5 s) so the round-trip times are there at once.
  [browser, a] = await Promise.all([launchBrowser(), startDevAgent(["-hcl", 'consul { coordinate { update_period = "100ms" } }'])]);
  agentNode = (JSON.parse(await ok("GET", "/v1/agent/self")) as { Config: { NodeName: string } }).Config.NodeName;
  await register("web-1", "10.0.0.1", { id: "web-1", name: "web", port: 8080, tags: ["v1", "blue"], meta: { version: "1.2" } }, { status: "passing", output: "HTTP GET /health: 200 OK" });
  await register("web-2", "10.0.0.2", { id: "web-2", name: "web", port: 8080, tags: ["v1"], meta: { version: "1.2" } }, { status: "critical", output: "dial tcp 10.0.0.2:8080: connection refused" });
  await register("db-1", "10.0.0.3", { id: "db-1", name: "db", port: 5432, tags: ["primary"], meta: { engine: "postgres" } }, { status: "warning", output: "replication lag 12s" });
  await ok("PUT", "/v1/kv/app/config.json", '{"level":"info"}');
  await ok("PUT", "/v1/kv/app/blob", new Uint8Array([0, 159, 146, 150, 255]));
  await ok("PUT", "/v1/kv/app/sub/one", "1");
  await ok("PUT", "/v1/kv/app/sub/two", "2");
});

after(async () => {
  await browser?.close();
  await a?.stop();
});

async function open(path: string, options: { width?: number } = {}): Promise<{ page: Page; problems: () => string[] }> {
  const p = await openPage(browser!, options);
  await p.page.goto(`${a!.http}/ui/${path}`);
  return p;
}

test("ui pages e2e: services list with health counts, tags, server-side filters by name, tag and meta, health filter and sort", { skip, timeout: 30_000 }, async () => {
  const { page, problems } = await open("#/dc1/services");
  const web = page.locator('[data-service="web"]');
  await web.waitFor();
  assert.match(await web.innerText(), /2 instances/);
  assert.match(await web.innerText(), /1 passing/);
  assert.match(await web.innerText(), /1 critical/);
  assert.match(await web.innerText(), /blue/);
  assert.match(await page.locator('[data-service="db"]').innerText(), /1 instance 1 warning|1 instance\s+1 warning/);
  const names = async () => await page.locator(".vrow[data-service]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-service")));
  await until(async () => (await names()).join() === "consul,db,web", "all three services, by name");
  await screenshot(page, "services");

  await page.fill("#service-tag", "blue");
  await until(async () => (await names()).join() === "web", "tag filter");
  await page.fill("#service-tag", "");
  await page.fill("#service-meta", "engine=postgres");
  await until(async () => (await names()).join() === "db", "meta filter");
  await page.fill("#service-meta", "");
  await page.fill("#service-search", "we");
  await until(async () => (await names()).join() === "web", "name search");
  await page.fill("#service-search", "");
  await until(async () => (await names()).length === 3, "filters cleared");
  await page.selectOption("#service-health", "critical");
  await until(async () => (await names()).join() === "web", "health filter");
  await page.selectOption("#service-health", "");
  await page.selectOption("#service-sort", "health");
  await until(async () => (await names()).join() === "web,db,consul", "unhealthiest first");
  // The filters are in the URL, so a reload keeps them.
  assert.match(page.url(), /sort=health/);
  assert.deepEqual(problems(), []);
});

test("ui pages e2e: a service's instances with node, address:port, tags, meta and every check's output, updated live", { skip, timeout: 30_000 }, async () => {
  const { page, problems } = await open("#/dc1/services/web");
  const second = page.locator('[data-instance="web-2"]');
  await second.waitFor();
  assert.equal(await page.locator("li.instance").count(), 2);
  const text = await second.innerText();
  assert.match(text, /10\.0\.0\.2:8080/);
  assert.match(text, /web-2/);
  assert.match(text, /connection refused/);
  assert.match(text, /critical/);
  assert.equal(await second.locator("a", { hasText: "web-2" }).getAttribute("href"), "#/dc1/nodes/web-2");
  await second.locator("summary", { hasText: "Meta" }).click();
  assert.match(await second.locator("dl.meta").innerText(), /version\s+1\.2/);
  await screenshot(page, "service");

  // A blocking query is waiting: the page follows the change without a reload.
  await register("web-2", "10.0.0.2", { id: "web-2", name: "web", port: 8080, tags: ["v1"] }, { status: "passing", output: "HTTP GET /health: 200 OK (recovered)" });
  await second.locator("text=recovered").waitFor();
  assert.doesNotMatch(await page.locator(".summary").innerText(), /critical/);
  await register("web-2", "10.0.0.2", { id: "web-2", name: "web", port: 8080, tags: ["v1"], meta: { version: "1.2" } }, { status: "critical", output: "dial tcp 10.0.0.2:8080: connection refused" });
  await page.locator(".summary", { hasText: "critical" }).waitFor();

  // With live updates off, the page stays as it was loaded.
  await page.uncheck("#live");
  await page.locator('[data-instance="web-2"]').waitFor();
  await register("web-2", "10.0.0.2", { id: "web-2", name: "web", port: 8080, tags: ["v1"] }, { status: "passing", output: "not shown while live updates are off" });
  await new Promise((r) => setTimeout(r, 500));
  assert.doesNotMatch(await page.locator("main").innerText(), /not shown while live updates are off/);
  await page.check("#live");
  await page.locator("text=not shown while live updates are off").waitFor();
  await register("web-2", "10.0.0.2", { id: "web-2", name: "web", port: 8080, tags: ["v1"], meta: { version: "1.2" } }, { status: "critical", output: "dial tcp 10.0.0.2:8080: connection refused" });
  assert.deepEqual(problems(), []);
});

test("ui pages e2e: nodes list and a node with its checks, instances, round-trip times and lock sessions (invalidate)", { skip, timeout: 30_000 }, async () => {
  // Two coordinates a known distance apart: 10 ms along one axis.
  const coord = (x: number) => ({ Vec: [x, 0, 0, 0, 0, 0, 0, 0], Error: 0.2, Adjustment: 0, Height: 0 });
  await ok("PUT", "/v1/coordinate/update", { Node: "web-1", Coord: coord(0) });
  await ok("PUT", "/v1/coordinate/update", { Node: "web-2", Coord: coord(0.01) });
  await until(async () => (JSON.parse(await ok("GET", "/v1/coordinate/nodes")) as unknown[]).length >= 2, "coordinates applied", { timeoutMs: 10_000 });
  const session = (JSON.parse(await ok("PUT", "/v1/session/create", { Node: "web-2", Name: "leader-lock", NodeChecks: [] })) as { ID: string }).ID;

  const { page, problems } = await open("#/dc1/nodes");
  const row = page.locator('[data-node="web-2"]');
  await row.waitFor();
  assert.match(await row.innerText(), /10\.0\.0\.2/);
  assert.match(await row.innerText(), /critical/);
  await page.locator(`[data-node="${agentNode}"]`).waitFor();
  await screenshot(page, "nodes");
  await page.fill("#node-search", "db");
  await until(async () => (await page.locator(".vrow[data-node]").count()) === 1, "node search");

  await page.goto(`${a!.http}/ui/#/dc1/nodes/web-2`);
  await page.locator("#node-checks [data-check='web-2-check']").waitFor();
  assert.match(await page.locator("#node-checks").innerText(), /connection refused/);
  assert.match(await page.locator("#node-services").innerText(), /web\s+web-2\s+10\.0\.0\.2:8080/);
  await page.locator("#node-rtt", { hasText: "Minimum" }).waitFor();
  assert.match(await page.locator("#node-rtt").innerText(), /Minimum\s+10\.00 ms \(web-1\)/);
  const s = page.locator(`[data-session="${session}"]`);
  await s.waitFor();
  assert.match(await s.innerText(), /leader-lock/);
  await screenshot(page, "node");
  await s.locator("button", { hasText: "Invalidate" }).click();
  await s.locator("button", { hasText: "Yes, invalidate" }).click();
  await page.locator("#node-sessions", { hasText: "No sessions" }).waitFor();
  assert.equal(await ok("GET", `/v1/session/info/${session}`), "[]");
  assert.deepEqual(problems(), []);
});

test("ui pages e2e: KV create, edit and delete round trip; JSON check and format; base64; lock holder; recursive folder delete", { skip, timeout: 40_000 }, async () => {
  const lockSession = (JSON.parse(await ok("PUT", "/v1/session/create", { Name: "kv-lock" })) as { ID: string }).ID;
  assert.equal(await ok("PUT", `/v1/kv/locked?acquire=${lockSession}`, "mine"), "true");
  const { page, problems } = await open("#/dc1/kv/");
  await page.locator('[data-key="app/"]').waitFor();
  await page.locator('[data-key="locked"]').waitFor();
  await page.click('[data-key="app/"] a');
  await page.locator('[data-key="app/sub/"]').waitFor();

  // Create.
  await page.click("#kv-create");
  await page.fill("#kv-key", "greeting");
  await page.fill("#kv-value", "hello");
  await page.click("#kv-save");
  await page.locator('[data-key="app/greeting"]').waitFor();
  const get = async (key: string) => {
    const r = await call("GET", `/v1/kv/${key}?raw`);
    return r.status === 200 ? r.text : undefined;
  };
  assert.equal(await get("app/greeting"), "hello");
  // Creating it again is refused with the reason.
  await page.click("#kv-create");
  await page.fill("#kv-key", "greeting");
  await page.fill("#kv-value", "again");
  await page.click("#kv-save");
  await page.locator("#error", { hasText: 'Key "app/greeting" already exists' }).waitFor();
  assert.equal(await get("app/greeting"), "hello");

  // Edit: JSON is checked and formatted.
  await page.goto(`${a!.http}/ui/#/dc1/kv/app/greeting`);
  await page.locator("#kv-value").waitFor();
  assert.equal(await page.inputValue("#kv-value"), "hello");
  await page.fill("#kv-value", '{"greeting": "hello", "to": [1,');
  await page.locator("#kv-json-status", { hasText: "Not valid JSON" }).waitFor();
  assert.equal(await page.isDisabled("#kv-format"), true);
  await page.fill("#kv-value", '{"greeting": "hello", "to": [1, 2]}');
  await page.locator("#kv-json-status", { hasText: "Valid JSON" }).waitFor();
  await page.click("#kv-format");
  await screenshot(page, "kv-editor");
  await page.click("#kv-save");
  await page.locator(".saved", { hasText: "Saved" }).waitFor();
  assert.equal(await get("app/greeting"), '{\n  "greeting": "hello",\n  "to": [\n    1,\n    2\n  ]\n}');
  // Someone else writes meanwhile: saving again is refused rather than overwriting.
  await ok("PUT", "/v1/kv/app/greeting", "changed elsewhere");
  await page.fill("#kv-value", "mine");
  await page.click("#kv-save");
  await page.locator("#error", { hasText: "changed by someone else" }).waitFor();
  assert.equal(await get("app/greeting"), "changed elsewhere");

  // Delete.
  await page.click("#kv-delete");
  await page.click("#kv-confirm-delete");
  await page.locator('[data-key="app/sub/"]').waitFor();
  assert.equal(await get("app/greeting"), undefined);

  // A value that is not text is shown and written as base64.
  await page.goto(`${a!.http}/ui/#/dc1/kv/app/blob`);
  await page.locator("#kv-value").waitFor();
  assert.equal(await page.isChecked("#kv-base64"), true);
  assert.equal(await page.inputValue("#kv-value"), "AJ+Slv8=");
  await page.fill("#kv-value", "AAEC");
  await page.click("#kv-save");
  await page.locator(".saved", { hasText: "Saved" }).waitFor();
  assert.deepEqual(new Uint8Array(await (await fetch(`${a!.http}/v1/kv/app/blob?raw`)).arrayBuffer()), new Uint8Array([0, 1, 2]));

  // Which session holds a lock, and on which node.
  await page.goto(`${a!.http}/ui/#/dc1/kv/locked`);
  await page.locator("#kv-lock", { hasText: lockSession }).waitFor();
  await page.locator("#kv-lock", { hasText: `held by node ${agentNode}` }).waitFor();

  // Search within a folder, then delete the folder and everything under it, after saying how much.
  await page.goto(`${a!.http}/ui/#/dc1/kv/app/`);
  await page.locator('[data-key="app/sub/"]').waitFor();
  await page.fill("#kv-search", "conf");
  await until(async () => (await page.locator(".vrow[data-key]").count()) === 1, "search in folder");
  await page.goto(`${a!.http}/ui/#/dc1/kv/app/sub/`);
  await page.locator('[data-key="app/sub/two"]').waitFor();
  await page.click("#kv-delete-folder");
  await page.locator(".confirm", { hasText: 'Delete "app/sub/" and the 2 keys under it?' }).waitFor();
  await screenshot(page, "kv-folder-delete");
  await page.click("#kv-confirm-delete");
  await page.locator('[data-key="app/config.json"]').waitFor();
  assert.equal(await get("app/sub/one"), undefined);
  assert.equal(await get("app/sub/two"), undefined);
  assert.equal(await get("app/config.json"), '{"level":"info"}');
  assert.deepEqual(problems(), []);
});

test("ui pages e2e: errors say what the API said and what to try; keyboard use; a narrow window", { skip, timeout: 30_000 }, async () => {
  const { page, problems } = await open("#/dc9/services", { width: 360 });
  const error = page.locator("#error");
  await error.waitFor();
  const text = await error.innerText();
  assert.match(text, /Error 500/);
  assert.match(text, /No path to datacenter/, "the API's own message");
  assert.match(text, /pick another in the Datacenter menu/, "what to try");
  await screenshot(page, "error-narrow");
  // Nothing wider than the window.
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), "no horizontal scrolling at 360 px");

  await page.goto(`${a!.http}/ui/#/dc1/services`);
  await page.locator('[data-service="web"]').waitFor();
  // "/" jumps to the search box; Tab reaches the links; Enter follows one.
  await page.locator("h1").focus();
  await page.keyboard.press("/");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "service-search");
  await page.keyboard.type("db");
  await until(async () => (await page.locator(".vrow[data-service]").count()) === 1, "typed search");
  let reached = false;
  for (let i = 0; i < 12 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate(() => document.activeElement?.textContent === "db");
  }
  assert.ok(reached, "Tab reaches the service's link");
  await page.keyboard.press("Enter");
  await page.locator('[data-instance="db-1"]').waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.tagName), "H1", "a new page puts the focus on its heading");
  assert.deepEqual(problems().filter((p) => !/status of 500/.test(p)), []);
});
