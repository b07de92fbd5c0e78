import assert from "node:assert/strict";
import { test } from "node:test";
import { BadRequestError, CairnError } from "../errors.ts";
import { createLocalRpc } from "../rpc/local.ts";
import { Rng } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { createDevServer } from "./dev.ts";
import { q } from "./_test_query.ts";


async function dev() {
  const clock = new SimClock();
  const d = await createDevServer({ clock, rng: new Rng(7) });
  return { clock, ...d, rpc: createLocalRpc(d.server) };
}

async function registerNode(rpc: Awaited<ReturnType<typeof dev>>["rpc"], node: string, extra: Record<string, unknown> = {}) {
  return rpc.call("Catalog.Register", {
    node,
    address: `10.0.0.${node.length}`,
    check: { name: "Serf Health Status", checkId: "serfHealth", status: "passing" },
    ...extra,
  });
}

test("catalog endpoints: register, list nodes/services/service nodes, node services, deregister", async () => {
  const { rpc } = await dev();
  await registerNode(rpc, "n1", { service: { service: "web", tags: ["v1"], port: 80 }, nodeMeta: { rack: "a" } });
  await registerNode(rpc, "n2", { service: { service: "web", id: "web-2", tags: ["v2"], port: 81 } });
  const nodes = await rpc.call("Catalog.ListNodes", { query: q() });
  assert.deepEqual(nodes.nodes.map((n) => [n.node, n.datacenter]), [["n1", "dc1"], ["n2", "dc1"]]);
  assert.ok(nodes.meta.index >= 3);
  assert.deepEqual((await rpc.call("Catalog.ListNodes", { query: q(), nodeMetaFilters: { rack: "a" } })).nodes.map((n) => n.node), ["n1"]);
  assert.deepEqual((await rpc.call("Catalog.ListServices", { query: q() })).services, { web: ["v1", "v2"] });
  const sn = await rpc.call("Catalog.ServiceNodes", { serviceName: "web", serviceTags: ["v2"], query: q() });
  assert.deepEqual(sn.serviceNodes.map((x) => x.service.id), ["web-2"]);
  const filtered = await rpc.call("Catalog.ServiceNodes", { serviceName: "web", query: q(), filter: "ServicePort == 80" });
  assert.deepEqual(filtered.serviceNodes.map((x) => x.node.node), ["n1"]);
  const ns = await rpc.call("Catalog.NodeServices", { node: "n2", query: q() });
  assert.deepEqual(ns.nodeServices?.services.map((s) => s.id), ["web-2"]);
  assert.equal((await rpc.call("Catalog.NodeServices", { node: "zz", query: q() })).nodeServices, null);
  await rpc.call("Catalog.Deregister", { node: "n2", serviceId: "web-2" });
  assert.deepEqual((await rpc.call("Catalog.ListServices", { query: q() })).services, { web: ["v1"] });
  assert.deepEqual(await rpc.call("Catalog.ListDatacenters", {}), ["dc1"]);
});

test("catalog endpoints: bad input is a BadRequest, state refusals carry Consul's words", async () => {
  const { rpc } = await dev();
  await assert.rejects(rpc.call("Catalog.Register", { node: "", address: "x" }), (e: unknown) => e instanceof BadRequestError && e.message === "Must provide node");
  await assert.rejects(rpc.call("Catalog.Register", { node: "n", address: "" }), (e: unknown) => e instanceof BadRequestError && e.message === "Must provide address");
  await assert.rejects(rpc.call("Catalog.Register", { node: "n", address: "a", check: { name: "c", serviceId: "nope" } }), (e: unknown) =>
    e instanceof CairnError && /Missing service registration/.test(e.message));
  await assert.rejects(rpc.call("Catalog.ListNodes", { query: q(), filter: "Node ==" }), (e: unknown) =>
    e instanceof BadRequestError && /1:8 \(7\)/.test(e.message));
  await assert.rejects(rpc.call("Health.ChecksInState", { state: "bogus" as "any", query: q() }), BadRequestError);
});

