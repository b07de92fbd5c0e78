import { test } from "node:test";
import assert from "node:assert/strict";
import { BadRequestError, CasConflictError, NotFoundError, PermissionDeniedError, RpcTimeoutError, TooLargeError } from "../errors.ts";
import { maxSnapshotStateBytes } from "../server/snapshot.ts";
import { bodyJson, bodyText, testAgent, testBackends, testEnv } from "./_test_env.ts";
import {
  agentCheckDeregisterPrefix,
  agentCheckStatusPrefixes,
  agentCheckUpdatePrefix,
  agentHealthServiceIdPrefix,
  agentHealthServiceNamePrefix,
  agentServiceDeregisterPrefix,
  agentServiceMaintenancePrefix,
  agentServicePrefix,
} from "./agent_services.ts";
import { catalogNodePrefix, catalogNodeServicesPrefix, catalogServicePrefix } from "./catalog.ts";
import { coordinateNodePrefix } from "./coordinate.ts";
import { eventFirePrefix } from "./event.ts";
import { healthChecksPrefix, healthNodePrefix, healthServicePrefix, healthStatePrefix } from "./health.ts";
import { errorResponse, HttpError, statusForError } from "./http_error.ts";
import { kvMaxValueBytes, kvPrefix } from "./kvs.ts";
import { agentForceLeavePrefix, agentJoinPrefix } from "./members.ts";
import { queryPrefix } from "./prepared_query.ts";
import { defaultMaxBodyBytes, type AuthzRequirement, type Route } from "./router.ts";
import { createRoutes } from "./routes.ts";
import { sessionDestroyPrefix, sessionInfoPrefix, sessionNodePrefix, sessionRenewPrefix } from "./session.ts";
import { txnMaxRequestBytes } from "./txn.ts";
import { makeRequest } from "./types.ts";

test("routes: unknown path is 404 with a clear message", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/nope");
  assert.equal(r.status, 404);
  assert.equal(bodyText(r), 'Not found: no endpoint for "/v1/nope"');
});

test("routes: wrong method is 405 with Allow; OPTIONS answers Allow", async () => {
  const env = testEnv();
  const r = await env.req("DELETE", "/v1/status/leader");
  assert.equal(r.status, 405);
  assert.equal(bodyText(r), "method DELETE not allowed");
  assert.equal(r.headers["Allow"], "OPTIONS,GET");
  const o = await env.req("OPTIONS", "/v1/kv/x");
  assert.equal(o.status, 200);
  assert.equal(o.headers["Allow"], "OPTIONS,GET,PUT,DELETE");
});

test("routes: /v1/kv without the slash redirects like Go's ServeMux", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/kv?keys");
  assert.equal(r.status, 301);
  assert.equal(r.headers["Location"], "/v1/kv/?keys=");
});

test("errors: codes map to Consul's status codes in one place", () => {
  const table: [unknown, number][] = [
    [new BadRequestError("b"), 400],
    [new NotFoundError("n"), 404],
    [new TooLargeError("t", 1), 413],
    [new CasConflictError("c"), 409],
    [new PermissionDeniedError(), 403],
    [new RpcTimeoutError("r"), 500],
    [new HttpError(429, "slow down"), 429],
    [new Error("x"), 500],
    ["string", 500],
  ];
  for (const [err, status] of table) assert.equal(statusForError(err), status, String(err));
  const r = errorResponse(new HttpError(405, "no", { headers: { Allow: "GET" } }));
  assert.equal(r.headers["Allow"], "GET");
  assert.equal(r.headers["Content-Type"], "text/plain; charset=utf-8");
});

test("status: leader and peers", async () => {
  const env = testEnv();
  const leader = await env.req("GET", "/v1/status/leader");
  assert.equal(leader.status, 200);
  assert.equal(bodyText(leader), '"127.0.0.1:8300"');
  assert.equal(leader.headers["Content-Type"], "application/json");
  env.rpc.leader = "";
  assert.equal(bodyText(await env.req("GET", "/v1/status/leader?dc=dc2")), '""');
  assert.deepEqual(env.rpc.lastCall()!.args, { datacenter: "dc2" });
  env.rpc.peers = ["10.0.0.1:8300", "10.0.0.2:8300"];
  assert.deepEqual(bodyJson(await env.req("GET", "/v1/status/peers")), ["10.0.0.1:8300", "10.0.0.2:8300"]);
  assert.match(bodyText(await env.req("GET", "/v1/status/peers?pretty")), /\n {4}"10\.0\.0\.1:8300"/);
});

