import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ConfigError } from "../errors.ts";
import { formatDuration, parseDuration } from "./duration.ts";
import { buildConfig, parseConfigText } from "./load.ts";
import { loadConfig, readConfigSources } from "./load_node.ts";
import { validateConfig } from "./validate.ts";

test("parseDuration: Go duration strings", () => {
  const table: [string, number | undefined][] = [
    ["10s", 10_000],
    ["1m30s", 90_000],
    ["72h", 72 * 3_600_000],
    ["300ms", 300],
    ["1.5h", 5_400_000],
    ["-1m", -60_000],
    ["0", 0],
    ["2h45m", 9_900_000],
    ["1us", 0.001],
    ["2\u00b5s", 0.002], // micro sign
    ["3\u03bcs", 0.003], // Greek mu
    ["", undefined],
    ["10", undefined],
    ["10x", undefined],
    ["s", undefined],
    ["1m 30s", undefined],
  ];
  for (const [text, want] of table) assert.equal(parseDuration(text), want, `parseDuration(${JSON.stringify(text)})`);
  assert.equal(formatDuration(90_000), "1m30s");
  assert.equal(formatDuration(72 * 3_600_000), "72h0m0s");
  assert.equal(formatDuration(250), "250ms");
});

test("parseConfigText: JSON snake_case keys land in camelCase fields", () => {
  const layer = parseConfigText(
    JSON.stringify({
      node_name: "n1",
      server: true,
      bootstrap_expect: 3,
      ports: { http: 18500, serf_lan: 18301 },
      retry_join: ["10.0.0.1", "10.0.0.2"],
      retry_interval: "5s",
      dns_config: { node_ttl: "10s", service_ttl: { "*": "5s" }, soa: { min: 5 } },
      performance: { raft_multiplier: 1, rpc_hold_timeout: "3s" },
      node_meta: { rack: "r1" },
      service: { name: "web", port: 80 },
      services: [{ name: "db" }],
      disable_update_check: true,
      log_level: "ERR",
    }),
    { file: "a.json", format: "json" },
  );
  assert.equal(layer.nodeName, "n1");
  assert.equal(layer.bootstrapExpect, 3);
  assert.deepEqual(layer.ports, { http: 18500, serfLan: 18301 });
  assert.deepEqual(layer.retryJoin, ["10.0.0.1", "10.0.0.2"]);
  assert.equal(layer.retryIntervalMs, 5000);
  assert.equal(layer.dnsConfig?.nodeTtlMs, 10_000);
  assert.deepEqual(layer.dnsConfig?.serviceTtlMs, { "*": 5000 });
  assert.equal(layer.dnsConfig?.soa?.min, 5);
  assert.equal(layer.performance?.raftMultiplier, 1);
  assert.equal(layer.limits?.rpcHoldTimeoutMs, 3000);
  assert.deepEqual(layer.nodeMeta, { rack: "r1" });
  assert.deepEqual(layer.services, [{ name: "web", port: 80 }, { name: "db" }]);
  assert.equal(layer.logLevel, "error");
  assert.equal("disableUpdateCheck" in layer, false);
});

test("parseConfigText: YAML works the same", () => {
  const layer = parseConfigText("datacenter: east\nports:\n  dns: 8653\nrecursors:\n  - 1.1.1.1\n", {
    file: "b.yaml",
    format: "yaml",
  });
  assert.equal(layer.datacenter, "east");
  assert.deepEqual(layer.ports, { dns: 8653 });
  assert.deepEqual(layer.recursors, ["1.1.1.1"]);
  assert.deepEqual(parseConfigText("", { file: "empty.yaml", format: "yaml" }), {});
});

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected a ConfigError");
}

test("parseConfigText: unknown key names file and key path", () => {
  const e1 = configError(() => parseConfigText('{"nodename": "x"}', { file: "a.json", format: "json" }));
  assert.equal(e1.file, "a.json");
  assert.equal(e1.field, "nodename");
  assert.match(e1.message, /Unknown configuration key "nodename" in "a.json"/);
  const e2 = configError(() => parseConfigText("ports:\n  htp: 1\n", { file: "b.yml", format: "yaml" }));
  assert.equal(e2.field, "ports.htp");
});