test("health endpoints: service nodes with checks, passing only, checks in state, blocking wake on the service only", async () => {
  const { rpc, clock } = await dev();
  await registerNode(rpc, "n1", { service: { service: "web", port: 80 } });
  const r1 = await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.2", check: { name: "web up", serviceId: "web", status: "critical" } });
  await registerNode(rpc, "n2", { service: { service: "web", port: 80 } });
  await registerNode(rpc, "n3", { service: { service: "db", port: 5432 } });
  const all = await rpc.call("Health.ServiceNodes", { serviceName: "web", query: q() });
  assert.deepEqual(all.nodes.map((x) => [x.node.node, x.checks.map((c) => c.checkId)]), [["n1", ["serfHealth", "web up"]], ["n2", ["serfHealth"]]]);
  const passing = await rpc.call("Health.ServiceNodes", { serviceName: "web", passingOnly: true, query: q() });
  assert.deepEqual(passing.nodes.map((x) => x.node.node), ["n2"]);
  const crit = await rpc.call("Health.ChecksInState", { state: "critical", query: q() });
  assert.deepEqual(crit.checks.map((c) => c.checkId), ["web up"]);
  const filtered = await rpc.call("Health.ServiceNodes", { serviceName: "web", query: q(), filter: 'Checks.Status == "critical"' });
  assert.deepEqual(filtered.nodes.map((x) => x.node.node), ["n1"]);
  assert.deepEqual((await rpc.call("Health.ServiceChecks", { serviceName: "web", query: q() })).checks.map((c) => c.checkId), ["web up"]);
  assert.deepEqual((await rpc.call("Health.NodeChecks", { node: "n1", query: q() })).checks.map((c) => c.checkId), ["serfHealth", "web up"]);

  // Blocking: a change to db does not answer a web watcher; a web check change does.
  const idx = all.meta.index;
  assert.ok(idx >= r1.index);
  let answered: number | undefined;
  const p = rpc.call("Health.ServiceNodes", { serviceName: "web", query: q({ minQueryIndex: idx, maxQueryTimeMs: 60_000 }) })
    .then((r) => (answered = r.meta.index));
  await drainMicrotasks();
  await rpc.call("Catalog.Register", { node: "n3", address: "10.0.0.2", service: { service: "db", port: 5433 } });
  await drainMicrotasks();
  assert.equal(answered, undefined, "db change must not wake a web watcher");
  const w = await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.2", check: { name: "web up", serviceId: "web", status: "passing" } });
  await drainMicrotasks();
  await p;
  assert.equal(answered, w.index);
  clock.advance(1);
});

test("catalog endpoints: serfHealthRegistration makes the default session check pass, then fail", async () => {
  const { rpc } = await dev();
  const { serfHealthRegistration } = await import("./catalog.ts");
  await rpc.call("Catalog.Register", serfHealthRegistration({ name: "m1", address: "10.0.0.9", alive: true }));
  const { id } = await rpc.call("Session.Apply", { op: "create", session: { node: "m1", nodeChecks: ["serfHealth"] } });
  await rpc.call("Catalog.Register", serfHealthRegistration({ name: "m1", address: "10.0.0.9", alive: false }));
  assert.equal((await rpc.call("Session.Get", { sessionId: id, query: q() })).sessions.length, 0, "failed member invalidates its sessions");
  const c = (await rpc.call("Health.NodeChecks", { node: "m1", query: q() })).checks[0]!;
  assert.deepEqual([c.checkId, c.name, c.status, c.output], ["serfHealth", "Serf Health Status", "critical", "Agent not live or unreachable"]);
});

test("fsm: malformed Register/Deregister/Session commands answer an Error, never throw or write", async () => {
  const { Fsm, encodeCommand, MessageType } = await import("./fsm.ts");
  const fsm = new Fsm();
  const bad: [number, Record<string, unknown>][] = [
    [MessageType.Register, { node: 5, address: "a" }],
    [MessageType.Register, { node: "n", address: "a", service: { service: "s", tags: "not-a-list" } }],
    [MessageType.Register, { node: "n", address: "a", check: { name: "c", status: "bogus" } }],
    [MessageType.Deregister, { node: ["x"] }],
    [MessageType.Deregister, { node: "n", serviceId: 7 }],
    [MessageType.Session, { op: "create", session: "nope" }],
    [MessageType.Session, { op: "create", session: { id: "s", node: "ghost", nodeChecks: [], serviceChecks: [] } }],
    [MessageType.Session, { op: "explode" }],
  ];
  let idx = 2;
  for (const [type, body] of bad) {
    const r = fsm.apply(idx++, encodeCommand(type, body));
    assert.ok(r instanceof Error, `${type} ${JSON.stringify(body)} answered ${String(r)}`);
  }
  assert.equal(fsm.state.maxIndex("nodes", "services", "checks", "sessions"), 0, "nothing was written");
});