test("agent/self: Config, Member, Meta, DebugConfig and Stats from AgentInfo", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/agent/self");
  assert.equal(r.status, 200);
  const self = bodyJson(r) as Record<string, Record<string, unknown>>;
  assert.deepEqual(
    { ...self.Config },
    {
      Datacenter: "dc1", PrimaryDatacenter: "dc1", NodeName: "node-a", NodeID: "5f7a3c1e-0d2b-4c8e-9a61-3b7f0e2d9c44",
      Server: true, Revision: "abc123", Version: "0.1.0", VersionPrerelease: "", VersionMetadata: "", BuildDate: "",
    },
  );
  assert.equal(self.Member!.Name, "node-a");
  assert.equal(self.Member!.Addr, "127.0.0.1");
  assert.equal(self.Member!.Port, 8301);
  assert.equal(self.Member!.Status, 1);
  assert.deepEqual(self.Meta, {});
  assert.deepEqual(self.Stats, {});
  assert.equal(self.DebugConfig!.NodeName, "node-a");
  assert.equal(self.Coord, null, "no coordinate yet");
});

test("agent/self: Coord is the agent's own LAN coordinate", async () => {
  const coord = { vec: [0.001, -0.002, 0, 0, 0, 0, 0, 0], error: 0.4, adjustment: 0.0001, height: 0.00002 };
  const router = createRoutes(testBackends({ agent: { ...testAgent, coordinate: () => coord } }));
  const self = bodyJson(await router.handle(makeRequest("GET", "/v1/agent/self"))) as Record<string, unknown>;
  assert.deepEqual(self.Coord, { Vec: coord.vec, Error: 0.4, Adjustment: 0.0001, Height: 0.00002 });
});

test("agent/version: Consul's BuildInfo fields", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/agent/version");
  assert.equal(r.status, 200);
  assert.deepEqual(bodyJson(r), { SHA: "abc123", BuildDate: "1970-01-01T00:00:01Z", HumanVersion: "0.1.0", FIPS: "" });
  const dated = createRoutes(testBackends({ agent: { ...testAgent, buildDate: "2026-11-25T01:00:00Z" } }));
  const v = bodyJson(await dated.handle(makeRequest("GET", "/v1/agent/version"))) as Record<string, unknown>;
  assert.equal(v.BuildDate, "2026-11-25T01:00:00Z");
});


