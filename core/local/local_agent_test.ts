import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ConfigError } from "../errors.ts";
import { CaptureSink, createLogger } from "../log/mod.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { decodeCheckDefinition, decodeServiceDefinition } from "../service_defs/definition.ts";
import { LocalAgent, type LocalAgentOptions } from "./local_agent.ts";
import { FileDefinitionStore } from "./persist.ts";

const node = { node: "n1", id: "", address: "127.0.0.1", taggedAddresses: {}, meta: {} };
const fakeProbes: LocalAgentOptions["probes"] = {
  http: () => async () => ({ status: "passing", output: "ok" }),
  tcp: () => async () => ({ status: "passing", output: "ok" }),
  script: () => async () => ({ status: "passing", output: "ok" }),
};

function agent(options: Partial<LocalAgentOptions> = {}) {
  const clock = (options.clock as SimClock | undefined) ?? new SimClock();
  const sink = new CaptureSink();
  const a = new LocalAgent({ node, clock, rng: new Rng(1), logger: createLogger({ sink, level: "debug" }), probes: fakeProbes, ...options });
  return { a, clock, sink };
}

test("definitions: snake_case, CamelCase and mixed case decode the same", () => {
  const a = decodeServiceDefinition({ name: "web", enable_tag_override: true, tagged_addresses: { wan: { address: "1.2.3.4", port: 1 } }, check: { http: "http://x/", interval: "5s", tls_skip_verify: true } });
  const b = decodeServiceDefinition({ Name: "web", EnableTagOverride: true, TaggedAddresses: { wan: { Address: "1.2.3.4", Port: 1 } }, Check: { HTTP: "http://x/", Interval: "5s", TLSSkipVerify: true } });
  assert.deepEqual(a, b);
  assert.equal(a.service.id, "web");
  assert.equal(a.checks[0]!.checkType.tlsSkipVerify, true);
  const c = decodeCheckDefinition({ name: "x", args: ["/bin/true"], interval: 10_000_000_000, deregister_critical_service_after: "1m30s" });
  assert.equal(c.checkType.kind, "script");
  assert.equal(c.checkType.intervalMs, 10_000, "numbers are nanoseconds");
  assert.equal(c.checkType.deregisterCriticalServiceAfterMs, 90_000);
  assert.equal(decodeCheckDefinition({ Name: "alias", AliasService: "web" }).checkType.kind, "alias");
  assert.throws(() => decodeCheckDefinition({ Name: "s", Script: "/bin/true", Interval: "1s" }), /use "args"/);
});

