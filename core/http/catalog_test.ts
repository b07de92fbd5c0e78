import assert from "node:assert/strict";
import { test } from "node:test";
import { createLocalRpc } from "../rpc/local.ts";
import { createDevServer } from "../server/dev.ts";
import { Rng } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { bodyJson, bodyText, testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest, type HttpResponse } from "./types.ts";

async function env() {
  const clock = new SimClock({ wallOffsetMs: 1_700_000_000_000 });
  const dev = await createDevServer({ clock, rng: new Rng(11) });
  const router = createRoutes(testBackends({ rpc: createLocalRpc(dev.server) }));
  const req = (method: string, target: string, body?: unknown): Promise<HttpResponse> =>
    router.handle(makeRequest(method, target, body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }));
  return { clock, dev, req };
}

const register = {
  Datacenter: "dc1",
  ID: "40e4a748-2192-161a-0510-9bf59fe950b5",
  Node: "foobar",
  Address: "192.168.10.10",
  TaggedAddresses: { lan: "192.168.10.10", wan: "10.0.10.10" },
  NodeMeta: { somekey: "somevalue" },
  Service: {
    ID: "redis1",
    Service: "redis",
    Tags: ["primary", "v1"],
    Address: "127.0.0.1",
    TaggedAddresses: { lan: { address: "127.0.0.1", port: 8000 } },
    Meta: { redis_version: "4.0" },
    Port: 8000,
  },
  Check: {
    Node: "foobar",
    CheckID: "service:redis1",
    Name: "Redis health check",
    Notes: "Script based health check",
    Status: "passing",
    ServiceID: "redis1",
    Definition: { TCP: "localhost:8888", Interval: "5s", Timeout: "1s", DeregisterCriticalServiceAfter: "30s" },
  },
  SkipNodeUpdate: false,
};

test("http catalog: register (Consul's doc example), then every read answers Consul's JSON", async () => {
  const { req } = await env();
  const put = await req("PUT", "/v1/catalog/register", register);
  assert.equal(put.status, 200, bodyText(put));
  assert.equal(bodyText(put), "true");

  const nodes = await req("GET", "/v1/catalog/nodes");
  assert.equal(nodes.status, 200);
  assert.ok(Number(nodes.headers["X-Consul-Index"]) >= 3);
  assert.deepEqual(bodyJson(nodes), [{
    ID: "40e4a748-2192-161a-0510-9bf59fe950b5", Node: "foobar", Address: "192.168.10.10", Datacenter: "dc1",
    TaggedAddresses: { lan: "192.168.10.10", wan: "10.0.10.10" }, Meta: { somekey: "somevalue" }, CreateIndex: 3, ModifyIndex: 3,
  }]);
  assert.deepEqual(bodyJson(await req("GET", "/v1/catalog/services")), { redis: ["primary", "v1"] });

  const svc = bodyJson(await req("GET", "/v1/catalog/service/redis?tag=primary")) as Record<string, unknown>[];
  assert.equal(svc.length, 1);
  assert.deepEqual(Object.keys(svc[0]!), [
    "ID", "Node", "Address", "Datacenter", "TaggedAddresses", "NodeMeta", "ServiceKind", "ServiceID", "ServiceName", "ServiceTags",
    "ServiceAddress", "ServiceTaggedAddresses", "ServiceWeights", "ServiceMeta", "ServicePort", "ServiceSocketPath",
    "ServiceEnableTagOverride", "ServiceProxy", "ServiceConnect", "CreateIndex", "ModifyIndex",
  ]);
  assert.deepEqual([svc[0]!.ServiceID, svc[0]!.ServicePort, svc[0]!.ServiceWeights, svc[0]!.ServiceTaggedAddresses], [
    "redis1", 8000, { Passing: 1, Warning: 1 }, { lan: { Address: "127.0.0.1", Port: 8000 } },
  ]);
  assert.deepEqual(bodyJson(await req("GET", "/v1/catalog/service/redis?tag=primary&tag=nope")), []);

  const node = bodyJson(await req("GET", "/v1/catalog/node/foobar")) as { Node: { Node: string }; Services: Record<string, { Port: number }> };
  assert.equal(node.Node.Node, "foobar");
  assert.equal(node.Services.redis1!.Port, 8000);
  assert.equal(bodyText(await req("GET", "/v1/catalog/node/nope")), "null");
  const list = bodyJson(await req("GET", "/v1/catalog/node-services/foobar")) as { Services: { ID: string }[] };
  assert.deepEqual(list.Services.map((s) => s.ID), ["redis1"]);
  assert.equal((await req("GET", "/v1/catalog/node-services/nope")).status, 404);

  const checks = bodyJson(await req("GET", "/v1/health/node/foobar")) as Record<string, unknown>[];
  assert.deepEqual(checks[0], {
    Node: "foobar", CheckID: "service:redis1", Name: "Redis health check", Status: "passing", Notes: "Script based health check",
    Output: "", ServiceID: "redis1", ServiceName: "redis", ServiceTags: ["primary", "v1"], Type: "", Interval: "5s", Timeout: "1s",
    ExposedPort: 0, Definition: { TCP: "localhost:8888", Interval: "5s", Timeout: "1s", DeregisterCriticalServiceAfter: "30s" },
    CreateIndex: 3, ModifyIndex: 3,
  });
  const health = bodyJson(await req("GET", "/v1/health/service/redis?passing")) as { Node: unknown; Service: Record<string, unknown>; Checks: unknown[] }[];
  assert.equal(health.length, 1);
  assert.deepEqual(Object.keys(health[0]!), ["Node", "Service", "Checks"]);
  assert.deepEqual(health[0]!.Service.Weights, { Passing: 1, Warning: 1 });
  assert.equal((bodyJson(await req("GET", "/v1/health/checks/redis")) as unknown[]).length, 1);
  assert.equal((bodyJson(await req("GET", "/v1/health/state/passing")) as unknown[]).length, 1);
  assert.equal((bodyJson(await req("GET", "/v1/health/state/critical")) as unknown[]).length, 0);
  assert.equal((bodyJson(await req("GET", `/v1/health/service/redis?filter=${encodeURIComponent('Service.Meta.redis_version == "4.0"')}`)) as unknown[]).length, 1);
  assert.equal((bodyJson(await req("GET", `/v1/health/service/redis?filter=${encodeURIComponent('"v2" in Service.Tags')}`)) as unknown[]).length, 0);
  assert.equal((bodyJson(await req("GET", "/v1/catalog/nodes?node-meta=somekey:somevalue")) as unknown[]).length, 1);
  assert.equal((bodyJson(await req("GET", "/v1/catalog/nodes?node-meta=somekey:other")) as unknown[]).length, 0);
  assert.deepEqual(bodyJson(await req("GET", "/v1/catalog/datacenters")), ["dc1"]);

  assert.equal(bodyText(await req("PUT", "/v1/catalog/deregister", { Node: "foobar", ServiceID: "redis1" })), "true");
  assert.deepEqual(bodyJson(await req("GET", "/v1/catalog/services")), {});
  assert.deepEqual(bodyJson(await req("GET", "/v1/health/node/foobar")), [], "the service's check went with it");
});

