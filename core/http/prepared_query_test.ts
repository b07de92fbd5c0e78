import assert from "node:assert/strict";
import { test } from "node:test";
import { createLocalRpc } from "../rpc/local.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { createDevServer } from "../server/dev.ts";
import { bodyJson, bodyText, testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest } from "./types.ts";

async function world() {
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(5) });
  const rpc = createLocalRpc(d.server);
  const router = createRoutes(testBackends({ rpc }));
  const req = (method: string, target: string, body?: unknown) =>
    router.handle(makeRequest(method, target, body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }));
  for (const [node, status] of [["n1", "passing"], ["n2", "critical"]] as const) {
    await rpc.call("Catalog.Register", {
      node,
      address: node === "n1" ? "10.0.0.1" : "10.0.0.2",
      service: { service: "db", tags: ["primary"], port: 5432 },
      check: { name: "c", checkId: "c", status, serviceId: "db" },
    });
  }
  return { req, fsm: d.fsm };
}

test("/v1/query: create (lower-case fields as python-consul sends them), list, get, update, delete, in Consul's JSON", async () => {
  const { req } = await world();
  const created = await req("POST", "/v1/query", { name: "db", token: "t0k", service: { service: "db", onlypassing: true, tags: ["primary"] }, dns: { ttl: "10s" } });
  assert.equal(created.status, 200, bodyText(created));
  const { ID } = bodyJson(created) as { ID: string };
  const list = await req("GET", "/v1/query");
  assert.equal(list.status, 200);
  assert.ok(Number(list.headers["X-Consul-Index"]) > 0);
  const [q] = bodyJson(list) as Array<Record<string, unknown>>;
  assert.deepEqual(q, {
    ID,
    Name: "db",
    Session: "",
    // No ACLs: Consul shows the token as stored.
    Token: "t0k",
    Template: { Type: "", Regexp: "", RemoveEmptyTags: false },
    Service: {
      Service: "db",
      Failover: { NearestN: 0, Datacenters: null },
      IgnoreCheckIDs: null,
      OnlyPassing: true,
      Near: "",
      Tags: ["primary"],
      NodeMeta: null,
      ServiceMeta: null,
      Connect: false,
    },
    DNS: { TTL: "10s" },
    CreateIndex: q!.CreateIndex,
    ModifyIndex: q!.ModifyIndex,
  });
  assert.deepEqual(bodyJson(await req("GET", `/v1/query/${ID}`)), [q]);
  const upd = await req("PUT", `/v1/query/${ID}`, { Name: "db2", Service: { Service: "db" } });
  assert.deepEqual([upd.status, bodyText(upd)], [200, ""]);
  assert.equal((bodyJson(await req("GET", `/v1/query/${ID}`)) as Array<{ Name: string }>)[0]!.Name, "db2");
  const del = await req("DELETE", `/v1/query/${ID}`);
  assert.equal(del.status, 200);
  const gone = await req("GET", `/v1/query/${ID}`);
  assert.deepEqual([gone.status, bodyText(gone)], [404, "Query not found"]);
  assert.deepEqual(bodyJson(await req("GET", "/v1/query")), []);
});

test("/v1/query: bad input is a 400 with Consul's message and stores nothing", async () => {
  const { req, fsm } = await world();
  const cases: Array<[unknown, RegExp]> = [
    ["{not json", /^Request decode failed/],
    [{ Name: "x", Service: { Service: 7 } }, /^Request decode failed: Service.Service: expected a string/],
    [{ Name: "x", Service: { Service: "" } }, /^Invalid prepared query: Must provide a Service name to query$/],
    [{ Service: { Service: "db" } }, /Must be bound to a session/],
    [{ Name: "x", Service: { Service: "db" }, DNS: { TTL: "1 hour" } }, /Bad DNS TTL '1 hour'/],
  ];
  for (const [body, re] of cases) {
    const r = await req("POST", "/v1/query", body);
    assert.equal(r.status, 400, bodyText(r));
    assert.match(bodyText(r), re);
  }
  assert.equal(fsm.state.tables.prepared_queries.size, 0);
  const missing = await req("PUT", "/v1/query/44444444-4444-4444-8444-444444444444", { Name: "x", Service: { Service: "db" } });
  assert.deepEqual([missing.status, bodyText(missing)], [404, "Cannot modify non-existent prepared query: '44444444-4444-4444-8444-444444444444'"]);
  assert.equal((await req("PUT", "/v1/query/x/execute")).status, 405);
  assert.equal((await req("GET", "/v1/query/x/execute?limit=abc")).status, 400);
});

test("/v1/query/<name>/execute and /explain: healthy instances, limit, DNS TTL, Failovers 0; unknown is a 404", async () => {
  const { req } = await world();
  await req("POST", "/v1/query", { Name: "db-", Template: { Type: "name_prefix_match" }, Service: { Service: "${name.suffix}" }, DNS: { TTL: "3s" } });
  const r = await req("GET", "/v1/query/db-db/execute?limit=5");
  assert.equal(r.status, 200, bodyText(r));
  const body = bodyJson(r) as { Service: string; Nodes: Array<{ Node: { Node: string }; Service: { Port: number } }>; DNS: unknown; Datacenter: string; Failovers: number };
  assert.deepEqual([body.Service, body.DNS, body.Datacenter, body.Failovers], ["db", { TTL: "3s" }, "dc1", 0]);
  assert.deepEqual(body.Nodes.map((n) => [n.Node.Node, n.Service.Port]), [["n1", 5432]]);
  const ex = bodyJson(await req("GET", "/v1/query/db-db/explain")) as { Query: { Service: { Service: string }; Name: string } };
  assert.deepEqual([ex.Query.Name, ex.Query.Service.Service], ["db-", "db"]);
  const nf = await req("GET", "/v1/query/nope/execute");
  assert.deepEqual([nf.status, bodyText(nf)], [404, "Query not found"]);
  const dc = await req("GET", "/v1/query/db-db/execute?dc=dc2");
  assert.deepEqual([dc.status, bodyText(dc)], [500, "No path to datacenter"]);
});