test("persistence: API registrations survive a restart (checks restart critical); deregistration deletes the files", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-local-"));
  try {
    let { a } = agent({ store: new FileDefinitionStore(dir) });
    a.start();
    a.addService(decodeServiceDefinition({ Name: "web", Port: 80, Tags: ["x"], Checks: [{ TTL: "10s", Status: "passing" }, { HTTP: "http://127.0.0.1:1/", Interval: "10s" }] }));
    a.addCheck(decodeCheckDefinition({ Name: "mem", TTL: "30s" }));
    a.enableNodeMaintenance("upgrade");
    a.addService(decodeServiceDefinition({ Name: "gone" }));
    a.removeService("gone");
    assert.equal(readdirSync(join(dir, "services")).length, 1);
    assert.equal(readdirSync(join(dir, "checks")).length, 4);
    a.stop();

    ({ a } = agent({ store: new FileDefinitionStore(dir) }));
    a.start();
    assert.deepEqual(a.state.services().map((s) => [s.id, s.port, s.tags]), [["web", 80, ["x"]]]);
    const checks = Object.fromEntries(a.state.checks().map((c) => [c.checkId, c]));
    assert.deepEqual(Object.keys(checks), ["_node_maintenance", "mem", "service:web:1", "service:web:2"]);
    assert.equal(checks["service:web:1"]!.status, "critical", "restored checks start critical");
    assert.equal(checks["_node_maintenance"]!.notes, "upgrade");
    assert.equal(a.checkManager.count("ttl"), 2);
    assert.equal(a.checkManager.count("http"), 1);
    a.updateTtlCheck("mem", "passing", "");
    a.removeService("web");
    a.removeCheck("mem");
    assert.equal(readdirSync(join(dir, "services")).length, 0);
    assert.equal(readdirSync(join(dir, "checks")).filter((n) => n.endsWith(".json")).length, 1);
    a.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("persistence: an unreadable file is skipped with a warning, the rest loads", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-local-"));
  try {
    const store = new FileDefinitionStore(dir);
    let { a } = agent({ store });
    a.start();
    a.addService(decodeServiceDefinition({ Name: "ok" }));
    a.stop();
    writeFileSync(join(dir, "services", "broken.json"), "{ half");
    mkdirSync(join(dir, "checks"), { recursive: true });
    writeFileSync(join(dir, "checks", "bad-timing.json"), JSON.stringify({ version: 1, check: { checkId: "x", name: "x", status: "critical", checkType: { kind: "http", intervalMs: "soon" } } }));
    let sink: CaptureSink;
    ({ a, sink } = agent({ store }));
    a.start();
    assert.deepEqual(a.state.services().map((s) => s.id), ["ok"]);
    assert.ok(sink.records.some((r) => r.level === "warn" && String(r.fields.error).includes("broken.json")));
    assert.ok(sink.records.some((r) => r.level === "warn" && String(r.fields.error).includes("bad-timing.json")));
    assert.equal(a.state.check("x"), undefined);
    a.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("config definitions: loaded at start, not persisted; reload replaces them and keeps status of checks that stay", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-local-"));
  try {
    const { a } = agent({ store: new FileDefinitionStore(dir) });
    a.start({
      services: [{ name: "web", port: 80, check: { id: "web-ttl", ttl: "1m" } }, { name: "old" }],
      checks: [{ name: "disk", ttl: "1m" }],
    });
    assert.deepEqual(a.state.services().map((s) => s.id), ["old", "web"]);
    assert.throws(() => readdirSync(join(dir, "services")), /ENOENT/, "config services are not persisted");
    a.updateTtlCheck("web-ttl", "passing", "fine");
    a.addService(decodeServiceDefinition({ Name: "api-registered" }));

    a.reload({ services: [{ name: "web", port: 81, check: { id: "web-ttl", ttl: "1m" } }, { name: "new" }], checks: [] });
    assert.deepEqual(a.state.services().map((s) => [s.id, s.port]), [["api-registered", 0], ["new", 0], ["web", 81]]);
    assert.equal(a.state.check("web-ttl")?.status, "passing", "a check that stays keeps its status");
    assert.equal(a.state.check("disk"), undefined);

    assert.throws(() => a.reload({ services: [{ port: 1 }], checks: [] }), (err: unknown) => err instanceof ConfigError && /services\[0\]: Missing service name/.test(err.message));
    assert.deepEqual(a.state.services().map((s) => s.id), ["api-registered", "new", "web"], "a bad reload changes nothing");
    a.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("script checks from config files need enable_local_script_checks (or enable_script_checks)", () => {
  const config = { services: [], checks: [{ name: "s", args: ["/bin/true"], interval: "10s" }] };
  assert.throws(() => agent().a.start(config), /Scripts are disabled on this agent; to enable, configure 'enable_script_checks' or 'enable_local_script_checks' to true/);
  const ok = agent({ enableLocalScriptChecks: true }).a;
  ok.start(config);
  assert.equal(ok.checkManager.count("script"), 1);
  ok.stop();
  const remote = agent({ enableLocalScriptChecks: true }).a;
  remote.start();
  assert.throws(() => remote.addCheck(decodeCheckDefinition({ Name: "s", Args: ["/bin/true"], Interval: "10s" })), /from remote calls/);
  remote.stop();
});

test("deregister_critical_service_after: a service critical for longer is reaped (at least 1m)", async () => {
  const clock = new SimClock();
  const { a, sink } = agent({ clock, checkReapIntervalMs: 5_000 });
  a.start();
  a.addService(decodeServiceDefinition({ Name: "web", Check: { TTL: "10s", DeregisterCriticalServiceAfter: "90s", Status: "passing" } }));
  a.addService(decodeServiceDefinition({ Name: "fast", Check: { TTL: "10s", DeregisterCriticalServiceAfter: "5s", Status: "passing" } }));
  a.addService(decodeServiceDefinition({ Name: "keep", Check: { TTL: "10s", Status: "passing" } }));
  assert.ok(sink.records.some((r) => r.message === "check has deregister interval below minimum"));
  await clock.runFor(60_000);
  assert.ok(a.state.service("web"), "critical for 50s only");
  assert.ok(a.state.service("fast"), "5s is raised to the 1m minimum");
  await clock.runFor(15_000);
  assert.equal(a.state.service("fast"), undefined);
  await clock.runFor(30_000);
  assert.equal(a.state.service("web"), undefined);
  assert.ok(a.state.service("keep"), "no deregister_critical_service_after: kept");
  a.stop();
});

test("TTL check state survives a restart within its TTL, not after", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-local-"));
  try {
    const clock = new SimClock();
    let { a } = agent({ clock, store: new FileDefinitionStore(dir) });
    a.start();
    a.addCheck(decodeCheckDefinition({ Name: "app", TTL: "30s" }));
    a.addCheck(decodeCheckDefinition({ Name: "other", TTL: "30s" }));
    a.updateTtlCheck("app", "passing", "healthy");
    a.updateTtlCheck("other", "warning", "slow");
    a.stop();
    clock.advance(10_000);
    ({ a } = agent({ clock, store: new FileDefinitionStore(dir) }));
    a.start();
    assert.deepEqual([a.state.check("app")?.status, a.state.check("app")?.output], ["passing", "healthy"]);
    a.stop();
    clock.advance(30_000);
    ({ a } = agent({ clock, store: new FileDefinitionStore(dir) }));
    a.start();
    assert.equal(a.state.check("other")?.status, "critical", "expired state is not restored");
    a.removeCheck("app");
    assert.deepEqual(readdirSync(join(dir, "checks", "state")).length, 1, "removing a check removes its state");
    a.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("check_output_max_size caps every check's output; a check's own output_max_size may lower it, not raise it", () => {
  const { a } = agent({ checkOutputMaxSize: 10 });
  a.start();
  a.addCheck(decodeCheckDefinition({ Name: "capped", TTL: "30s" }));
  a.addCheck(decodeCheckDefinition({ Name: "lower", TTL: "30s", OutputMaxSize: 4 }));
  a.addCheck(decodeCheckDefinition({ Name: "higher", TTL: "30s", OutputMaxSize: 100 }));
  const long = "x".repeat(50);
  for (const id of ["capped", "lower", "higher"]) a.updateTtlCheck(id, "passing", long);
  const kept = (id: string) => a.state.check(id)?.output.match(/^x*/)![0].length;
  assert.equal(kept("capped"), 10);
  assert.equal(kept("lower"), 4);
  assert.equal(kept("higher"), 10);
  a.stop();
  const plain = agent().a;
  plain.start();
  plain.addCheck(decodeCheckDefinition({ Name: "c", TTL: "30s" }));
  plain.updateTtlCheck("c", "passing", "y".repeat(5000));
  assert.equal(plain.state.check("c")?.output.match(/^y*/)![0].length, 4096, "default 4096");
  plain.stop();
});

test("discard_check_output: statuses still change, outputs are always empty", () => {
  const { a } = agent({ discardCheckOutput: true });
  a.start();
  a.addCheck(decodeCheckDefinition({ Name: "app", TTL: "30s" }));
  a.updateTtlCheck("app", "warning", "slow disk");
  assert.deepEqual([a.state.check("app")?.status, a.state.check("app")?.output], ["warning", ""]);
  a.updateTtlCheck("app", "passing", "fine now");
  assert.deepEqual([a.state.check("app")?.status, a.state.check("app")?.output], ["passing", ""]);
  a.stop();
});