test("parseConfigText: wrong type names key path and what was expected", () => {
  const e1 = configError(() => parseConfigText('{"ports": {"http": "8500"}}', { file: "a.json", format: "json" }));
  assert.equal(e1.field, "ports.http");
  assert.match(e1.message, /"ports\.http".*expected a port number, got a string/);
  const e2 = configError(() => parseConfigText('{"retry_interval": "soon"}', { file: "a.json", format: "json" }));
  assert.match(e2.message, /expected a duration/);
  const e3 = configError(() => parseConfigText('{"retry_join": ["a", 3]}', { file: "a.json", format: "json" }));
  assert.equal(e3.field, "retry_join[1]");
  const e4 = configError(() => parseConfigText('{"server": "true"}', { file: "a.json", format: "json" }));
  assert.match(e4.message, /expected true or false/);
  const e5 = configError(() => parseConfigText("[1]", { file: "a.json", format: "json" }));
  assert.match(e5.message, /top level/);
});

test("parseConfigText: parse errors name file, line and column", () => {
  const e1 = configError(() => parseConfigText('{\n  "server": true,\n}\n', { file: "c.json", format: "json" }));
  assert.equal(e1.file, "c.json");
  assert.equal(e1.line, 3);
  assert.match(e1.message, /Cannot parse "c\.json" at line 3, column 1/);
  const e2 = configError(() => parseConfigText('{"a": 1', { file: "d.json", format: "json" }));
  assert.equal(e2.line, 1);
  const e3 = configError(() => parseConfigText("server: true\n  bad: [\n", { file: "e.yaml", format: "yaml" }));
  assert.equal(e3.file, "e.yaml");
  assert.equal(typeof e3.line, "number");
  assert.match(e3.message, /Cannot parse "e\.yaml" at line \d+, column \d+/);
});

test("buildConfig: defaults < dev < files in order < flags; lists append", () => {
  const c = buildConfig({
    sources: [
      { name: "1.json", format: "json", text: '{"datacenter": "a", "retry_join": ["x"], "ports": {"http": 1}}' },
      { name: "2.yaml", format: "yaml", text: "datacenter: b\nretry_join: [y]\nports:\n  dns: 2\n" },
    ],
    flags: { datacenter: "c", retryJoin: ["z"] },
  });
  assert.equal(c.datacenter, "c");
  assert.deepEqual(c.retryJoin, ["x", "y", "z"]);
  assert.equal(c.ports.http, 1);
  assert.equal(c.ports.dns, 2);
  assert.equal(c.ports.server, 8300);
  assert.deepEqual(c.configFiles, ["1.json", "2.yaml"]);
  assert.equal(c.domain, "consul.");
  // Client defaults: leave on terminate.
  assert.equal(c.leaveOnTerminate, true);
  assert.equal(c.skipLeaveOnInterrupt, false);

  const dev = buildConfig({ flags: { dev: true } });
  assert.equal(dev.server, true);
  assert.equal(dev.bootstrap, true);
  assert.equal(dev.bindAddr, "127.0.0.1");
  assert.equal(dev.performance.raftMultiplier, 1);
  assert.equal(dev.leaveOnTerminate, false);
  assert.deepEqual(validateConfig(dev), []);

  const fileWins = buildConfig({ dev: true, sources: [{ name: "x.json", format: "json", text: '{"log_level": "warn"}' }] });
  assert.equal(fileWins.logLevel, "warn");
});

test("validateConfig: cross-field checks", () => {
  const fields = (flags: Parameters<typeof buildConfig>[0]["flags"]) =>
    validateConfig(buildConfig({ flags })).map((e) => e.field);
  assert.deepEqual(fields({ dataDir: "/d" }), []);
  assert.deepEqual(fields({}), ["data_dir"]);
  assert.deepEqual(fields({ dataDir: "/d", bootstrapExpect: 3 }), ["bootstrap_expect"]);
  assert.deepEqual(fields({ dataDir: "/d", server: true, bootstrapExpect: 3 }), []);
  assert.deepEqual(fields({ dataDir: "/d", ports: { http: 70000 } }), ["ports.http"]);
  assert.deepEqual(fields({ dataDir: "/d", ports: { http: -1 } }), []);
  assert.deepEqual(fields({ dataDir: "/d", ports: { server: -1 } }), ["ports.server"]);
  assert.deepEqual(fields({ dataDir: "/d", encrypt: "short" }), ["encrypt"]);
  assert.deepEqual(fields({ dataDir: "/d", encrypt: "pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s=" }), []);
  assert.deepEqual(fields({ dataDir: "/d", datacenter: "a b" }), ["datacenter"]);
  assert.deepEqual(fields({ dev: true, server: false }), ["server", "bootstrap"]);
});

