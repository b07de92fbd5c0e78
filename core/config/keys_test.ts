import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../errors.ts";
import { AGENT_KEYS, CHECK_KEYS, keyRows, SERVICE_KEYS, type KeySpec, type KeyTable } from "./keys.ts";
import { defaultConfig } from "./defaults.ts";
import { buildConfig, parseConfigSource, type ConfigFormat } from "./load.ts";

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected a ConfigError");
}

function uses(text: string, format: ConfigFormat = "hcl") {
  return parseConfigSource(text, { file: "f", format }).uses.map((u) => `${u.key}:${u.status}`);
}

test("key table: every key has a status, planned and ignored keys say why", () => {
  const rows = keyRows();
  const all = [...rows.agent, ...rows.service, ...rows.check];
  for (const r of all) {
    assert.ok(["implemented", "planned", "ignored"].includes(r.status), r.path);
    if (r.status !== "implemented") assert.ok(r.note.length > 0, `${r.path} needs a note`);
  }
  for (const [name, spec] of Object.entries(AGENT_KEYS)) assert.ok(spec.status, `top-level ${name} needs a status`);
  assert.equal(new Set(all.map((r) => r.path)).size, all.length, "paths are unique");
  // Aliases must not shadow another key of the same block.
  const walk = (table: KeyTable) => {
    const names = new Set(Object.keys(table));
    for (const spec of Object.values(table)) {
      for (const a of spec.aliases ?? []) assert.ok(!names.has(a), `alias ${a}`);
      if (spec.keys && spec.keys !== SERVICE_KEYS && spec.keys !== CHECK_KEYS) walk(spec.keys);
    }
  };
  walk(AGENT_KEYS);
});

test("key table: every implemented value lands on a field of AgentConfig", () => {
  const camel = (k: string) => k.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  const defaults = defaultConfig() as unknown as Record<string, unknown>;
  const walk = (table: KeyTable, target: string) => {
    for (const [name, spec] of Object.entries(table) as [string, KeySpec][]) {
      if (spec.keys && !spec.decode) {
        const blockTo = spec.to ?? camel(name);
        if (spec.status === "implemented" || spec.status === undefined) walk(spec.keys, blockTo.startsWith("$") ? blockTo.slice(1) : target ? `${target}.${blockTo}` : blockTo);
        continue;
      }
      if (!spec.decode) continue;
      let to = spec.to ?? camel(name) + (spec.decode === "duration" ? "Ms" : "");
      to = to.startsWith("$") ? to.slice(1) : target ? `${target}.${to}` : to;
      const parts = to.split(".");
      let parent: unknown = defaults;
      for (const p of parts.slice(0, -1)) parent = (parent as Record<string, unknown>)?.[p];
      assert.equal(typeof parent, "object", `${target}.${name} → ${to}`);
      // addresses.* are optional overrides and tls stanza fields fall back to tls.defaults; every other field has a default.
      if (!to.startsWith("addresses.") && !to.startsWith("tls.")) assert.notEqual((parent as Record<string, unknown>)[parts.at(-1)!], undefined, `${target}.${name} → ${to}`);
    }
  };
  walk(AGENT_KEYS, "");
});

test("key table: the keys issue #17 found fatal or silent are accepted with a warning", () => {
  const planned = [
    'gossip_lan { probe_interval = "2s" }',
    'http_config { response_headers { "X-Frame-Options" = "DENY" } }',
    "auto_reload_config = true",
    "limits { rpc_max_conns_per_client = 200 }",
    "dns_config { use_cache = true }",
  ];
  for (const text of planned) {
    const got = uses(text);
    assert.equal(got.length, 1, `${text}: ${got.join(", ")}`);
    assert.match(got[0]!, /:planned$/, text);
  }
  assert.equal(parseConfigSource('pid_file = "/run/c.pid"', { file: "f", format: "hcl" }).layer.pidFile, "/run/c.pid");
});

