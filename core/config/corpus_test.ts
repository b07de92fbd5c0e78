// Real-world Consul config files (testdata/consul_corpus): agent servers and
// clients, service and check definitions, watches, ui_config heredocs,
// deprecated and Enterprise keys. Each HCL file has a JSON twin (one also a
// YAML twin) that must load to the same layer and the same warnings.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { decodeConfigDefinitions } from "../local/mod.ts";
import { buildConfig, formatForFile, parseConfigSource, validateConfig } from "./mod.ts";

const dir = join(import.meta.dirname, "testdata/consul_corpus");
const files = readdirSync(dir).sort();

function load(name: string) {
  const format = formatForFile(name);
  assert.ok(format, name);
  return parseConfigSource(readFileSync(join(dir, name), "utf8"), { file: name, format });
}

test("corpus: every file loads, and its HCL, JSON and YAML forms are the same config", () => {
  const hcl = files.filter((f) => f.endsWith(".hcl"));
  assert.ok(hcl.length >= 9, `expected the corpus in ${dir}`);
  for (const h of hcl) {
    const base = h.slice(0, -".hcl".length);
    const twins = files.filter((f) => f !== h && f.startsWith(`${base}.`));
    assert.ok(twins.length > 0, `${h} has no JSON twin`);
    const want = load(h);
    for (const twin of twins) {
      const got = load(twin);
      assert.deepEqual(got.layer, want.layer, `${twin} vs ${h}`);
      assert.deepEqual(
        got.uses.map((u) => [u.key, u.status]),
        want.uses.map((u) => [u.key, u.status]),
        `warnings of ${twin} vs ${h}`,
      );
    }
  }
});

test("corpus: the service and check definitions decode as the agent decodes them", () => {
  for (const f of files) {
    const { layer } = load(f);
    const decoded = decodeConfigDefinitions({ services: layer.services ?? [], checks: layer.checks ?? [] });
    assert.deepEqual(decoded.errors.map((e) => e.message), [], f);
  }
  const web = load("web.hcl").layer.services![0]!;
  assert.deepEqual(web.weights, { passing: 10, warning: 1 });
  const services = decodeConfigDefinitions({ services: load("services.hcl").layer.services ?? [], checks: [] }).services;
  assert.deepEqual(services.map((s) => [s.service.service, s.checks.map((c) => c.id)]), [
    ["api", ["api-tcp", "api-ttl"]],
    ["billing", ["billing-post"]],
  ]);
  assert.equal(services[1]!.checks[0]!.checkType.body, '{"probe": "consul"}\n');
  const checks = load("checks.hcl").layer.checks ?? [];
  assert.deepEqual(checks.map((c) => c.id), ["mem-util", "disk"]);
});

test("corpus: a server config builds and validates, and warns once per key it cannot honour", () => {
  const text = readFileSync(join(dir, "server.hcl"), "utf8");
  const c = buildConfig({ sources: [{ name: "server.hcl", text, format: "hcl" }] });
  assert.deepEqual(validateConfig(c), []);
  assert.equal(c.server, true);
  assert.equal(c.bootstrapExpect, 3);
  assert.deepEqual(c.retryJoin, ["10.0.1.11", "10.0.1.12"]);
  assert.equal(c.logLevel, "info");
  assert.equal(c.performance.raftMultiplier, 1);
  assert.equal(c.telemetry.prometheusRetentionTimeMs, 30_000);
  assert.deepEqual(c.dnsConfig.serviceTtlMs, { "*": 5000 });
  assert.equal(c.uiConfig.enabled, true);
  assert.deepEqual(
    c.warnings.map((w) => w.key),
    [
      "auto_encrypt",
      "connect",
      "ports.grpc_tls",
      "limits.rpc_max_conns_per_client",
    ],
  );
  // acl {} is decoded, not warned about.
  assert.deepEqual([c.acl.enabled, c.acl.defaultPolicy, c.acl.downPolicy, c.acl.enableTokenPersistence, c.acl.tokens.agent], [true, "deny", "extend-cache", true, "3c8aaa8a-1a8b-4fba-b4e7-0d9eab2fd5ab"]);
  assert.equal(
    c.warnings.find((w) => w.key === "connect")!.message,
    'Config key "connect" from "server.hcl" line 66 has no effect in cairn: the service mesh (Connect) is not part of cairn',
  );
});