test("raft tuning keys: Consul's names and defaults, typed and range-checked", () => {
  const defaults = buildConfig({ flags: { dataDir: "/d" } });
  assert.deepEqual([defaults.raftSnapshotThreshold, defaults.raftSnapshotIntervalMs, defaults.raftTrailingLogs], [16_384, 30_000, 10_240]);
  const layer = parseConfigText(
    JSON.stringify({ raft_snapshot_threshold: 200, raft_snapshot_interval: "5s", raft_trailing_logs: 0 }),
    { file: "r.json", format: "json" },
  );
  assert.deepEqual([layer.raftSnapshotThreshold, layer.raftSnapshotIntervalMs, layer.raftTrailingLogs], [200, 5_000, 0]);
  const yaml = parseConfigText("raft_trailing_logs: 50\n", { file: "r.yaml", format: "yaml" });
  assert.equal(yaml.raftTrailingLogs, 50);
  const e1 = configError(() => parseConfigText('{"raft_snapshot_threshold": "200"}', { file: "r.json", format: "json" }));
  assert.deepEqual([e1.file, e1.field], ["r.json", "raft_snapshot_threshold"]);
  assert.match(e1.message, /"raft_snapshot_threshold" in "r\.json": expected a whole number ≥ 0, got a string/);
  const e2 = configError(() => parseConfigText('{"raft_trailing_logs": -1}', { file: "r.json", format: "json" }));
  assert.equal(e2.field, "raft_trailing_logs");
  const e3 = configError(() => parseConfigText('{"raft_snapshot_interval": 30}', { file: "r.json", format: "json" }));
  assert.match(e3.message, /"raft_snapshot_interval".*expected a duration/);
  const fields = (text: string) =>
    validateConfig(buildConfig({ sources: [{ name: "r.json", format: "json", text }], flags: { dataDir: "/d" } })).map((e) => e.field);
  assert.deepEqual(fields('{"raft_snapshot_threshold": 0}'), ["raft_snapshot_threshold"]);
  assert.deepEqual(fields('{"raft_snapshot_interval": "0s"}'), ["raft_snapshot_interval"]);
  assert.deepEqual(fields('{"raft_snapshot_threshold": 1, "raft_trailing_logs": 0}'), []);
});

