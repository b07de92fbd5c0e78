// End-to-end: the web UI's ACL pages in a real browser (Debian's chromium
// via playwright-core) against `cairn agent -dev` with ACLs on and
// default_policy deny: without a token the pages say what to do; a token
// entered under Settings is kept in the browser and sent as X-Consul-Token;
// tokens, policies (rules, create, delete) and roles.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import { browserMissing, launchBrowser, openPage, screenshot } from "./_browser.ts";
import { startDevAgent, type Agent } from "./harness.ts";

let browser: Browser | undefined;
let a: Agent | undefined;
const root = "5e7d1a43-8a52-4b8e-9d0c-6f1f2b3c4d5e";

async function acl(method: string, path: string, body?: unknown): Promise<any> {
  const r = await fetch(`${a!.http}${path}`, { method, headers: { "X-Consul-Token": root }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  assert.equal(r.status, 200, `${method} ${path}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const skip = browserMissing();

before(async () => {
  if (skip) return;
  [browser, a] = await Promise.all([launchBrowser(), startDevAgent(["-hcl", `acl {\n enabled = true\n default_policy = "deny"\n tokens { initial_management = "${root}" }\n}`])]);
});

after(async () => {
  await browser?.close();
  await a?.stop();
});

test("ui acl e2e: without a token the API's refusal and what to try; with one from Settings, tokens, policies (create, rules, delete) and roles", { skip, timeout: 40_000 }, async () => {
  const policy = await acl("PUT", "/v1/acl/policy", { Name: "kv-reader", Description: "reads app/", Rules: 'key_prefix "app/" { policy = "read" }' });
  await acl("PUT", "/v1/acl/role", { Name: "readers", Description: "read-only people", Policies: [{ ID: policy.ID }] });
  const doomed = await acl("PUT", "/v1/acl/token", { Description: "ci token", Policies: [{ ID: policy.ID }] });

  const { page, problems } = await openPage(browser!);
  await page.goto(`${a!.http}/ui/#/dc1/acl/tokens`);
  const error = page.locator("#error");
  await error.waitFor();
  assert.match(await error.innerText(), /Error 403/);
  assert.match(await error.innerText(), /Settings/);

  await page.click("nav.top a[data-section=settings]");
  await page.fill("#token", root);
  await page.click("#token-save");
  await page.locator(".saved", { hasText: "Token saved" }).waitFor();
  assert.equal(await page.evaluate(() => localStorage.getItem("cairn-ui-token")), root);
  const sent: string[] = [];
  page.on("request", (r) => {
    if (new URL(r.url()).pathname.startsWith("/v1/acl/")) sent.push(r.headers()["x-consul-token"] ?? "");
  });

  await page.click("nav.top a[data-section=acl]");
  await page.locator(`[data-token="${doomed.AccessorID}"]`).waitFor();
  assert.match(await page.locator("main").innerText(), /Initial Management Token/);
  assert.match(await page.locator(`[data-token="${doomed.AccessorID}"]`).innerText(), /Policies: kv-reader/);
  await screenshot(page, "acl-tokens");
  await page.click(`[data-delete="${doomed.AccessorID}"]`);
  await page.click(`[data-confirm="${doomed.AccessorID}"]`);
  await page.locator(`[data-token="${doomed.AccessorID}"]`).waitFor({ state: "detached" });
  const r = await fetch(`${a!.http}/v1/acl/token/${doomed.AccessorID}`, { headers: { "X-Consul-Token": root } });
  assert.notEqual(r.status, 200, "the token is gone");

  await page.click("nav.tabs a:has-text('Policies')");
  await page.locator('[data-policy="kv-reader"]').waitFor();
  await page.click("details.create summary");
  await page.fill("#policy-name", "svc-writer");
  await page.fill("#policy-rules", 'service_prefix "" { policy = "write" }');
  await page.click("#policy-create");
  await page.locator('[data-policy="svc-writer"]').waitFor();
  const policies = (await acl("GET", "/v1/acl/policies")) as { Name: string }[];
  assert.ok(policies.some((p) => p.Name === "svc-writer"));
  await page.click('[data-policy="kv-reader"] a');
  await page.locator("#policy-rules-view", { hasText: 'key_prefix "app/"' }).waitFor();

  await page.goto(`${a!.http}/ui/#/dc1/acl/roles`);
  await page.locator('[data-role="readers"]', { hasText: "Policies: kv-reader" }).waitFor();
  assert.ok(sent.length > 0 && sent.every((t) => t === root), `X-Consul-Token on every ACL call: ${JSON.stringify(sent)}`);
  assert.deepEqual(problems(), []);
});

test("ui acl e2e: with ACLs off the page says so and how to turn them on", { skip, timeout: 30_000 }, async () => {
  const plain = await startDevAgent();
  try {
    const { page } = await openPage(browser!);
    await page.goto(`${plain.http}/ui/#/dc1/acl/tokens`);
    await page.locator("#error", { hasText: "acl { enabled = true }" }).waitFor();
    assert.match(await page.locator("#error").innerText(), /Error 401: ACL support disabled/);
  } finally {
    await plain.stop();
  }
});
