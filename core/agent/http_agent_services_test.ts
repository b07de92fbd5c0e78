// The agent's local services and checks (LocalAgent, syncing to a fake
// catalog) behind the HTTP table's /v1/agent/* routes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createRoutes } from "../http/mod.ts";
import { testBackends } from "../http/_test_env.ts";
import { makeRequest, type HttpResponse } from "../http/types.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { FakeCatalogRpc } from "../local/_fake_catalog_rpc.ts";
import { LocalAgent } from "../local/local_agent.ts";

function setup(options: { enableScriptChecks?: boolean; reload?: () => Promise<void> } = {}) {
  const clock = new SimClock();
  const rpc = new FakeCatalogRpc();
  const local = new LocalAgent({
    node: { node: "n1", id: "", address: "127.0.0.1", taggedAddresses: {}, meta: {} },
    clock,
    rng: new Rng(1),
    rpc,
    enableScriptChecks: options.enableScriptChecks,
    // Interval checks must not really run here.
    probes: { http: () => async () => ({ status: "passing", output: "fake" }), tcp: () => async () => ({ status: "passing", output: "fake" }), script: () => async () => ({ status: "passing", output: "fake" }) },
  });
  local.start();
  const router = createRoutes(testBackends({ local, reload: options.reload, clock }));
  const call = (method: string, target: string, body?: unknown, headers?: Record<string, string>) =>
    router.handle(makeRequest(method, target, { body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body), headers }));
  return { clock, rpc, local, router, call };
}

function json(r: HttpResponse): any {
  return JSON.parse(typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body));
}

function text(r: HttpResponse): string {
  return typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body);
}

test("PUT /v1/agent/service/register (snake_case and CamelCase) then GET services, service/<id>, checks", async () => {
  const { call, rpc } = setup();
  let r = await call("PUT", "/v1/agent/service/register", {
    name: "web", id: "web1", port: 80, tags: ["v1"], meta: { Version: "1" }, enable_tag_override: true,
    tagged_addresses: { lan: { address: "10.0.0.1", port: 80 } },
    check: { http: "http://127.0.0.1:80/health", interval: "10s", timeout: "1s" },
  });
  assert.equal(r.status, 200, text(r));
  r = await call("PUT", "/v1/agent/service/register", { Name: "db", Port: 5432, Checks: [{ TTL: "15s" }, { TCP: "127.0.0.1:5432", Interval: "5s", Status: "passing" }] });
  assert.equal(r.status, 200, text(r));

  const services = json(await call("GET", "/v1/agent/services"));
  assert.deepEqual(Object.keys(services), ["db", "web1"]);
  assert.deepEqual(services.web1, {
    ID: "web1", Service: "web", Tags: ["v1"], Meta: { Version: "1" }, Port: 80, Address: "",
    TaggedAddresses: { lan: { Address: "10.0.0.1", Port: 80 } }, Weights: { Passing: 1, Warning: 1 }, EnableTagOverride: true, Datacenter: "dc1",
  });
  assert.deepEqual(Object.keys(json(await call("GET", `/v1/agent/services?filter=${encodeURIComponent('Service == "db"')}`))), ["db"]);
  assert.deepEqual(Object.keys(json(await call("GET", `/v1/agent/checks?filter=${encodeURIComponent('Type == "ttl"')}`))), ["service:db:1"]);
  assert.equal((await call("GET", `/v1/agent/services?filter=${encodeURIComponent("Service ==")}`)).status, 400);
  const one = json(await call("GET", "/v1/agent/service/web1"));
  assert.match(one.ContentHash, /^[0-9a-f]{16}$/);
  assert.equal((await call("GET", "/v1/agent/service/nope")).status, 404);

  const checks = json(await call("GET", "/v1/agent/checks"));
  assert.deepEqual(Object.keys(checks), ["service:db:1", "service:db:2", "service:web1"]);
  assert.equal(checks["service:web1"].Name, "Service 'web' check");
  assert.equal(checks["service:web1"].Type, "http");
  assert.equal(checks["service:web1"].Interval, "10s");
  assert.equal(checks["service:web1"].Definition.HTTP, "http://127.0.0.1:80/health");
  assert.equal(checks["service:db:1"].Status, "critical");
  assert.equal(checks["service:db:2"].Status, "passing");
  assert.equal(checks["service:db:2"].ServiceName, "db");
  // Synced before the PUT returned.
  assert.equal(rpc.services.get("n1")?.has("web1"), true);
  assert.equal(rpc.checks.get("n1")?.get("service:db:2")?.status, "passing");
});

