import assert from "node:assert/strict";
import { test } from "node:test";
import { registerTxn } from "../state/catalog.ts";
import { StateStore } from "../state/store.ts";
import { WatchSet } from "../state/watch.ts";
import { ReadCache, sharedCheckServiceNodes, sharedServiceNodes } from "./read_cache.ts";

const clock = { nowMs: 0 };

function reg(s: StateStore, idx: number, req: Parameters<typeof registerTxn>[3]): void {
  s.write(idx, (tx) => registerTxn(tx, idx, clock, req));
}

function store(): StateStore {
  const s = new StateStore();
  reg(s, 1, { node: "n1", address: "10.0.0.1", nodeMeta: { rack: "a" }, service: { service: "web", id: "web-1", tags: ["v1"] }, check: { name: "w", checkId: "w1", serviceId: "web-1", status: "passing" } });
  reg(s, 2, { node: "n2", address: "10.0.0.2", nodeMeta: { rack: "b" }, service: { service: "web", id: "web-2", tags: ["v2"] }, check: { name: "w", checkId: "w2", serviceId: "web-2", status: "critical" } });
  return s;
}

test("shared reads: the same frozen answer for the same store, parameters and index", () => {
  const s = store();
  const a = sharedCheckServiceNodes(s, undefined, { name: "web" });
  const b = sharedCheckServiceNodes(s, undefined, { name: "WEB" });
  assert.equal(a.value, b.value, "the name is case-insensitive, as the lookup");
  assert.equal(a.index, 2);
  assert.ok(Object.isFrozen(a.value) && Object.isFrozen(a.value[0]) && Object.isFrozen(a.value[0]!.checks));
  assert.throws(() => (a.value as unknown[]).push(1), TypeError);
  // Another store with the same rows and index has its own answer.
  assert.notEqual(sharedCheckServiceNodes(store(), undefined, { name: "web" }).value, a.value);
});

test("shared reads: every parameter that changes the answer is part of the key", () => {
  const s = store();
  const all = sharedCheckServiceNodes(s, undefined, { name: "web" }).value;
  const passing = sharedCheckServiceNodes(s, undefined, { name: "web", passingOnly: true }).value;
  const v1 = sharedCheckServiceNodes(s, undefined, { name: "web", tags: ["v1"] }).value;
  const rackB = sharedCheckServiceNodes(s, undefined, { name: "web", nodeMeta: { rack: "b" } }).value;
  assert.deepEqual(all.map((x) => x.service.id), ["web-1", "web-2"]);
  assert.deepEqual(passing.map((x) => x.service.id), ["web-1"]);
  assert.deepEqual(v1.map((x) => x.service.id), ["web-1"]);
  assert.deepEqual(rackB.map((x) => x.service.id), ["web-2"]);
  assert.deepEqual(sharedServiceNodes(s, undefined, { name: "web", tags: ["v2"] }).value.map((x) => x.service.id), ["web-2"]);
  assert.deepEqual(sharedServiceNodes(s, undefined, { name: "web" }).value.map((x) => x.service.id), ["web-1", "web-2"]);
});

test("shared reads: a write to the service gives a new answer; a write to another keeps the shared one", () => {
  const s = store();
  const before = sharedCheckServiceNodes(s, undefined, { name: "web", passingOnly: true });
  reg(s, 3, { node: "n3", address: "10.0.0.3", service: { service: "api", id: "api-1" } });
  assert.equal(sharedCheckServiceNodes(s, undefined, { name: "web", passingOnly: true }).value, before.value);
  reg(s, 4, { node: "n2", address: "10.0.0.2", check: { name: "w", checkId: "w2", serviceId: "web-2", status: "passing" } });
  const after = sharedCheckServiceNodes(s, undefined, { name: "web", passingOnly: true });
  assert.equal(after.index, 4);
  assert.deepEqual(after.value.map((x) => x.service.id), ["web-1", "web-2"]);
  // A node change (address) is seen too.
  reg(s, 5, { node: "n1", address: "10.9.9.9", nodeMeta: { rack: "a" } });
  assert.equal(sharedServiceNodes(s, undefined, { name: "web" }).value[0]!.node.address, "10.9.9.9");
  assert.equal(sharedCheckServiceNodes(s, undefined, { name: "web" }).value[0]!.node.address, "10.9.9.9");
});

test("shared reads: a cached answer still watches the service's index", () => {
  const s = store();
  sharedCheckServiceNodes(s, undefined, { name: "web" });
  const ws = new WatchSet();
  sharedCheckServiceNodes(s, ws, { name: "web" });
  assert.equal(ws.size, 1);
  reg(s, 3, { node: "n2", address: "10.0.0.2", check: { name: "w", checkId: "w2", serviceId: "web-2", status: "passing" } });
  assert.equal(ws.fired, true);
});

test("read cache: bounded, least recently used dropped first, valid at one index", () => {
  const c = new ReadCache<number>(2);
  const st = {};
  c.set(st, "a", 1, 10);
  c.set(st, "b", 1, 20);
  assert.equal(c.get(st, "a", 1), 10);
  c.set(st, "c", 1, 30);
  assert.equal(c.size(st), 2);
  assert.equal(c.get(st, "b", 1), undefined, "b was least recently used");
  assert.equal(c.get(st, "a", 1), 10);
  assert.equal(c.get(st, "a", 2), undefined, "another index misses");
});
