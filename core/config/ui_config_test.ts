import assert from "node:assert/strict";
import { test } from "node:test";
import { buildConfig } from "./load.ts";
import { validateConfig } from "./validate.ts";

const hcl = (...lines: string[]) => buildConfig({ hcl: lines, flags: { dataDir: "/tmp/x" } });

test("ui_config: off by default, on with ui_config.enabled, the older ui key, or -dev", () => {
  assert.deepEqual(hcl().uiConfig, { enabled: false, contentPath: "/ui/" });
  assert.equal(hcl("ui_config { enabled = true }").uiConfig.enabled, true);
  assert.equal(hcl("ui = true").uiConfig.enabled, true);
  assert.equal(buildConfig({ dev: true }).uiConfig.enabled, true);
  assert.equal(buildConfig({ dev: true, hcl: ["ui_config { enabled = false }"] }).uiConfig.enabled, false);
  assert.equal(hcl('ui_config { content_path = "/console/" }').uiConfig.contentPath, "/console/");
  assert.equal(hcl('ui_content_path = "/old/"').uiConfig.contentPath, "/old/");
  assert.deepEqual(validateConfig(hcl('ui_config { content_path = "console" }')), []);
});

test("ui_config.content_path: \"/\" and paths under /v1/ are refused with the reason", () => {
  for (const bad of ["/", "/v1/ui", "v1", "/ui?x"]) {
    const errors = validateConfig(hcl(`ui_config { content_path = ${JSON.stringify(bad)} }`));
    assert.equal(errors.length, 1, bad);
    assert.match(errors[0]!.message, /^Invalid ui_config.content_path ".*": a path such as "\/ui\/"/, bad);
  }
});