test("key table: a value that asks for what cairn does anyway gives no warning", () => {
  for (const text of [
    "connect { enabled = false }",
    "raft_protocol = 3",
    "disable_remote_exec = true",
    "ports { grpc = -1 }",
    "acl { enabled = false }",
    "acl {}",
    "disable_update_check = true",
    'dns_config { recursor_strategy = "sequential" }',
    "non_voting_server = false",
  ]) {
    assert.deepEqual(uses(text), [], text);
  }
  assert.deepEqual(uses("connect { enabled = true }"), ["connect:ignored"]);
  assert.deepEqual(uses('ui_config { metrics_provider = "prometheus" }'), ["ui_config.metrics_provider:ignored"]);
});

test("warnings: exactly one per key, naming every file and line that set it", () => {
  const c = buildConfig({
    sources: [
      { name: "a.hcl", format: "hcl", text: 'datacenter = "dc1"\ndns_config {\n  allow_stale = true\n  use_cache = true\n}\nacl { default_policy = "deny" }\n' },
      { name: "b.json", format: "json", text: '{\n  "dns_config": {"use_cache": true},\n  "connect": {"enabled": true}\n}' },
    ],
    hcl: ["dns_config { use_cache = true }", "enable_syslog = true"],
  });
  assert.deepEqual(
    c.warnings.map((w) => w.message),
    [
      'Config key "dns_config.use_cache" from "a.hcl" line 4, "b.json" line 2, "-hcl #1" line 1 has no effect in cairn yet: agent-side caching is not implemented yet',
      'Config key "connect" from "b.json" line 3 has no effect in cairn: the service mesh (Connect) is not part of cairn',
      'Config key "enable_syslog" from "-hcl #2" line 1 has no effect in cairn yet: syslog output is not implemented yet',
    ],
  );
  assert.deepEqual(c.warnings[0]!.sources, [
    { file: "a.hcl", line: 4 },
    { file: "b.json", line: 2 },
    { file: "-hcl #1", line: 1 },
  ]);
  // A block inside an implemented block warns under its own path; a key of another status inside a planned block warns too.
  assert.deepEqual(uses('limits { rpc_client_timeout = "90s", rpc_rate = 10.5, kv_max_value_size = 1024 }\nautopilot { upgrade_version_tag = "v" }'), [
    "limits.rpc_client_timeout:planned",
    "autopilot.upgrade_version_tag:ignored",
  ]);
  // Deprecated names say what Consul uses now.
  const legacy = buildConfig({ sources: [{ name: "l.hcl", format: "hcl", text: 'acl_master_token = "x"' }] });
  assert.match(legacy.warnings[0]!.message, /Use the 'acl\.tokens\.initial_management' field instead\.$/);
  assert.equal(legacy.acl.tokens.initialManagement, "x");
  const planned = buildConfig({ sources: [{ name: "l.hcl", format: "hcl", text: 'ui_dir = "/x"' }] });
  assert.match(planned.warnings[0]!.message, /\(Consul has replaced it with "ui_config\.dir"\)$/);
});

test("unknown keys are errors naming file, line and key, in HCL, JSON and YAML", () => {
  const cases: [ConfigFormat, string, string, number][] = [
    ["hcl", 'datacenter = "dc1"\n\nports {\n  htp = 1\n}\n', "ports.htp", 4],
    ["json", '{\n  "datacenter": "dc1",\n  "nodename": "x"\n}', "nodename", 3],
    ["yaml", "datacenter: dc1\nacl:\n  enabeld: true\n", "acl.enabeld", 3],
    ["hcl", 'service {\n  name = "web"\n  chekc { ttl = "5s" }\n}\n', "service.chekc", 3],
    ["json", '{"services": [{"name": "a"}, {"name": "b", "portt": 1}]}', "services[1].portt", 1],
    ["hcl", "tls {\n  defaults {\n    ca_fil = \"x\"\n  }\n}\n", "tls.defaults.ca_fil", 3],
    ["hcl", "watch = []", "watch", 1],
  ];
  for (const [format, text, field, line] of cases) {
    const e = configError(() => parseConfigSource(text, { file: `x.${format}`, format }));
    assert.equal(e.file, `x.${format}`);
    assert.equal(e.field, field);
    assert.equal(e.line, line, `${field}: ${e.message}`);
    assert.match(e.message, new RegExp(`^Unknown configuration key "${field.replace(/[.[\]]/g, "\\$&")}" in "x\\.${format}" at line ${line}`));
  }
  assert.match(configError(() => parseConfigSource("ports { htp = 1 }", { file: "f", format: "hcl" })).message, /: did you mean "http"\?$/);
  assert.match(configError(() => parseConfigSource("watch = []", { file: "f", format: "hcl" })).message, /: did you mean "watches"\?$/);
  assert.doesNotMatch(configError(() => parseConfigSource("zzzzzz = 1", { file: "f", format: "hcl" })).message, /did you mean/);
});

