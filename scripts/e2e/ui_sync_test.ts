// End-to-end: the web UI's Sync page in a real browser (Debian's chromium
// via playwright-core): a `cairn sync` daemon with the exec driver runs a
// task against `cairn agent -dev`, and the page shows the task and its runs
// from the records the daemon keeps in KV, following new runs live.
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import { browserMissing, launchBrowser, openPage, screenshot } from "./_browser.ts";
import { freePort, startCairn, startDevAgent, tempDir, type Agent, type Proc } from "./harness.ts";

const skip = browserMissing();
let browser: Browser | undefined;
let a: Agent | undefined;
let sync: Proc | undefined;
let dir: { path: string; remove(): void } | undefined;

const MODULE = `#!/bin/sh
cat > /dev/null
if [ "$CTS_ACTION" = inspect ]; then exit 0; fi
echo "applied $CTS_TASK_NAME"
`;

async function put(path: string, body: unknown): Promise<void> {
  const r = await fetch(`${a!.http}${path}`, { method: "PUT", body: JSON.stringify(body) });
  assert.equal(r.status, 200, await r.text());
}

before(async () => {
  if (skip) return;
  [browser, a] = await Promise.all([launchBrowser(), startDevAgent()]);
  dir = tempDir("cairn-ui-sync-");
  writeFileSync(join(dir.path, "module.sh"), MODULE);
  chmodSync(join(dir.path, "module.sh"), 0o755);
  writeFileSync(join(dir.path, "sync.json"), JSON.stringify({
    port: await freePort(),
    buffer_period: { min: "100ms", max: "500ms" },
    consul: { address: a.httpAddr },
    driver: { exec: {} },
    task: [{ name: "web-task", module: "./module.sh", condition: { services: { names: ["web"] } } }],
  }));
  sync = startCairn(["sync", "start", "-bind", "127.0.0.1", "-config-file", join(dir.path, "sync.json")], { cwd: dir.path });
});

after(async () => {
  await sync?.kill();
  await browser?.close();
  await a?.stop();
  dir?.remove();
});

test("ui sync e2e: the Sync page lists a running daemon's task and its runs from KV, and follows a new run", { skip, timeout: 40_000 }, async () => {
  const { page, problems } = await openPage(browser!);
  await page.goto(`${a!.http}/ui/#/dc1/sync`);
  const task = page.locator('[data-task="web-task"]');
  await task.waitFor({ timeout: 20_000 });
  await task.locator("li[data-run]", { hasText: "successful" }).first().waitFor({ timeout: 20_000 });
  const runs = await task.locator("li[data-run]").count();
  // A change the task watches makes the daemon run again: the page shows the new run without a reload.
  await put("/v1/agent/service/register", { ID: "web-1", Name: "web", Port: 80 });
  await page.waitForFunction((n) => document.querySelectorAll('[data-task="web-task"] li[data-run]').length > n, runs, { timeout: 20_000 });
  await task.locator("summary", { hasText: "Output" }).first().click();
  assert.match(await task.innerText(), /applied web-task/, sync!.output());
  await screenshot(page, "sync");
  assert.deepEqual(problems(), []);
});
