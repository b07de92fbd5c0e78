import assert from "node:assert/strict";
import { test } from "node:test";
import { createLocalRpc } from "../rpc/local.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { createDevServer } from "../server/dev.ts";
import { queryBody } from "../state/_prepared_query_fixture.ts";
import type { DnsAnswerConfig } from "./answer.ts";
import { createRpcBackend } from "./backend_rpc.ts";
import { createDnsResolver } from "./driver.ts";
import { FakeBackend, makeInstance, makeNode, testConfig } from "./_fake_backend.ts";

const nowMs = 1_700_000_000_000;

function fakeWorld(config: Partial<DnsAnswerConfig> = {}) {
  const backend = new FakeBackend();
  const resolver = createDnsResolver({ backend, config: testConfig(config), rng: new Rng(1), wallNow: () => nowMs });
  return { backend, ask: (name: string, type: string) => resolver.resolve({ name, type }, { transport: "tcp" }) };
}

test("dns: <query>.query.<domain> answers SRV and A from the execution, in the server's order, with the query's TTL", async () => {
  const { backend, ask } = fakeWorld({ serviceTtlMs: { "db*": 30_000 } });
  const n1 = makeNode("n1", "10.0.0.1"), n2 = makeNode("n2", "10.0.0.2");
  const nodes = [makeInstance(n2, "db", { port: 5433 }), makeInstance(n1, "db", { port: 5432 })];
  backend.queries.set("geo-db", { service: "db", nodes, ttl: "7s" });
  backend.queries.set("plain", { service: "db", nodes, ttl: "" });
  backend.queries.set("empty", { service: "db", nodes: [], ttl: "" });
  const srv = await ask("geo-db.query.consul.", "SRV");
  assert.equal(srv.rcode, "NOERROR");
  assert.deepEqual(srv.answers.map((r) => [r.type, r.ttl, r.data]), [
    ["SRV", 7, { priority: 1, weight: 1, port: 5433, target: "n2.node.dc1.consul." }],
    ["SRV", 7, { priority: 1, weight: 1, port: 5432, target: "n1.node.dc1.consul." }],
  ]);
  assert.deepEqual(srv.additionals.filter((r) => r.type === "A").map((r) => [r.name, r.data]), [["n2.node.dc1.consul.", "10.0.0.2"], ["n1.node.dc1.consul.", "10.0.0.1"]]);
  const a = await ask("plain.query.consul.", "A");
  // No DNS.TTL: the service_ttl for the queried service.
  assert.deepEqual(a.answers.map((r) => [r.type, r.ttl, r.data]), [["A", 30, "10.0.0.2"], ["A", 30, "10.0.0.1"]]);
  for (const name of ["nope.query.consul.", "empty.query.consul.", "geo-db.query.dc9.consul."]) {
    const nx = await ask(name, "SRV");
    assert.equal(nx.rcode, "NXDOMAIN", name);
    assert.equal(nx.authorities[0]?.type, "SOA");
  }
});

test("dns over RPC: a prepared query created through the server resolves; its health filter applies; unknown is NXDOMAIN", async () => {
  const clock = new SimClock();
  const d = await createDevServer({ clock, rng: new Rng(9) });
  const rpc = createLocalRpc(d.server);
  for (const [node, status] of [["n1", "passing"], ["n2", "warning"], ["n3", "critical"]] as const) {
    await rpc.call("Catalog.Register", {
      node,
      address: `10.0.1.${node.slice(1)}`,
      service: { service: "redis", port: 6379 },
      check: { name: "c", checkId: "c", status, serviceId: "redis" },
    });
  }
  await rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name: "cache", service: { service: "redis", onlyPassing: true }, dns: { ttl: "12s" } }) });
  const backend = createRpcBackend({ rpc, datacenter: "dc1", allowStale: true, maxStaleMs: 10_000, nodeName: "n1" });
  const resolver = createDnsResolver({ backend, config: testConfig(), rng: new Rng(1), wallNow: () => nowMs });
  const srv = await resolver.resolve({ name: "CACHE.query.consul.", type: "SRV" }, { transport: "udp" });
  assert.deepEqual(srv.answers.map((r) => [r.ttl, r.type === "SRV" ? r.data.target : ""]), [[12, "n1.node.dc1.consul."]]);
  const nx = await resolver.resolve({ name: "nope.query.consul.", type: "A" }, { transport: "udp" });
  assert.equal(nx.rcode, "NXDOMAIN");
});
