import assert from "node:assert/strict";
import { test } from "node:test";
import { createLocalRpc } from "../rpc/local.ts";
import { createDevServer } from "../server/dev.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { bodyJson, bodyText, testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest } from "./types.ts";

async function env() {
  const clock = new SimClock({ wallOffsetMs: 1_700_000_000_000 });
  const dev = await createDevServer({ clock, rng: new Rng(4) });
  const router = createRoutes(testBackends({ rpc: createLocalRpc(dev.server), clock }));
  const req = (method: string, target: string, body?: unknown) =>
    router.handle(makeRequest(method, target, body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }));
  return { dev, req };
}

// Consul's own sample payload (website/content/api-docs/txn.mdx), with the node the service and check need.
const payload = [
  { KV: { Verb: "set", Key: "app/config", Value: "aGVsbG8=" } },
  { Node: { Verb: "set", Node: { ID: "67539c9d-b948-ba67-edd4-d07a676d6673", Node: "bar", Address: "192.168.0.1", Datacenter: "dc1", Meta: { instance_type: "m2.large" } } } },
  { Service: { Verb: "set", Node: "bar", Service: { ID: "web1", Service: "web", Port: 8080, Tags: ["v1"] } } },
  { Check: { Verb: "set", Check: { Node: "bar", CheckID: "service:web1", Name: "Web HTTP Check", Status: "critical", ServiceID: "web1", Definition: { HTTP: "http://localhost:8080", Interval: "10s" } } } },
];

test("txn: Node, Service and Check operations with KV in one transaction, Consul's JSON in and out", async () => {
  const { dev, req } = await env();
  const r = await req("PUT", "/v1/txn", payload);
  assert.equal(r.status, 200, bodyText(r));
  const out = bodyJson(r) as { Results: Array<Record<string, Record<string, unknown>>>; Errors: null };
  assert.equal(out.Errors, null);
  assert.deepEqual(out.Results.map((x) => Object.keys(x)[0]), ["KV", "Node", "Service", "Check"]);
  assert.deepEqual(Object.keys(out.Results[1]!.Node!), ["ID", "Node", "Address", "Datacenter", "TaggedAddresses", "Meta", "CreateIndex", "ModifyIndex"]);
  assert.equal(out.Results[1]!.Node!.Address, "192.168.0.1");
  assert.deepEqual([out.Results[2]!.Service!.ID, out.Results[2]!.Service!.Service, out.Results[2]!.Service!.Port], ["web1", "web", 8080]);
  assert.deepEqual([out.Results[3]!.Check!.CheckID, out.Results[3]!.Check!.ServiceName, out.Results[3]!.Check!.Status], ["service:web1", "web", "critical"]);
  // The catalog has them, at one index.
  const svc = bodyJson(await req("GET", "/v1/catalog/service/web")) as Array<{ Node: string; ServiceID: string; ModifyIndex: number }>;
  assert.deepEqual(svc.map((s) => [s.Node, s.ServiceID]), [["bar", "web1"]]);
  assert.equal(out.Results[1]!.Node!.ModifyIndex, svc[0]!.ModifyIndex);

  // Read-only: get ops are a read (meta headers), answered with the stored objects.
  const get = await req("PUT", "/v1/txn", [
    { Node: { Verb: "get", Node: { Node: "bar" } } },
    { Service: { Verb: "get", Node: "bar", Service: { ID: "web1" } } },
    { Check: { Verb: "get", Check: { Node: "bar", CheckID: "service:web1" } } },
    { KV: { Verb: "get-or-empty", Key: "nope" } },
  ]);
  assert.equal(get.status, 200, bodyText(get));
  assert.ok(get.headers["X-Consul-KnownLeader"]);
  const got = bodyJson(get) as { Results: Array<Record<string, Record<string, unknown>>> };
  assert.deepEqual(got.Results.map((x) => Object.values(x)[0]!.Node ?? Object.values(x)[0]!.ID ?? Object.values(x)[0]!.Key), ["bar", "web1", "bar", "nope"]);
  assert.equal(got.Results[3]!.KV!.Value, null);

  // CAS on the service's ModifyIndex: a stale one is a 409 naming the op; nothing of the transaction is applied.
  const index = out.Results[2]!.Service!.ModifyIndex as number;
  const stale = await req("PUT", "/v1/txn", [
    { KV: { Verb: "set", Key: "app/other", Value: "eA==" } },
    { Service: { Verb: "cas", Node: "bar", Service: { ID: "web1", Service: "web", Port: 9090, ModifyIndex: index - 1 } } },
  ]);
  assert.equal(stale.status, 409);
  assert.deepEqual(bodyJson(stale), { Results: null, Errors: [{ OpIndex: 1, What: 'failed to set service "web1" on node "bar", index is stale' }] });
  assert.equal((await req("GET", "/v1/kv/app/other")).status, 404, "the KV op was rolled back");
  const fresh = await req("PUT", "/v1/txn", [{ Service: { Verb: "cas", Node: "bar", Service: { ID: "web1", Service: "web", Port: 9090, ModifyIndex: index } } }]);
  assert.equal(fresh.status, 200, bodyText(fresh));

  // Deleting the node takes its services and checks with it.
  const del = await req("PUT", "/v1/txn", [{ Node: { Verb: "delete", Node: { Node: "bar" } } }]);
  assert.deepEqual([del.status, bodyJson(del)], [200, { Results: null, Errors: null }]);
  assert.equal(bodyText(await req("GET", "/v1/catalog/service/web")), "[]");
  await dev.stop();
});