test("http catalog: 400s for bad bodies, filters, states and missing names", async () => {
  const { req } = await env();
  const cases: [string, string, unknown, RegExp][] = [
    ["PUT", "/v1/catalog/register", "{not json", /^Request decode failed/],
    ["PUT", "/v1/catalog/register", { Address: "1.2.3.4" }, /^Must provide node$/],
    ["PUT", "/v1/catalog/register", { Node: "n" }, /^Must provide address$/],
    ["PUT", "/v1/catalog/register", { Node: "n", Address: "a", Service: { Service: "s", Port: "80" } }, /Service.Port: expected a number/],
    ["GET", `/v1/catalog/nodes?filter=${encodeURIComponent("Node ==")}`, undefined, /^Failed to create boolean expression evaluator: 1:8 \(7\)/],
    ["GET", "/v1/health/state/broken", undefined, /Invalid check state/],
    ["GET", "/v1/catalog/service/", undefined, /Missing service name/],
    ["PUT", "/v1/catalog/deregister", {}, /Must provide node/],
  ];
  for (const [method, path, body, want] of cases) {
    const r = await req(method, path, body);
    assert.equal(r.status, 400, `${method} ${path}: ${bodyText(r)}`);
    assert.match(bodyText(r), want, `${method} ${path}`);
  }
  const r = await req("PUT", "/v1/catalog/register", { Node: "n", Address: "a", Check: { Name: "c", ServiceID: "nope" } });
  assert.equal(r.status, 500);
  assert.match(bodyText(r), /Missing service registration/);
  assert.equal((await req("GET", "/v1/catalog/register")).status, 405);
});

test("http health: a blocking read of one service wakes on its change, not on another's", async () => {
  const { req } = await env();
  await req("PUT", "/v1/catalog/register", register);
  await req("PUT", "/v1/catalog/register", { Node: "other", Address: "10.0.0.2", Service: { Service: "db", Port: 5432 } });
  const first = await req("GET", "/v1/health/service/redis");
  const index = first.headers["X-Consul-Index"]!;
  let done: HttpResponse | undefined;
  const p = req("GET", `/v1/health/service/redis?index=${index}&wait=1m`).then((r) => (done = r));
  await drainMicrotasks();
  await req("PUT", "/v1/catalog/register", { Node: "other", Address: "10.0.0.2", Service: { Service: "db", Port: 5433 } });
  await drainMicrotasks();
  assert.equal(done, undefined, "db change must not answer a redis watcher");
  await req("PUT", "/v1/catalog/register", { ...register, Check: { ...register.Check, Status: "critical" } });
  await p;
  assert.ok(Number(done!.headers["X-Consul-Index"]) > Number(index));
  assert.equal(((bodyJson(done!) as { Checks: { Status: string }[] }[])[0]!.Checks[0]!.Status), "critical");
});

