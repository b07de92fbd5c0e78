import assert from "node:assert/strict";
import { test } from "node:test";
import { StateError } from "../errors.ts";
import {
  checkServiceNodesTxn,
  deregisterTxn,
  nodeServicesTxn,
  nodesTxn,
  registerTxn,
  serviceNodesTxn,
  servicesTxn,
} from "./catalog.ts";
import { applyDeregisterCommand, applyRegisterCommand, applySessionCommand } from "./catalog_commands.ts";
import { kvsLockDelayUntil, sessionListTxn } from "./session_ops.ts";
import { concatBytes } from "../bytes.ts";
import { StateStore } from "./store.ts";
import { WatchSet } from "./watch.ts";

const clock = { nowMs: 1_000_000 };

function reg(s: StateStore, idx: number, req: Parameters<typeof registerTxn>[3]): void {
  s.write(idx, (tx) => registerTxn(tx, idx, clock, req));
}

function web(s: StateStore, idx: number, node: string, extra: { tags?: string[]; status?: "passing" | "critical" } = {}): void {
  reg(s, idx, {
    node,
    address: `addr-${node}`,
    service: { service: "web", tags: extra.tags ?? [], port: 80 },
    check: { name: "web alive", checkId: "web-check", serviceId: "web", status: extra.status ?? "passing" },
  });
}

test("catalog: register creates the node, stamps indexes, defaults service and check fields", () => {
  const s = new StateStore();
  web(s, 5, "n1", { tags: ["v1"] });
  const nodes = nodesTxn(s, undefined).value;
  assert.equal(nodes.length, 1);
  assert.deepEqual([nodes[0]!.node, nodes[0]!.createIndex, nodes[0]!.modifyIndex], ["n1", 5, 5]);
  const sn = serviceNodesTxn(s, undefined, { name: "web" });
  assert.equal(sn.index, 5);
  const svc = sn.value[0]!.service;
  assert.deepEqual([svc.id, svc.service, svc.port, svc.weights.passing, svc.weights.warning, svc.enableTagOverride], ["web", "web", 80, 1, 1, false]);
  const csn = checkServiceNodesTxn(s, undefined, { name: "web" }).value;
  assert.equal(csn[0]!.checks[0]!.serviceName, "web", "service name denormalised into the check");
  assert.deepEqual(csn[0]!.checks[0]!.serviceTags, ["v1"]);
  // An unchanged re-registration writes nothing.
  web(s, 6, "n1", { tags: ["v1"] });
  assert.equal(s.maxIndex("nodes", "services", "checks"), 5);
  // New tags flow to the check.
  web(s, 7, "n1", { tags: ["v2"] });
  assert.deepEqual(checkServiceNodesTxn(s, undefined, { name: "web" }).value[0]!.checks[0]!.serviceTags, ["v2"]);
});

test("catalog: a check's service must exist on the node; a service needs its node", () => {
  const s = new StateStore();
  reg(s, 2, { node: "n1", address: "10.0.0.1" });
  assert.throws(() => reg(s, 3, { node: "n1", address: "10.0.0.1", check: { name: "c", serviceId: "nope" } }), (e: unknown) => e instanceof StateError && /Missing service registration/.test(e.message));
  assert.equal(s.maxIndex("checks"), 0, "failed registration rolled back");
  assert.throws(() => s.write(4, (tx) => registerTxn(tx, 4, clock, { node: "", address: "" })), StateError);
});

test("catalog: deregistering a node removes services, checks and sessions, indexes move forward", () => {
  const s = new StateStore();
  web(s, 2, "n1");
  reg(s, 3, { node: "n1", address: "10.0.0.2", check: { name: "Serf Health Status", checkId: "serfHealth", status: "passing" } });
  assert.equal(applySessionCommand(s, 4, { op: "create", session: { id: "s1", name: "", node: "n1", lockDelayMs: 15000, behavior: "release", ttl: "", nodeChecks: ["serfHealth"], serviceChecks: [] } }), "s1");
  s.kvsLock(5, { key: "leader", session: "s1", value: new Uint8Array([1]) });
  assert.equal(applyDeregisterCommand(s, 6, { node: "n1", nowMs: 2_000 }), true);
  assert.equal(nodesTxn(s, undefined).value.length, 0);
  assert.equal(s.tables.services.size + s.tables.checks.size + s.tables.sessions.size + s.tables.services_by_name.size, 0);
  assert.equal(s.kvsGet("leader").value!.session, "", "lock released");
  assert.equal(kvsLockDelayUntil(s, "leader", 2_000), 17_000, "lock delay from the command's clock");
  assert.equal(kvsLockDelayUntil(s, "leader", 17_000), 0);
  const r = serviceNodesTxn(s, undefined, { name: "web" });
  assert.equal(r.value.length, 0);
  assert.equal(r.index, 6, "the service's index does not go backwards after its last instance left");
  assert.equal(nodesTxn(s, undefined).index, 6);
});