// The /v1 table, as consul agent/http_register.go lists it: every pattern
// with its methods and body limit (default 512 KiB unless named).
const table: Array<[pattern: string, methods: string, maxBodyBytes?: number]> = [
  ["/v1/acl/bootstrap", "PUT"],
  ["/v1/acl/policies", "GET"],
  ["/v1/acl/policy", "PUT"],
  ["/v1/acl/policy/", "GET,PUT,DELETE"],
  ["/v1/acl/replication", "GET"],
  ["/v1/acl/role", "PUT"],
  ["/v1/acl/role/", "GET,PUT,DELETE"],
  ["/v1/acl/roles", "GET"],
  ["/v1/acl/token", "PUT"],
  ["/v1/acl/token/", "GET,PUT,DELETE"],
  ["/v1/acl/tokens", "GET"],
  ["/v1/agent/check/deregister/", "PUT"],
  ["/v1/agent/check/fail/", "PUT"],
  ["/v1/agent/check/pass/", "PUT"],
  ["/v1/agent/check/register", "PUT"],
  ["/v1/agent/check/update/", "PUT"],
  ["/v1/agent/check/warn/", "PUT"],
  ["/v1/agent/checks", "GET"],
  ["/v1/agent/debug/heap", "GET"],
  ["/v1/agent/debug/profile", "GET"],
  ["/v1/agent/force-leave/", "PUT"],
  ["/v1/agent/health/service/id/", "GET"],
  ["/v1/agent/health/service/name/", "GET"],
  ["/v1/agent/host", "GET"],
  ["/v1/agent/join/", "PUT"],
  ["/v1/agent/leave", "PUT"],
  ["/v1/agent/maintenance", "PUT"],
  ["/v1/agent/members", "GET"],
  ["/v1/agent/metrics", "GET"],
  ["/v1/agent/monitor", "GET"],
  ["/v1/agent/reload", "PUT"],
  ["/v1/agent/self", "GET"],
  ["/v1/agent/service/", "GET"],
  ["/v1/agent/service/deregister/", "PUT"],
  ["/v1/agent/service/maintenance/", "PUT"],
  ["/v1/agent/service/register", "PUT"],
  ["/v1/agent/services", "GET"],
  ["/v1/agent/token/", "PUT"],
  ["/v1/agent/version", "GET"],
  ["/v1/catalog/datacenters", "GET"],
  ["/v1/catalog/deregister", "PUT"],
  ["/v1/catalog/node-services/", "GET"],
  ["/v1/catalog/node/", "GET"],
  ["/v1/catalog/nodes", "GET"],
  ["/v1/catalog/register", "PUT"],
  ["/v1/catalog/service/", "GET"],
  ["/v1/catalog/services", "GET"],
  ["/v1/coordinate/datacenters", "GET"],
  ["/v1/coordinate/node/", "GET"],
  ["/v1/coordinate/nodes", "GET"],
  ["/v1/coordinate/update", "PUT"],
  ["/v1/event/fire/", "PUT"],
  ["/v1/event/list", "GET"],
  ["/v1/health/checks/", "GET"],
  ["/v1/health/node/", "GET"],
  ["/v1/health/service/", "GET"],
  ["/v1/health/state/", "GET"],
  ["/v1/internal/ui/services", "GET"],
  ["/v1/kv/", "GET,PUT,DELETE", kvMaxValueBytes],
  ["/v1/operator/autopilot/configuration", "GET,PUT"],
  ["/v1/operator/autopilot/health", "GET"],
  ["/v1/operator/autopilot/state", "GET"],
  ["/v1/operator/keyring", "GET,POST,PUT,DELETE"],
  ["/v1/operator/raft/configuration", "GET"],
  ["/v1/operator/raft/peer", "DELETE"],
  ["/v1/operator/raft/transfer-leader", "POST"],
  ["/v1/query", "GET,POST"],
  ["/v1/query/", "GET,PUT,DELETE"],
  ["/v1/session/create", "PUT"],
  ["/v1/session/destroy/", "PUT"],
  ["/v1/session/info/", "GET"],
  ["/v1/session/list", "GET"],
  ["/v1/session/node/", "GET"],
  ["/v1/session/renew/", "PUT"],
  ["/v1/snapshot", "GET,PUT", maxSnapshotStateBytes],
  ["/v1/status/leader", "GET"],
  ["/v1/status/peers", "GET"],
  ["/v1/txn", "PUT", txnMaxRequestBytes],
];

/** A path the route serves: the pattern itself, or something under a prefix pattern. */
function pathFor(route: Pick<Route, "pattern">): string {
  return route.pattern.endsWith("/") ? `${route.pattern}x` : route.pattern;
}

test("route table: every /v1 route with its methods and body limit, each pattern once", () => {
  const router = createRoutes(testBackends());
  const routes = router.routes();
  assert.deepEqual(routes.map((r) => [r.pattern, r.methods.join(",")]), table.map(([p, m]) => [p, m]));
  assert.equal(new Set(routes.map((r) => r.pattern)).size, routes.length, "no pattern twice");
  for (const [pattern, , limit] of table) {
    const found = router.lookup(table.find((t) => t[0] === pattern)![1].split(",")[0]!, pathFor({ pattern }));
    assert.equal(found.kind, "route", pattern);
    if (found.kind === "route") {
      assert.equal(found.route.pattern, pattern);
      assert.equal(found.maxBodyBytes, limit ?? defaultMaxBodyBytes, pattern);
    }
  }
  // The KV limit follows kv_max_value_size.
  const kv = createRoutes(testBackends({ kvMaxValueBytes: 1024 })).lookup("PUT", "/v1/kv/a");
  assert.equal(kv.kind === "route" && kv.maxBodyBytes, 1024);
});

