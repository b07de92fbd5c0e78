// Health answers read through the checks_by_service index and watch one
// "service.<name>" index (issue #24): these tests would catch an index that
// shows the wrong checks, misses a node-level check, keeps a deleted one, is
// not rebuilt by a restore, or a watch that sleeps through a change (or wakes
// for another service's).
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkServiceNodesTxn, deregisterTxn, registerTxn, serviceChecksTxn, serviceNodesTxn } from "./catalog.ts";
import { concatBytes } from "../bytes.ts";
import { StateStore } from "./store.ts";
import { WatchSet } from "./watch.ts";

const clock = { nowMs: 1_000_000 };

function reg(s: StateStore, idx: number, req: Parameters<typeof registerTxn>[3]): void {
  s.write(idx, (tx) => registerTxn(tx, idx, clock, req));
}

function dereg(s: StateStore, idx: number, req: Parameters<typeof deregisterTxn>[3]): void {
  s.write(idx, (tx) => deregisterTxn(tx, idx, clock, req));
}

/** n1 runs web and api, each with its own check, plus a node-level check; n2 runs web. */
function fixture(): StateStore {
  const s = new StateStore();
  reg(s, 1, { node: "n1", address: "10.0.0.1", service: { service: "web", id: "web-1", port: 80 }, check: { name: "web", checkId: "web-1-chk", serviceId: "web-1", status: "passing" } });
  reg(s, 2, { node: "n1", address: "10.0.0.1", service: { service: "api", id: "api-1", port: 81 }, check: { name: "api", checkId: "api-1-chk", serviceId: "api-1", status: "critical" } });
  reg(s, 3, { node: "n1", address: "10.0.0.1", check: { name: "serf", checkId: "serfHealth", status: "passing" } });
  reg(s, 4, { node: "n2", address: "10.0.0.2", service: { service: "web", id: "web-2", port: 80 }, check: { name: "web", checkId: "web-2-chk", serviceId: "web-2", status: "passing" } });
  return s;
}

function checkIds(s: StateStore, name: string): string[][] {
  return checkServiceNodesTxn(s, undefined, { name }).value.map((x) => x.checks.map((c) => c.checkId));
}

test("health index: an instance gets its node's checks and its own, never another service's on the same node", () => {
  const s = fixture();
  assert.deepEqual(checkIds(s, "web"), [["serfHealth", "web-1-chk"], ["web-2-chk"]]);
  assert.deepEqual(checkIds(s, "api"), [["serfHealth", "api-1-chk"]]);
  // ?passing: api's own critical check keeps web-1 out of nothing; it drops only api.
  assert.equal(checkServiceNodesTxn(s, undefined, { name: "web", passingOnly: true }).value.length, 2);
  assert.equal(checkServiceNodesTxn(s, undefined, { name: "api", passingOnly: true }).value.length, 0);
  assert.deepEqual(serviceChecksTxn(s, undefined, "web").value.map((c) => c.checkId), ["web-1-chk", "web-2-chk"]);
});

test("health index: a node-level check turning critical drops every instance on that node from ?passing", () => {
  const s = fixture();
  reg(s, 5, { node: "n1", address: "10.0.0.1", check: { name: "serf", checkId: "serfHealth", status: "critical" } });
  const passing = checkServiceNodesTxn(s, undefined, { name: "web", passingOnly: true });
  assert.deepEqual(passing.value.map((x) => x.service.id), ["web-2"]);
  assert.equal(passing.index, 5, "the node check raised the service's index");
});

test("health index: deregistering a check, a service or a node updates the answer", () => {
  const s = fixture();
  dereg(s, 5, { node: "n1", checkId: "serfHealth" });
  assert.deepEqual(checkIds(s, "web"), [["web-1-chk"], ["web-2-chk"]]);
  dereg(s, 6, { node: "n1", serviceId: "web-1" });
  assert.deepEqual(checkIds(s, "web"), [["web-2-chk"]]);
  assert.equal(checkServiceNodesTxn(s, undefined, { name: "web" }).index, 6);
  assert.equal(s.tables.checks_by_service.size, 2, "the index holds api-1-chk and web-2-chk only");
  dereg(s, 7, { node: "n2" });
  assert.deepEqual(checkIds(s, "web"), []);
  assert.equal(checkServiceNodesTxn(s, undefined, { name: "web" }).index, 7);
});

test("health index: a check moved from one service to another (or to the node) follows it", () => {
  const s = fixture();
  reg(s, 5, { node: "n1", address: "10.0.0.1", check: { name: "web", checkId: "web-1-chk", serviceId: "api-1", status: "passing" } });
  assert.deepEqual(checkIds(s, "web"), [["serfHealth"], ["web-2-chk"]]);
  assert.deepEqual(checkIds(s, "api"), [["serfHealth", "api-1-chk", "web-1-chk"]]);
  reg(s, 6, { node: "n1", address: "10.0.0.1", check: { name: "web", checkId: "web-1-chk", status: "passing" } });
  assert.deepEqual(checkIds(s, "web"), [["serfHealth", "web-1-chk"], ["web-2-chk"]]);
});