test("catalog: a blocking read of one service wakes only for changes that touch it", () => {
  const s = new StateStore();
  web(s, 2, "n1");
  reg(s, 3, { node: "n2", address: "10.0.0.9", service: { service: "db", port: 5432 } });
  const ws = new WatchSet();
  let fired = 0;
  checkServiceNodesTxn(s, ws, { name: "web" });
  ws.onFire(() => fired++);
  reg(s, 4, { node: "n2", address: "10.0.0.9", service: { service: "db", port: 5433 } });
  reg(s, 5, { node: "n3", address: "10.0.0.10", service: { service: "cache", port: 1 } });
  assert.equal(fired, 0, "changes to other services on other nodes do not wake web readers");
  assert.equal(serviceNodesTxn(s, undefined, { name: "web" }).index, 2, "web's index is its own");
  reg(s, 6, { node: "n1", address: "10.0.0.2", check: { name: "web alive", checkId: "web-check", serviceId: "web", status: "critical" } });
  assert.equal(fired, 1, "a check of web wakes");
  assert.equal(serviceNodesTxn(s, undefined, { name: "web" }).index, 6);
  const ws2 = new WatchSet();
  let fired2 = 0;
  checkServiceNodesTxn(s, ws2, { name: "web" });
  ws2.onFire(() => fired2++);
  web(s, 7, "n4");
  assert.equal(fired2, 1, "a new web instance wakes");
});

test("catalog: tag and node-meta filters, passing only, services list, node services", () => {
  const s = new StateStore();
  web(s, 2, "n1", { tags: ["primary"] });
  web(s, 3, "n2", { tags: ["replica"], status: "critical" });
  reg(s, 4, { node: "n2", address: "10.0.0.3", nodeMeta: { rack: "r2" } });
  assert.deepEqual(serviceNodesTxn(s, undefined, { name: "WEB", tags: ["Primary"] }).value.map((x) => x.node.node), ["n1"]);
  assert.deepEqual(serviceNodesTxn(s, undefined, { name: "web", nodeMeta: { rack: "r2" } }).value.map((x) => x.node.node), ["n2"]);
  assert.deepEqual(checkServiceNodesTxn(s, undefined, { name: "web", passingOnly: true }).value.map((x) => x.node.node), ["n1"]);
  assert.deepEqual(servicesTxn(s, undefined).value, { web: ["primary", "replica"] });
  const ns = nodeServicesTxn(s, undefined, "N2").value!;
  assert.equal(ns.node.node, "n2");
  assert.deepEqual(ns.services.map((x) => x.id), ["web"]);
  assert.equal(nodeServicesTxn(s, undefined, "zz").value, null);
  s.write(5, (tx) => deregisterTxn(tx, 5, clock, { node: "n1", serviceId: "web" }));
  assert.equal(s.tables.checks.get("n1\x00web-check"), undefined, "the service's checks went with it");
});

test("sessions: create needs node and non-critical checks; critical check invalidates; delete behavior removes keys", () => {
  const s = new StateStore();
  const mk = (id: string, extra: Record<string, unknown> = {}) => ({ op: "create", session: { id, name: "", node: "n1", lockDelayMs: 0, behavior: "release", ttl: "", nodeChecks: ["serfHealth"], serviceChecks: [], ...extra } });
  assert.match(String(applySessionCommand(s, 2, mk("a"))), /Missing node registration/);
  reg(s, 3, { node: "n1", address: "10.0.0.1" });
  assert.match(String(applySessionCommand(s, 4, mk("a"))), /Missing check 'serfHealth' registration/);
  reg(s, 5, { node: "n1", address: "10.0.0.1", check: { name: "Serf Health Status", checkId: "serfHealth", status: "critical" } });
  assert.match(String(applySessionCommand(s, 6, mk("a"))), /Check 'serfHealth' is in critical state/);
  reg(s, 7, { node: "n1", address: "10.0.0.1", check: { name: "Serf Health Status", checkId: "serfHealth", status: "passing" } });
  assert.equal(applySessionCommand(s, 8, mk("a", { behavior: "delete" })), "a");
  assert.equal(applySessionCommand(s, 9, mk("b", { nodeChecks: [] })), "b");
  s.kvsLock(10, { key: "k", session: "a" });
  applyRegisterCommand(s, 11, { node: "n1", address: "10.0.0.1", check: { name: "Serf Health Status", checkId: "serfHealth", status: "critical" }, nowMs: 5 });
  assert.deepEqual(sessionListTxn(s, undefined).value.map((x) => x.id), ["b"], "only the session bound to serfHealth went");
  assert.equal(s.kvsGet("k").value, undefined, "behavior delete removed the held key");
});