test("route table: any other method is a 405 naming the allowed ones; OPTIONS answers Allow", async () => {
  const router = createRoutes(testBackends());
  for (const route of router.routes()) {
    const allow = ["OPTIONS", ...route.methods].join(",");
    for (const method of ["GET", "PUT", "POST", "DELETE", "PATCH", "HEAD"]) {
      if (route.methods.includes(method)) continue;
      const r = await router.handle(makeRequest(method, pathFor(route)));
      assert.equal(r.status, 405, `${method} ${route.pattern}`);
      assert.equal(r.headers["Allow"], allow, `${method} ${route.pattern}`);
      assert.equal(bodyText(r), `method ${method} not allowed`);
    }
    const o = await router.handle(makeRequest("OPTIONS", pathFor(route)));
    assert.deepEqual([o.status, o.headers["Allow"]], [200, allow], route.pattern);
  }
});

test("route table: the path prefixes the family handlers cut are the table's patterns", () => {
  const patterns = new Set(createRoutes(testBackends()).patterns());
  const prefixes = [
    kvPrefix, catalogServicePrefix, catalogNodePrefix, catalogNodeServicesPrefix,
    healthNodePrefix, healthChecksPrefix, healthServicePrefix, healthStatePrefix,
    sessionDestroyPrefix, sessionRenewPrefix, sessionInfoPrefix, sessionNodePrefix, queryPrefix,
    agentServicePrefix, agentServiceDeregisterPrefix, agentServiceMaintenancePrefix, agentCheckDeregisterPrefix,
    ...Object.values(agentCheckStatusPrefixes), agentCheckUpdatePrefix, agentHealthServiceIdPrefix, agentHealthServiceNamePrefix,
    agentJoinPrefix, agentForceLeavePrefix, eventFirePrefix, coordinateNodePrefix,
  ];
  for (const p of prefixes) assert.ok(patterns.has(p), `${p} is not a route pattern`);
});

function describeNeed(need: AuthzRequirement): string {
  if (need.resource === "none") return "none";
  return need.name === undefined ? `${need.resource}:${need.access}` : `${need.resource}:${need.access}:${need.name}`;
}