test("wrong types name file, line and key in HCL", () => {
  const e = configError(() => parseConfigSource('datacenter = "dc1"\nports {\n  http = "8500"\n}\n', { file: "p.hcl", format: "hcl" }));
  assert.deepEqual([e.field, e.line], ["ports.http", 3]);
  assert.equal(e.message, 'Invalid value for "ports.http" in "p.hcl": expected a port number, got a string ("8500"), at line 3');
  const e2 = configError(() => parseConfigSource('retry_join = ["a", 3]', { file: "p.hcl", format: "hcl" }));
  assert.deepEqual([e2.field, e2.line], ["retry_join[1]", 1]);
  const e3 = configError(() => parseConfigSource('acl = "on"', { file: "p.hcl", format: "hcl" }));
  assert.match(e3.message, /"acl" in "p\.hcl": expected an object, got a string/);
  const e4 = configError(() => parseConfigSource("a = ", { file: "p.hcl", format: "hcl" }));
  assert.match(e4.message, /^Cannot parse "p\.hcl" at line 1, column 5: Expected a value for "a"/);
  assert.equal(e4.line, 1);
});

test("key names match as Consul's decoder matches them", () => {
  const layer = parseConfigSource('NODE_NAME = "n"\nPorts { HTTP = 1 }\nservice { Name = "web", EnableTagOverride = true, Check { TTL = "5s" } }', { file: "f", format: "hcl" }).layer;
  assert.equal(layer.nodeName, "n");
  assert.deepEqual(layer.ports, { http: 1 });
  assert.deepEqual(layer.services, [{ Name: "web", EnableTagOverride: true, Check: { TTL: "5s" } }]);
  // Outside definitions `_` is not optional, as in Consul.
  assert.equal(configError(() => parseConfigSource("nodename = 1", { file: "f", format: "hcl" })).field, "nodename");
  assert.deepEqual(uses("non_voting_server = true"), ["read_replica:ignored"]);
  // A single `checks` block is a list of one; repeated `service` blocks are several services.
  const l2 = parseConfigSource('service { name = "a"\n checks { ttl = "5s" } }\nservice { name = "b" }', { file: "f", format: "hcl" }).layer;
  assert.deepEqual(l2.services, [{ name: "a", checks: [{ ttl: "5s" }] }, { name: "b" }]);
});

test("-hcl fragments apply after the flags, as Consul applies them", () => {
  const c = buildConfig({ flags: { nodeName: "from-flag", datacenter: "flag-dc" }, hcl: ['node_name = "from-hcl"', 'retry_join = ["a"]', 'retry_join = ["b"]'] });
  assert.equal(c.nodeName, "from-hcl");
  assert.equal(c.datacenter, "flag-dc");
  assert.deepEqual(c.retryJoin, ["a", "b"]);
  assert.deepEqual(c.configFiles, []);
  const e = configError(() => buildConfig({ hcl: ["bogus = 1"] }));
  assert.equal(e.message, 'Unknown configuration key "bogus" in "-hcl #1" at line 1');
});