test("catalog: snapshot and restore carry nodes, services, checks, sessions and per-service indexes", async () => {
  const s = new StateStore();
  web(s, 2, "n1", { tags: ["a"] });
  reg(s, 3, { node: "n1", address: "10.0.0.1", check: { name: "serf", checkId: "serfHealth", status: "passing" } });
  applySessionCommand(s, 4, { op: "create", session: { id: "s", name: "x", node: "n1", lockDelayMs: 15000, behavior: "release", ttl: "30s", nodeChecks: ["serfHealth"], serviceChecks: [] } });
  const data = concatBytes(s.snapshot());
  const r = await StateStore.restore([data]);
  assert.deepEqual(checkServiceNodesTxn(r, undefined, { name: "web" }), checkServiceNodesTxn(s, undefined, { name: "web" }));
  assert.deepEqual(sessionListTxn(r, undefined), sessionListTxn(s, undefined));
  assert.equal(serviceNodesTxn(r, undefined, { name: "web" }).index, 3);
});

test("catalog: a node ID belongs to one node name", () => {
  const s = new StateStore();
  reg(s, 2, { node: "a", id: "11111111-2222-3333-4444-555555555555", address: "x" });
  assert.throws(() => reg(s, 3, { node: "b", id: "11111111-2222-3333-4444-555555555555", address: "y" }), /aliases existing node "a"/);
  reg(s, 4, { node: "a", id: "11111111-2222-3333-4444-555555555555", address: "z" });
  assert.equal(nodesTxn(s, undefined).value[0]!.address, "z");
});

test("catalog: health answers come from the checks_by_service index: node checks first, moves and deletes kept in step, old snapshots re-derive it", async () => {
  const s = new StateStore();
  web(s, 2, "n1");
  reg(s, 3, { node: "n1", address: "addr-n1", service: { service: "db", port: 5432 } });
  reg(s, 4, { node: "n1", address: "addr-n1", check: { name: "zz node", checkId: "a-node", status: "passing" } });
  reg(s, 5, { node: "n1", address: "addr-n1", check: { name: "db alive", checkId: "b-db", serviceId: "db", status: "passing" } });
  const checkIds = (name: string) => checkServiceNodesTxn(s, undefined, { name }).value[0]!.checks.map((c) => c.checkId);
  assert.deepEqual(checkIds("web"), ["a-node", "web-check"], "node-level checks, then the instance's own");
  assert.deepEqual(checkIds("db"), ["a-node", "b-db"]);

  // A check re-registered under another service leaves the first one's answer.
  const ws = new WatchSet();
  let fired = 0;
  checkServiceNodesTxn(s, ws, { name: "web" });
  ws.onFire(() => fired++);
  reg(s, 6, { node: "n1", address: "addr-n1", check: { name: "web alive", checkId: "web-check", serviceId: "db", status: "passing" } });
  assert.equal(fired, 1, "moving a check away wakes the old service's readers");
  assert.deepEqual(checkIds("web"), ["a-node"]);
  assert.deepEqual(checkIds("db"), ["a-node", "b-db", "web-check"]);

  // Deleting a service deletes its checks and their index rows.
  s.write(7, (tx) => deregisterTxn(tx, 7, clock, { node: "n1", serviceId: "db" }));
  assert.deepEqual(s.tables.checks_by_service.all().map((r) => r.ref), ["n1\x00a-node"]);

  // A snapshot taken before the index existed: restore derives it from the checks.
  web(s, 8, "n2");
  const rows = s.tables.checks_by_service.all();
  s.write(9, (tx) => { for (const r of rows) tx.delete(tx.tables.checks_by_service, r.key); });
  const restored = await StateStore.restore(concatBytes([...s.snapshot()]));
  assert.deepEqual(restored.tables.checks_by_service.all(), rows);
  assert.deepEqual(checkServiceNodesTxn(restored, undefined, { name: "web" }).value.map((x) => x.checks.length), [1, 1]);
});