test("health index: a snapshot restore rebuilds the index (also from a snapshot without it)", async () => {
  const s = fixture();
  const restored = await StateStore.restore([concatBytes(s.snapshot())]);
  assert.deepEqual(checkIds(restored, "web"), checkIds(s, "web"));
  assert.deepEqual(checkIds(restored, "api"), checkIds(s, "api"));
  // An older snapshot had no checks_by_service rows: the restore derives them.
  const old = new StateStore();
  reg(old, 1, { node: "n1", address: "10.0.0.1", service: { service: "web", id: "web-1" }, check: { name: "web", checkId: "web-1-chk", serviceId: "web-1" } });
  reg(old, 2, { node: "n1", address: "10.0.0.1", check: { name: "serf", checkId: "serfHealth", status: "passing" } });
  for (const r of old.tables.checks_by_service.all()) old.tables.checks_by_service._delete(r.key);
  const fromOld = await StateStore.restore([concatBytes(old.snapshot())]);
  assert.deepEqual(checkIds(fromOld, "web"), [["serfHealth", "web-1-chk"]]);
});

function watchWeb(s: StateStore): WatchSet {
  const ws = new WatchSet();
  checkServiceNodesTxn(s, ws, { name: "web" });
  return ws;
}

test("health watch: one registration per read, however many instances", () => {
  const s = fixture();
  for (let i = 0; i < 50; i++) reg(s, 10 + i, { node: `m${i}`, address: `10.1.0.${i}`, service: { service: "web", id: `web-m${i}` } });
  const ws = watchWeb(s);
  assert.equal(ws.size, 1);
  const ws2 = new WatchSet();
  serviceNodesTxn(s, ws2, { name: "web" });
  assert.equal(ws2.size, 1);
});

test("health watch: writes to another service, even on the same node, do not wake a watcher", () => {
  const s = fixture();
  const ws = watchWeb(s);
  reg(s, 5, { node: "n1", address: "10.0.0.1", check: { name: "api", checkId: "api-1-chk", serviceId: "api-1", status: "passing" } });
  reg(s, 6, { node: "n3", address: "10.0.0.3", service: { service: "db", id: "db-1" } });
  dereg(s, 7, { node: "n1", serviceId: "api-1" });
  assert.equal(ws.fired, false);
});

test("health watch: every write that changes the answer wakes the watcher", () => {
  const cases: Array<[string, (s: StateStore) => void]> = [
    ["the instance's own check", (s) => reg(s, 5, { node: "n2", address: "10.0.0.2", check: { name: "web", checkId: "web-2-chk", serviceId: "web-2", status: "critical" } })],
    ["a node-level check", (s) => reg(s, 5, { node: "n1", address: "10.0.0.1", check: { name: "serf", checkId: "serfHealth", status: "critical" } })],
    ["a new node-level check", (s) => reg(s, 5, { node: "n2", address: "10.0.0.2", check: { name: "maint", checkId: "_node_maintenance", status: "critical" } })],
    ["the node's address", (s) => reg(s, 5, { node: "n2", address: "10.9.9.9" })],
    ["a new instance", (s) => reg(s, 5, { node: "n3", address: "10.0.0.3", service: { service: "web", id: "web-3" } })],
    ["the instance's tags", (s) => reg(s, 5, { node: "n2", address: "10.0.0.2", service: { service: "web", id: "web-2", port: 80, tags: ["v2"] } })],
    ["deregistering a node check", (s) => dereg(s, 5, { node: "n1", checkId: "serfHealth" })],
    ["deregistering an instance", (s) => dereg(s, 5, { node: "n2", serviceId: "web-2" })],
    ["deregistering a node", (s) => dereg(s, 5, { node: "n1" })],
    ["a restore (the store is abandoned)", (s) => s.abandon()],
  ];
  for (const [what, write] of cases) {
    const s = fixture();
    const ws = watchWeb(s);
    write(s);
    assert.equal(ws.fired, true, what);
  }
});

test("health watch: a service that does not exist yet wakes its watcher when registered", () => {
  const s = fixture();
  const ws = new WatchSet();
  assert.equal(checkServiceNodesTxn(s, ws, { name: "cache" }).value.length, 0);
  reg(s, 5, { node: "n3", address: "10.0.0.3", service: { service: "web", id: "web-3" } });
  assert.equal(ws.fired, false);
  reg(s, 6, { node: "n3", address: "10.0.0.3", service: { service: "Cache", id: "cache-1" } });
  assert.equal(ws.fired, true, "service names are case-insensitive");
});

test("health watch: an aborted write wakes nobody", () => {
  const s = fixture();
  const ws = watchWeb(s);
  assert.throws(() => s.write(5, (tx) => {
    registerTxn(tx, 5, clock, { node: "n2", address: "10.0.0.2", check: { name: "web", checkId: "web-2-chk", serviceId: "web-2", status: "critical" } });
    throw new Error("boom");
  }));
  assert.equal(ws.fired, false);
  assert.equal(checkServiceNodesTxn(s, undefined, { name: "web" }).index, 4);
});
