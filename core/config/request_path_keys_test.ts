// The request-path keys of issue #17: Consul's defaults, decoding from a
// file, and no "not implemented" warning once cairn does what they say.
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildConfig } from "./load.ts";
import { validateConfig } from "./validate.ts";

function fromHcl(text: string) {
  return buildConfig({ dev: true, sources: [{ name: "x.hcl", format: "hcl", text }] });
}

function warnedKeys(c: { warnings: { key?: string }[] }): string[] {
  return c.warnings.map((w) => w.key ?? "").filter((k) => k !== "");
}

test("dns_config: recursor_strategy, disable_compression, enable_additional_node_meta_txt", () => {
  const d = buildConfig({ dev: true }).dnsConfig;
  assert.equal(d.recursorStrategy, "sequential");
  assert.equal(d.disableCompression, false);
  assert.equal(d.enableAdditionalNodeMetaTxt, true);
  const c = fromHcl(`dns_config { recursor_strategy = "random"\n disable_compression = true\n enable_additional_node_meta_txt = false }`);
  assert.equal(c.dnsConfig.recursorStrategy, "random");
  assert.equal(c.dnsConfig.disableCompression, true);
  assert.equal(c.dnsConfig.enableAdditionalNodeMetaTxt, false);
  assert.deepEqual(warnedKeys(c).filter((k) => k.startsWith("dns_config")), []);
  const bad = fromHcl(`dns_config { recursor_strategy = "fastest" }`);
  assert.deepEqual(validateConfig(bad).map((e) => e.field), ["dns_config.recursor_strategy"]);
});