test("service register: Consul's 400s", async () => {
  const { call } = setup();
  const cases: Array<[unknown, RegExp]> = [
    ["", /^Request decode failed: EOF$/],
    ["{", /^Request decode failed/],
    [{ Port: 1 }, /^Missing service name$/],
    [{ Name: "x", Address: "0.0.0.0" }, /^Invalid service address$/],
    [{ Name: "x", Check: { Interval: "10s" } }, /^Invalid check: TTL must be > 0 for TTL checks$/],
    [{ Name: "x", Check: { HTTP: "http://x" } }, /^Invalid check: Interval must be > 0/],
    [{ Name: "x", Check: { TTL: "10s", Interval: "10s" } }, /^Invalid check: Interval and TTL cannot both be specified$/],
    [{ Name: "x", Check: { GRPC: "127.0.0.1:1" } }, /^Invalid check: Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or GRPC checks$/],
    [{ Name: "x", Check: { UDP: "nohost", Interval: "10s" } }, /^Invalid check: UDP must be host:port/],
    [{ Name: "x", Check: { TTL: "10s", Status: "bogus" } }, /^Status for checks must 'passing', 'warning', 'critical'$/],
    [{ Name: "x", Check: { TTL: "ten" } }, /invalid duration/],
    [{ Name: "x", Port: "eighty" }, /Port must be an integer/],
  ];
  for (const [body, want] of cases) {
    const r = await call("PUT", "/v1/agent/service/register", body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${text(r)}`);
    assert.match(text(r), want, JSON.stringify(body));
  }
});

test("GET /v1/agent/service/<id>?hash= blocks until the service changes or the wait ends", async () => {
  const { call, clock } = setup();
  await call("PUT", "/v1/agent/service/register", { Name: "web", Port: 80 });
  const first = await call("GET", "/v1/agent/service/web");
  const hash = json(first).ContentHash as string;
  assert.equal(first.headers["X-Consul-ContentHash"], hash);
  let answered = false;
  const blocked = call("GET", `/v1/agent/service/web?hash=${hash}&wait=30s`).then((r) => {
    answered = true;
    return r;
  });
  await clock.runFor(10_000);
  assert.equal(answered, false, "same content: still waiting");
  await call("PUT", "/v1/agent/service/register", { Name: "web", Port: 81 });
  const r = await blocked;
  assert.equal(json(r).Port, 81);
  assert.notEqual(json(r).ContentHash, hash);
  const timedOut = call("GET", `/v1/agent/service/web?hash=${json(r).ContentHash}&wait=5s`);
  await clock.runFor(5_000);
  assert.equal(json(await timedOut).Port, 81, "the wait ended with the unchanged service");
});

test("?replace-existing-checks drops the checks the new definition does not name", async () => {
  const { call } = setup();
  await call("PUT", "/v1/agent/service/register", { Name: "a", Checks: [{ TTL: "10s" }, { TTL: "10s" }] });
  await call("PUT", "/v1/agent/service/register", { Name: "a", Check: { CheckID: "only", TTL: "10s" } });
  assert.deepEqual(Object.keys(json(await call("GET", "/v1/agent/checks"))), ["only", "service:a:1", "service:a:2"]);
  await call("PUT", "/v1/agent/service/register?replace-existing-checks", { Name: "a", Check: { CheckID: "only", TTL: "10s" } });
  assert.deepEqual(Object.keys(json(await call("GET", "/v1/agent/checks"))), ["only"]);
});

test("service deregister: removes service and its checks; unknown ID is 404 with Consul's text", async () => {
  const { call, rpc } = setup();
  await call("PUT", "/v1/agent/service/register", { Name: "a", Check: { TTL: "10s" } });
  let r = await call("PUT", "/v1/agent/service/deregister/a");
  assert.equal(r.status, 200);
  assert.deepEqual(json(await call("GET", "/v1/agent/services")), {});
  assert.deepEqual(json(await call("GET", "/v1/agent/checks")), {});
  assert.equal(rpc.services.get("n1")?.has("a"), false);
  r = await call("PUT", "/v1/agent/service/deregister/a");
  assert.equal(r.status, 404);
  assert.equal(text(r), `Unknown service ID "a". Ensure that the service ID is passed, not the service name.`);
  assert.equal((await call("GET", "/v1/agent/service/deregister/a")).status, 405);
});

test("check register/deregister, TTL pass/warn/fail/update, and their errors", async () => {
  const { call, rpc } = setup();
  let r = await call("PUT", "/v1/agent/check/register", { Name: "mem", TTL: "15s", Notes: "memory" });
  assert.equal(r.status, 200, text(r));
  let c = json(await call("GET", "/v1/agent/checks")).mem;
  assert.equal(c.Status, "critical");
  assert.equal(c.Notes, "memory");
  assert.equal(c.Type, "ttl");

  for (const [verb, status] of [["pass", "passing"], ["warn", "warning"], ["fail", "critical"]] as const) {
    r = await call("PUT", `/v1/agent/check/${verb}/mem?note=${verb}%20note`);
    assert.equal(r.status, 200, text(r));
    c = json(await call("GET", "/v1/agent/checks")).mem;
    assert.equal(c.Status, status);
    assert.equal(c.Output, `${verb} note`);
    assert.equal(rpc.checks.get("n1")?.get("mem")?.status, status);
  }
  r = await call("PUT", "/v1/agent/check/update/mem", { status: "passing", output: "x".repeat(5000) });
  assert.equal(r.status, 200, text(r));
  c = json(await call("GET", "/v1/agent/checks")).mem;
  assert.equal(c.Status, "passing");
  assert.match(c.Output, / \.\.\. \(captured 4096 of 5000 bytes\)$/);
  r = await call("PUT", "/v1/agent/check/update/mem", { Status: "sideways" });
  assert.equal(r.status, 400);
  assert.equal(text(r), "Invalid check status: 'sideways'");

  r = await call("PUT", "/v1/agent/check/pass/nope");
  assert.equal(r.status, 404);
  assert.equal(text(r), `Unknown check ID "nope". Ensure that the check ID is passed, not the check name.`);
  await call("PUT", "/v1/agent/check/register", { Name: "port", TCP: "127.0.0.1:1", Interval: "10s" });
  r = await call("PUT", "/v1/agent/check/pass/port");
  assert.equal(r.status, 500);
  assert.equal(text(r), `CheckID "port" does not have associated TTL`);

  assert.equal(text(await call("PUT", "/v1/agent/check/register", { TTL: "1s" })), "Missing check name");
  assert.equal(text(await call("PUT", "/v1/agent/check/register", { Name: "x", TTL: "1s", Status: "meh" })), "Bad check status");
  r = await call("PUT", "/v1/agent/check/register", { Name: "x", TTL: "1s", ServiceID: "ghost" });
  assert.equal(r.status, 404);
  assert.equal(text(r), `ServiceID "ghost" does not exist`);

  r = await call("PUT", "/v1/agent/check/deregister/mem");
  assert.equal(r.status, 200);
  assert.equal(rpc.checks.get("n1")?.has("mem"), false);
  r = await call("PUT", "/v1/agent/check/deregister/mem");
  assert.equal(r.status, 404);
});

test("script checks over the API need enable_script_checks (500 with Consul's text otherwise)", async () => {
  let { call } = setup();
  let r = await call("PUT", "/v1/agent/check/register", { Name: "s", Args: ["true"], Interval: "10s" });
  assert.equal(r.status, 500);
  assert.equal(text(r), "Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true");
  r = await call("PUT", "/v1/agent/service/register", { Name: "svc", Check: { Args: ["true"], Interval: "10s" } });
  assert.equal(r.status, 500);
  ({ call } = setup({ enableScriptChecks: true }));
  r = await call("PUT", "/v1/agent/check/register", { Name: "s", Args: ["true"], Interval: "10s" });
  assert.equal(r.status, 200, text(r));
  assert.equal(json(await call("GET", "/v1/agent/checks")).s.Type, "script");
});

test("node and service maintenance", async () => {
  const { call, rpc } = setup();
  assert.equal(text(await call("PUT", "/v1/agent/maintenance")), "Missing value for enable");
  assert.equal(text(await call("PUT", "/v1/agent/maintenance?enable=maybe")), `Invalid value for enable: "maybe"`);
  let r = await call("PUT", "/v1/agent/maintenance?enable=true&reason=patching");
  assert.equal(r.status, 200);
  let checks = json(await call("GET", "/v1/agent/checks"));
  assert.equal(checks._node_maintenance.Notes, "patching");
  assert.equal(checks._node_maintenance.Status, "critical");
  assert.equal(rpc.checks.get("n1")?.has("_node_maintenance"), true);
  await call("PUT", "/v1/agent/maintenance?enable=false");
  assert.equal(json(await call("GET", "/v1/agent/checks"))._node_maintenance, undefined);

  r = await call("PUT", "/v1/agent/service/maintenance/ghost?enable=true");
  assert.equal(r.status, 404);
  assert.equal(text(r), `No service registered with ID "ghost"`);
  await call("PUT", "/v1/agent/service/register", { Name: "web" });
  r = await call("PUT", "/v1/agent/service/maintenance/web?enable=true");
  assert.equal(r.status, 200);
  checks = json(await call("GET", "/v1/agent/checks"));
  const m = checks["_service_maintenance:web"];
  assert.equal(m.ServiceID, "web");
  assert.equal(m.Name, "Service Maintenance Mode");
  assert.match(m.Notes, /no reason was provided/);
  r = await call("GET", "/v1/agent/health/service/id/web");
  assert.equal(r.status, 503);
  assert.equal(json(r).AggregatedStatus, "maintenance");
  await call("PUT", "/v1/agent/service/maintenance/web?enable=false");
  assert.equal(json(await call("GET", "/v1/agent/checks"))["_service_maintenance:web"], undefined);
});

test("/v1/agent/health/service/id and name: 200/429/503/404 by aggregated status, JSON or text", async () => {
  const { call } = setup();
  await call("PUT", "/v1/agent/service/register", { Name: "web", ID: "w1", Check: { TTL: "1m" } });
  await call("PUT", "/v1/agent/service/register", { Name: "web", ID: "w2", Check: { TTL: "1m" } });
  await call("PUT", "/v1/agent/check/pass/service:w1");
  await call("PUT", "/v1/agent/check/pass/service:w2");
  let r = await call("GET", "/v1/agent/health/service/id/w1");
  assert.equal(r.status, 200);
  assert.equal(json(r).AggregatedStatus, "passing");
  assert.equal(json(r).Service.ID, "w1");
  assert.equal(json(r).Checks.length, 1);
  r = await call("GET", "/v1/agent/health/service/name/web?format=text");
  assert.equal(r.status, 200);
  assert.equal(text(r), "passing");
  await call("PUT", "/v1/agent/check/warn/service:w2");
  r = await call("GET", "/v1/agent/health/service/name/web");
  assert.equal(r.status, 429);
  assert.equal(json(r).length, 2);
  await call("PUT", "/v1/agent/check/fail/service:w1");
  r = await call("GET", "/v1/agent/health/service/name/web", undefined, { Accept: "text/plain" });
  assert.equal(r.status, 503);
  assert.equal(text(r), "critical");
  r = await call("GET", "/v1/agent/health/service/id/w2");
  assert.equal(r.status, 429);
  r = await call("GET", "/v1/agent/health/service/id/zzz?format=text");
  assert.equal(r.status, 404);
  assert.equal(text(r), "ServiceId zzz not found");
  r = await call("GET", "/v1/agent/health/service/id/zzz");
  assert.deepEqual(json(r), { AggregatedStatus: "critical", Service: null, Checks: null });
  r = await call("GET", "/v1/agent/health/service/name/zzz?format=text");
  assert.equal(r.status, 404);
  assert.equal(text(r), "ServiceName zzz Not Found");
  // Node-level checks count for every service on the node.
  await call("PUT", "/v1/agent/check/pass/service:w1");
  await call("PUT", "/v1/agent/check/pass/service:w2");
  await call("PUT", "/v1/agent/check/register", { Name: "disk", TTL: "1m", Status: "warning" });
  assert.equal((await call("GET", "/v1/agent/health/service/id/w1")).status, 429);
});

test("PUT /v1/agent/reload calls the agent's reload; failures are 500 with the reason", async () => {
  let calls = 0;
  let { call } = setup({ reload: async () => void calls++ });
  assert.equal((await call("PUT", "/v1/agent/reload")).status, 200);
  assert.equal(calls, 1);
  ({ call } = setup({ reload: async () => { throw new Error("Invalid service or check definition: services[0]: Missing service name"); } }));
  const r = await call("PUT", "/v1/agent/reload");
  assert.equal(r.status, 500);
  assert.match(text(r), /Missing service name/);
});