test("http session: create with defaults, info, list, node, renew, destroy; TTL bounds are 400s", async () => {
  const { req } = await env();
  // The default NodeChecks is serfHealth, as Consul: without it registered, create fails.
  const missing = await req("PUT", "/v1/session/create", { Name: "x" });
  assert.equal(missing.status, 500);
  assert.match(bodyText(missing), /Missing node registration/);
  await req("PUT", "/v1/catalog/register", { Node: "node-a", Address: "127.0.0.1", Check: { CheckID: "serfHealth", Name: "Serf Health Status", Status: "passing" } });
  const created = await req("PUT", "/v1/session/create", { Name: "patroni", TTL: "30s", LockDelay: "1.5s" });
  assert.equal(created.status, 200, bodyText(created));
  const { ID } = bodyJson(created) as { ID: string };
  const info = bodyJson(await req("GET", `/v1/session/info/${ID}`)) as Record<string, unknown>[];
  assert.deepEqual(info[0], {
    ID, Name: "patroni", Node: "node-a", LockDelay: 1_500_000_000, Behavior: "release", TTL: "30s",
    NodeChecks: ["serfHealth"], ServiceChecks: null, CreateIndex: info[0]!.CreateIndex, ModifyIndex: info[0]!.ModifyIndex,
  });
  assert.equal((bodyJson(await req("GET", "/v1/session/list")) as unknown[]).length, 1);
  assert.equal((bodyJson(await req("GET", "/v1/session/node/node-a")) as unknown[]).length, 1);
  const renew = await req("PUT", `/v1/session/renew/${ID}`);
  assert.equal(renew.status, 200);
  assert.equal((bodyJson(renew) as { ID: string }[])[0]!.ID, ID);
  // A number LockDelay below 1000 means seconds; NodeChecks [] binds nothing.
  const c2 = bodyJson(await req("PUT", "/v1/session/create", { LockDelay: 5, NodeChecks: [], Behavior: "delete" })) as { ID: string };
  const s2 = (bodyJson(await req("GET", `/v1/session/info/${c2.ID}`)) as { LockDelay: number; NodeChecks: null; Behavior: string }[])[0]!;
  assert.deepEqual([s2.LockDelay, s2.NodeChecks, s2.Behavior], [5_000_000_000, null, "delete"]);
  assert.equal(bodyText(await req("PUT", `/v1/session/destroy/${ID}`)), "true");
  assert.deepEqual(bodyJson(await req("GET", `/v1/session/info/${ID}`)), []);
  const gone = await req("PUT", `/v1/session/renew/${ID}`);
  assert.equal(gone.status, 404);
  assert.equal(bodyText(gone), `Session id '${ID}' not found`);
  for (const ttl of ["5s", "86401s"]) {
    const r = await req("PUT", "/v1/session/create", { TTL: ttl, NodeChecks: [] });
    // Consul's catch-all 500 with these words: Patroni matches them to adjust its TTL.
    assert.equal(r.status, 500, ttl);
    assert.match(bodyText(r), /^Invalid Session TTL '\d+', must be between \[10s=24h0m0s\]$/);
  }
  assert.equal((await req("PUT", "/v1/session/create", { TTL: "10.0s", NodeChecks: [] })).status, 200, "decimal TTLs are fine");
  const bad = await req("PUT", "/v1/session/create", { Behavior: "nope", NodeChecks: [] });
  assert.equal(bad.status, 500);
  assert.equal(bodyText(bad), "Invalid Behavior setting 'nope'");
  assert.equal((await req("PUT", "/v1/session/create", "{bad")).status, 400, "a body that is not JSON is a 400");
});

test("http session: acquire through /v1/kv with a session, released when the session is destroyed", async () => {
  const { req, clock } = await env();
  await req("PUT", "/v1/catalog/register", { Node: "node-a", Address: "127.0.0.1", Check: { CheckID: "serfHealth", Name: "Serf Health Status", Status: "passing" } });
  const { ID } = bodyJson(await req("PUT", "/v1/session/create", { LockDelay: "10s" })) as { ID: string };
  assert.equal(bodyText(await req("PUT", `/v1/kv/service/leader?acquire=${ID}`, "me")), "true");
  await req("PUT", `/v1/session/destroy/${ID}`);
  const e = (bodyJson(await req("GET", "/v1/kv/service/leader")) as { Session?: string }[])[0]!;
  assert.equal(e.Session, undefined);
  const { ID: other } = bodyJson(await req("PUT", "/v1/session/create", {})) as { ID: string };
  assert.equal(bodyText(await req("PUT", `/v1/kv/service/leader?acquire=${other}`, "you")), "false", "lock delay");
  clock.advance(10_001);
  assert.equal(bodyText(await req("PUT", `/v1/kv/service/leader?acquire=${other}`, "you")), "true");
});
