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

test("default_query_time, max_query_time, limits.txn_max_req_len", () => {
  const d = buildConfig({ dev: true });
  assert.equal(d.defaultQueryTimeMs, 300_000);
  assert.equal(d.maxQueryTimeMs, 600_000);
  assert.equal(d.limits.txnMaxReqLenBytes, 512 * 1024);
  const c = fromHcl(`default_query_time = "30s"\nmax_query_time = "2m"\nlimits { txn_max_req_len = 1048576 }`);
  assert.equal(c.defaultQueryTimeMs, 30_000);
  assert.equal(c.maxQueryTimeMs, 120_000);
  assert.equal(c.limits.txnMaxReqLenBytes, 1_048_576);
  assert.deepEqual(warnedKeys(c), []);
  assert.equal(d.discoveryMaxStaleMs, 0, "off by default");
  const s = fromHcl(`discovery_max_stale = "5s"`);
  assert.equal(s.discoveryMaxStaleMs, 5_000);
  assert.deepEqual(warnedKeys(s), []);
});

test("check_output_max_size, discard_check_output, check_update_interval", () => {
  const d = buildConfig({ dev: true });
  assert.equal(d.checkOutputMaxSize, 4096);
  assert.equal(d.discardCheckOutput, false);
  assert.equal(d.checkUpdateIntervalMs, 300_000);
  const c = fromHcl(`check_output_max_size = 100\ndiscard_check_output = true\ncheck_update_interval = "0s"`);
  assert.equal(c.checkOutputMaxSize, 100);
  assert.equal(c.discardCheckOutput, true);
  assert.equal(c.checkUpdateIntervalMs, 0);
  assert.deepEqual(warnedKeys(c), []);
  // Consul's builder: 0 is refused, naming discard_check_output.
  assert.match(validateConfig(fromHcl("check_output_max_size = 0")).map((e) => e.message).join("\n"), /discard_check_output/);
});

test("limits.http_max_conns_per_client: default 200, 0 = no limit", () => {
  assert.equal(buildConfig({ dev: true }).limits.httpMaxConnsPerClient, 200);
  const c = fromHcl("limits { http_max_conns_per_client = 0 }");
  assert.equal(c.limits.httpMaxConnsPerClient, 0);
  assert.deepEqual(warnedKeys(c), []);
  assert.equal(fromHcl("limits { http_max_conns_per_client = 400 }").limits.httpMaxConnsPerClient, 400);
});
