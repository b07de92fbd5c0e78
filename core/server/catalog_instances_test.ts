// Catalog.ListServices withInstanceCounts (the web UI's services list,
// /v1/internal/ui/services): counted in the same scan, under the same
// filters, and left out with the service when the token may not read it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createLocalRpc } from "../rpc/local.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { createDevServer } from "./dev.ts";
import { q } from "./_test_query.ts";

function uuids(): () => string {
  let n = 0;
  return () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`;
}

test("catalog instance counts: per service, under ?filter and ?node-meta, only when asked", async () => {
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(3) });
  const rpc = createLocalRpc(d.server);
  const reg = (node: string, id: string, service: string, meta: Record<string, string> = {}) =>
    rpc.call("Catalog.Register", { node, address: "10.0.0.1", nodeMeta: meta, service: { id, service, port: 80, tags: [id] } });
  await reg("n1", "web-1", "web", { rack: "a" });
  await reg("n1", "web-2", "web", { rack: "a" });
  await reg("n2", "web-3", "web", { rack: "b" });
  await reg("n2", "db-1", "db", { rack: "b" });
  const all = await rpc.call("Catalog.ListServices", { query: q(), withInstanceCounts: true });
  assert.deepEqual(all.instances, { web: 3, db: 1 });
  assert.deepEqual(all.services.web, ["web-1", "web-2", "web-3"]);
  assert.deepEqual((await rpc.call("Catalog.ListServices", { query: q(), withInstanceCounts: true, nodeMetaFilters: { rack: "a" } })).instances, { web: 2 });
  assert.deepEqual((await rpc.call("Catalog.ListServices", { query: q(), withInstanceCounts: true, filter: 'ServiceID != "web-1"' })).instances, { web: 2, db: 1 });
  assert.equal((await rpc.call("Catalog.ListServices", { query: q() })).instances, undefined);
});

test("catalog instance counts: a token that may not read a service does not see its count either", async () => {
  const root = "11111111-2222-3333-4444-555555555555";
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(1), acl: { enabled: true, defaultPolicy: "deny", uuid: uuids(), initialManagement: root, readBootstrapReset: () => undefined, clearBootstrapReset: () => {} } });
  await d.server.initializeAcls();
  const rpc = createLocalRpc(d.server);
  await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", service: { service: "web", port: 80 }, token: root });
  await rpc.call("Catalog.Register", { node: "n2", address: "10.0.0.2", service: { service: "db", port: 5432 }, token: root });
  await rpc.call("ACL.Write", { kind: "policy", op: "create", item: { name: "web", rules: 'service "web" { policy = "read" }' }, token: root });
  const tok = await rpc.call("ACL.Write", { kind: "token", op: "create", item: { policies: [{ name: "web" }] }, token: root });
  const r = await rpc.call("Catalog.ListServices", { query: { ...q(), token: tok.item!.secretId as string }, withInstanceCounts: true });
  assert.deepEqual([r.services, r.instances], [{ web: [] }, { web: 1 }]);
});