test("loadConfig: -config-dir in lexical order, -config-file order kept, HCL read, other files skipped with a warning", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-config-"));
  try {
    writeFileSync(join(dir, "b.yaml"), "node_name: from-b\n");
    writeFileSync(join(dir, "a.json"), '{"node_name": "from-a", "data_dir": "/a"}');
    writeFileSync(join(dir, "notes.txt"), "ignored");
    const c = loadConfig({ paths: [{ kind: "dir", path: dir }] });
    assert.equal(c.nodeName, "from-b");
    assert.equal(c.dataDir, "/a");
    assert.deepEqual(c.configFiles, [join(dir, "a.json"), join(dir, "b.yaml")]);

    const extra = join(dir, "..", `cairn-extra-${process.pid}.json`);
    writeFileSync(extra, '{"node_name": "from-file"}');
    try {
      const c2 = loadConfig({ paths: [{ kind: "dir", path: dir }, { kind: "file", path: extra }], flags: { nodeName: "flag" } });
      assert.equal(c2.nodeName, "flag");
      const c3 = loadConfig({ paths: [{ kind: "file", path: extra }, { kind: "dir", path: dir }] });
      assert.equal(c3.nodeName, "from-b");
    } finally {
      rmSync(extra);
    }

    assert.deepEqual(
      c.warnings.map((w) => w.message),
      [`Skipping "${join(dir, "notes.txt")}": config files must end in .hcl, .json, .yaml or .yml (or set -config-format)`],
    );

    writeFileSync(join(dir, "c.hcl"), 'node_name = "x"');
    assert.deepEqual(
      readConfigSources([{ kind: "dir", path: dir }]).map((s) => [s.name, s.format]),
      [[join(dir, "a.json"), "json"], [join(dir, "b.yaml"), "yaml"], [join(dir, "c.hcl"), "hcl"]],
    );
    assert.equal(loadConfig({ paths: [{ kind: "dir", path: dir }] }).nodeName, "x");
    const missing = configError(() => readConfigSources([{ kind: "file", path: join(dir, "nope.json") }]));
    assert.match(missing.message, /Cannot read/);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test("parseConfigText: telemetry's Prometheus retention and hostname switch; other sinks are accepted and ignored", () => {
  const layer = parseConfigText(
    JSON.stringify({ telemetry: { prometheus_retention_time: "60s", disable_hostname: true, statsd_address: "127.0.0.1:8125" } }),
    { file: "t.json", format: "json" },
  );
  assert.deepEqual(layer.telemetry, { prometheusRetentionTimeMs: 60_000, disableHostname: true });
  assert.throws(() => parseConfigText(JSON.stringify({ telemetry: { prometheus_retention_time: "soon" } }), { file: "t.json", format: "json" }), /telemetry\.prometheus_retention_time/);
});

test("ACLs across datacenters: primary_datacenter, acl.enable_token_replication, acl.tokens.replication, and Consul's deprecated spellings", () => {
  const hcl = (text: string) => buildConfig({ sources: [{ name: "a.hcl", text, format: "hcl" }] });
  const c = hcl('primary_datacenter = "dc1"\nacl {\n  enabled = true\n  enable_token_replication = true\n  tokens { replication = "r-1" }\n}');
  assert.deepEqual([c.primaryDatacenter, c.acl.enableTokenReplication, c.acl.tokens.replication], ["dc1", true, "r-1"]);
  assert.deepEqual(c.warnings, []);
  // acl_datacenter: primary_datacenter, and ACLs on; primary_datacenter wins when both are set.
  const old = hcl('acl_datacenter = "east"');
  assert.deepEqual([old.primaryDatacenter, old.acl.enabled], ["east", true]);
  assert.match(old.warnings[0]!.message, /'acl_datacenter' field .* is deprecated\. Use the 'primary_datacenter' field instead\./);
  assert.equal(hcl('acl_datacenter = "east"\nprimary_datacenter = "west"').primaryDatacenter, "west");
  // acl_replication_token: the replication token, and token replication on.
  const rt = hcl('acl_replication_token = "r-2"');
  assert.deepEqual([rt.acl.tokens.replication, rt.acl.enableTokenReplication], ["r-2", true]);
  assert.equal(hcl('acl_replication_token = "r-2"\nacl { tokens { replication = "r-3" } }').acl.tokens.replication, "r-3");
  // enable_acl_replication: acl.enable_token_replication unless that is set.
  assert.equal(hcl("enable_acl_replication = true").acl.enableTokenReplication, true);
  assert.equal(hcl("enable_acl_replication = true\nacl { enable_token_replication = false }").acl.enableTokenReplication, false);
  assert.equal(hcl("").primaryDatacenter, "");
  const bad = validateConfig({ ...hcl('primary_datacenter = "d c"'), dataDir: "/tmp/x" });
  assert.ok(bad.some((e) => e.field === "primary_datacenter"), bad.map((e) => e.message).join("; "));
});

test("limits: rpc_rate and request_limits decode (rates may be fractions); request_limits on a client agent is named in a warning; a bad mode is refused", () => {
  const client = buildConfig({ hcl: ['limits { rpc_rate = 2.5\nrpc_max_burst = 7\nrequest_limits { mode = "enforcing"\nwrite_rate = 0.5 } }'] });
  assert.deepEqual([client.limits.rpcRate, client.limits.rpcMaxBurst, client.limits.requestLimits], [2.5, 7, { mode: "enforcing", readRate: -1, writeRate: 0.5 }]);
  assert.deepEqual(client.warnings.map((w) => w.key), ["limits.request_limits"]);
  const server = buildConfig({ hcl: ['server = true\nlimits { request_limits { mode = "permissive" } }'] });
  assert.deepEqual(server.warnings, []);
  const bad = buildConfig({ hcl: ['server = true\ndata_dir = "/x"\nlimits { request_limits { mode = "strict" } }'] });
  assert.deepEqual(validateConfig(bad).map((e) => e.field), ["limits.request_limits.mode"]);
  assert.throws(() => buildConfig({ hcl: ['limits { rpc_rate = "fast" }'] }), /expected a number/);
});