test("route table: what each route needs from the caller's token, handed to the authorizer before the handler", async () => {
  const seen: string[] = [];
  const router = createRoutes(testBackends({
    // Record and refuse: no handler runs, so the fakes behind them are never asked.
    authorizer: { authorize: (req, need) => (seen.push(`${req.method} ${req.path}${req.query.size > 0 ? `?${req.query}` : ""} ${describeNeed(need)}`), { allowed: false }) },
  }));
  const requests = [
    // ACL endpoints: the servers check acl:read / acl:write (and token/self needs only a known token).
    "PUT /v1/acl/bootstrap none",
    "PUT /v1/acl/token none",
    "GET /v1/acl/token/self none",
    "PUT /v1/acl/token/t1 none",
    "DELETE /v1/acl/token/t1 none",
    "GET /v1/acl/tokens none",
    "PUT /v1/acl/policy none",
    "GET /v1/acl/policy/p1 none",
    "PUT /v1/acl/policy/p1 none",
    "DELETE /v1/acl/policy/p1 none",
    "GET /v1/acl/policies none",
    "PUT /v1/acl/role none",
    "GET /v1/acl/role/r1 none",
    "PUT /v1/acl/role/r1 none",
    "DELETE /v1/acl/role/r1 none",
    "GET /v1/acl/roles none",
    "GET /v1/acl/replication none",
    "PUT /v1/agent/token/default acl:write",
    "GET /v1/agent/self agent:read:node-a",
    "GET /v1/agent/version none",
    "PUT /v1/agent/reload agent:write:node-a",
    "GET /v1/agent/monitor agent:read:node-a",
    "GET /v1/agent/metrics agent:read:node-a",
    "GET /v1/agent/host operator:read",
    "GET /v1/agent/debug/profile?seconds=1 operator:read",
    "GET /v1/agent/debug/heap operator:read",
    "GET /v1/agent/members node:list",
    "PUT /v1/agent/join/10.0.0.1 agent:write:node-a",
    "PUT /v1/agent/leave agent:write:node-a",
    "PUT /v1/agent/force-leave/n2 operator:write",
    "PUT /v1/agent/maintenance?enable=true node:write:node-a",
    "GET /v1/agent/services service:list",
    "GET /v1/agent/service/web1 service:read",
    "PUT /v1/agent/service/register service:write",
    "PUT /v1/agent/service/deregister/web1 service:write",
    "PUT /v1/agent/service/maintenance/web1?enable=true service:write",
    "GET /v1/agent/checks node:list",
    "PUT /v1/agent/check/register node:write",
    "PUT /v1/agent/check/deregister/c1 node:write",
    "PUT /v1/agent/check/pass/c1 node:write",
    "PUT /v1/agent/check/warn/c1 node:write",
    "PUT /v1/agent/check/fail/c1 node:write",
    "PUT /v1/agent/check/update/c1 node:write",
    "GET /v1/agent/health/service/id/web1 service:read",
    "GET /v1/agent/health/service/name/web service:read:web",
    "PUT /v1/catalog/register node:write",
    "PUT /v1/catalog/deregister node:write",
    "GET /v1/catalog/datacenters none",
    "GET /v1/catalog/nodes node:list",
    "GET /v1/catalog/services service:list",
    "GET /v1/catalog/service/web service:read:web",
    "GET /v1/catalog/node/n1 node:read:n1",
    "GET /v1/catalog/node-services/n1 node:read:n1",
    "GET /v1/health/node/n1 node:read:n1",
    "GET /v1/health/checks/web service:read:web",
    "GET /v1/health/service/web service:read:web",
    "GET /v1/health/state/critical node:list",
    "GET /v1/internal/ui/services service:list",
    "PUT /v1/session/create session:write",
    "PUT /v1/session/destroy/s1 session:write",
    "PUT /v1/session/renew/s1 session:write",
    "GET /v1/session/info/s1 session:read",
    "GET /v1/session/node/n1 session:read:n1",
    "GET /v1/session/list session:list",
    "GET /v1/coordinate/datacenters none",
    "GET /v1/coordinate/nodes node:list",
    "GET /v1/coordinate/node/n1 node:read:n1",
    "PUT /v1/coordinate/update node:write",
    "PUT /v1/event/fire/deploy event:write:deploy",
    "GET /v1/event/list event:list",
    "GET /v1/kv/a/b key:read:a/b",
    "GET /v1/kv/a/?recurse= key:list:a/",
    "GET /v1/kv/?keys= key:list:",
    "PUT /v1/kv/a key:write:a",
    "DELETE /v1/kv/a/?recurse= key:write:a/",
    "PUT /v1/txn none",
    "GET /v1/operator/raft/configuration operator:read",
    "DELETE /v1/operator/raft/peer?id=x operator:write",
    "POST /v1/operator/raft/transfer-leader operator:write",
    "GET /v1/operator/autopilot/configuration operator:read",
    "PUT /v1/operator/autopilot/configuration operator:write",
    "GET /v1/operator/autopilot/health operator:read",
    "GET /v1/operator/autopilot/state operator:read",
    "GET /v1/operator/keyring keyring:read",
    "POST /v1/operator/keyring keyring:write",
    "PUT /v1/operator/keyring keyring:write",
    "DELETE /v1/operator/keyring keyring:write",
    "GET /v1/query none",
    "POST /v1/query none",
    "GET /v1/query/q1 none",
    "GET /v1/query/q1/execute none",
    "PUT /v1/query/q1 none",
    "DELETE /v1/query/q1 none",
    "GET /v1/snapshot acl:write",
    "PUT /v1/snapshot acl:write",
    "GET /v1/status/leader none",
    "GET /v1/status/peers none",
  ];
  for (const line of requests) {
    const [method, target] = line.split(" ") as [string, string];
    const r = await router.handle(makeRequest(method, target));
    assert.deepEqual([r.status, bodyText(r)], [403, "Permission denied"], line);
  }
  assert.deepEqual(seen, requests);
  // Every route and method is covered above.
  const covered = new Set(requests.map((l) => {
    const [method, target] = l.split(" ") as [string, string];
    const found = router.lookup(method, target.split("?")[0]!);
    return found.kind === "route" ? `${method} ${found.route.pattern}` : `none for ${l}`;
  }));
  for (const route of router.routes()) for (const m of route.methods) assert.ok(covered.has(`${m} ${route.pattern}`), `${m} ${route.pattern} has no authz case`);
});
