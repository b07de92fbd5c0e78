// ACLs on the agent's own services and checks: registering, deregistering
// and updating need write on the service (or node), lists leave out what the
// token may not read (consul agent/acl.go vetServiceRegister, filterServices).
import assert from "node:assert/strict";
import { test } from "node:test";
import { AclNotFoundError } from "../errors.ts";
import { AclRouteAuthorizer } from "../http/acl_authorizer.ts";
import { createRoutes } from "../http/mod.ts";
import { testBackends } from "../http/_test_env.ts";
import { makeRequest } from "../http/types.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { FakeCatalogRpc } from "../local/_fake_catalog_rpc.ts";
import { LocalAgent } from "../local/local_agent.ts";

test("agent acl: a service:write \"web\" token registers web only, and sees only web", async () => {
  const clock = new SimClock();
  const rpc = new FakeCatalogRpc();
  const tokens = { agent: () => "agent-secret", user: () => "", configFile: () => "" };
  const local = new LocalAgent({ node: { node: "node-a", id: "", address: "127.0.0.1", taggedAddresses: {}, meta: {} }, clock, rng: new Rng(1), rpc, tokens });
  local.start();
  const authorizer = new AclRouteAuthorizer({
    resolve: (secret) => {
      if (secret === "web") return Promise.resolve({ accessorId: "acc-web", rules: ['service "web" { policy = "write" }'], defaultAllow: false });
      if (secret === "root") return Promise.resolve({ accessorId: "acc-root", rules: ['service_prefix "" { policy = "write" }\nnode_prefix "" { policy = "write" }'], defaultAllow: false });
      return Promise.reject(new AclNotFoundError());
    },
    now: () => clock.now(),
    tokenTtlMs: 30_000,
    downPolicy: "extend-cache",
    enableKeyListPolicy: false,
    defaultToken: () => "",
  });
  const router = createRoutes(testBackends({ local, clock, authorizer }));
  const call = async (method: string, target: string, token: string, body?: unknown) => {
    const r = await router.handle(makeRequest(method, target, { headers: { "X-Consul-Token": token }, body: body === undefined ? undefined : JSON.stringify(body) }));
    return { status: r.status, text: typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body), headers: r.headers };
  };
  assert.equal((await call("PUT", "/v1/agent/service/register", "web", { Name: "web", Port: 80 })).status, 200);
  // The catalog write carries the token the service was registered with, not the agent's.
  const written = rpc.calls.filter((c) => c.method === "Catalog.Register" && (c.args as { service?: { id: string } }).service?.id === "web");
  assert.deepEqual(written.map((c) => (c.args as { token?: string }).token), ["web"]);
  const db = await call("PUT", "/v1/agent/service/register", "web", { Name: "db", Port: 5432 });
  assert.deepEqual([db.status, db.text], [403, `Permission denied: token with AccessorID 'acc-web' lacks permission 'service:write' on "db"`]);
  assert.equal((await call("PUT", "/v1/agent/service/register", "root", { Name: "db", Port: 5432 })).status, 200);
  const listed = await call("GET", "/v1/agent/services", "web");
  assert.deepEqual([Object.keys(JSON.parse(listed.text) as object), listed.headers["X-Consul-Results-Filtered-By-ACLs"]], [["web"], "true"]);
  assert.equal((await call("GET", "/v1/agent/services", "root")).headers["X-Consul-Results-Filtered-By-ACLs"], undefined);
  const dereg = await call("PUT", "/v1/agent/service/deregister/db", "web");
  assert.equal(dereg.status, 403);
  assert.ok(local.state.service("db"));
  const nodeCheck = await call("PUT", "/v1/agent/check/register", "web", { Name: "disk", TTL: "30s" });
  assert.deepEqual([nodeCheck.status, nodeCheck.text], [403, `Permission denied: token with AccessorID 'acc-web' lacks permission 'node:write' on "node-a"`]);
  assert.equal((await call("PUT", "/v1/agent/check/register", "web", { Name: "web-ttl", ServiceID: "web", TTL: "30s" })).status, 200);
  assert.equal((await call("PUT", "/v1/agent/check/pass/web-ttl", "web")).status, 200);
  assert.equal((await call("PUT", "/v1/agent/check/register", "root", { ID: "db-ttl", Name: "db-ttl", ServiceID: "db", TTL: "30s" })).status, 200);
  assert.equal((await call("PUT", "/v1/agent/check/pass/db-ttl", "web")).status, 403);
  assert.equal((await call("PUT", "/v1/agent/service/deregister/web", "web")).status, 200);
  local.stop();
});
