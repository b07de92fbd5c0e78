import assert from "node:assert/strict";
import { test } from "node:test";
import type { TxnOp } from "../rpc/methods.ts";
import { encodeCommand, Fsm, MessageType } from "../server/fsm.ts";
import { StateStore } from "./store.ts";

const node = (name: string, more: Record<string, unknown> = {}): TxnOp => ({ node: { verb: "set", node: { node: name, address: "10.0.0.1", ...more } } });

test("txn catalog: node, service and check set in one transaction, answered with what was stored", () => {
  const s = new StateStore();
  const out = s.txnRW(5, [
    node("web-1", { id: "67539c9d-b948-ba67-edd4-d07a676d6673", meta: { rack: "r1" } }),
    { service: { verb: "set", node: "web-1", service: { service: "web", id: "web1", port: 8080, tags: ["v1"] } } },
    { check: { verb: "set", check: { node: "web-1", checkId: "service:web1", name: "web alive", status: "passing", serviceId: "web1" } } },
  ]);
  assert.deepEqual(out.errors, []);
  assert.equal(out.results.length, 3);
  assert.equal(out.results[0]!.node!.node, "web-1");
  assert.deepEqual([out.results[0]!.node!.createIndex, out.results[0]!.node!.modifyIndex], [5, 5]);
  assert.deepEqual(out.results[0]!.node!.meta, { rack: "r1" });
  assert.deepEqual([out.results[1]!.service!.id, out.results[1]!.service!.port, out.results[1]!.service!.modifyIndex], ["web1", 8080, 5]);
  assert.deepEqual([out.results[2]!.check!.checkId, out.results[2]!.check!.serviceName, out.results[2]!.check!.status], ["service:web1", "web", "passing"]);
  assert.equal(s.maxIndex("nodes"), 5);
  // get reads; get by node ID finds the node by its ID.
  const got = s.txnRO([
    { node: { verb: "get", node: { node: "", id: "67539C9D-B948-BA67-EDD4-D07A676D6673" } } },
    { service: { verb: "get", node: "web-1", service: { service: "", id: "web1" } } },
    { check: { verb: "get", check: { node: "web-1", checkId: "service:web1" } } },
  ]);
  assert.deepEqual(got.errors, []);
  assert.deepEqual(got.results.map((r) => r.node?.node ?? r.service?.id ?? r.check?.checkId), ["web-1", "web1", "service:web1"]);
});

test("txn catalog: one failing op rolls every op back; each error names its op with Consul's words", () => {
  const s = new StateStore();
  s.txnRW(2, [node("a")]);
  const out = s.txnRW(3, [
    node("b"),
    { service: { verb: "set", node: "ghost", service: { service: "web" } } },
    { node: { verb: "get", node: { node: "nope" } } },
    { service: { verb: "get", node: "a", service: { service: "db" } } },
    { check: { verb: "get", check: { node: "a", checkId: "c1" } } },
    { node: { verb: "cas", node: { node: "a", address: "10.0.0.9", modifyIndex: 1 } } },
    { service: { verb: "delete-cas", node: "a", service: { service: "web", modifyIndex: 2 } } },
    { check: { verb: "delete-cas", check: { node: "a", checkId: "c1", modifyIndex: 2 } } },
    { node: { verb: "delete-cas", node: { node: "a", modifyIndex: 9 } } },
    { node: { verb: "bogus", node: { node: "a" } } } as unknown as TxnOp,
    {} as TxnOp,
  ]);
  assert.deepEqual(out.results, []);
  assert.deepEqual(out.errors, [
    { opIndex: 1, what: "Missing node registration" },
    { opIndex: 2, what: 'node "nope" doesn\'t exist' },
    { opIndex: 3, what: 'service "db" on node "a" doesn\'t exist' },
    { opIndex: 4, what: 'check "c1" on node "a" doesn\'t exist' },
    { opIndex: 5, what: 'failed to set node "a", index is stale' },
    { opIndex: 6, what: 'failed to delete service "web" on node "a", index is stale' },
    { opIndex: 7, what: 'failed to delete check "c1" on node "a", index is stale' },
    { opIndex: 8, what: 'failed to delete node "a", index is stale' },
    { opIndex: 9, what: 'unknown Node verb "bogus"' },
    { opIndex: 10, what: "no operation specified" },
  ]);
  assert.equal(s.tables.nodes.get("b"), undefined, "op 0 was rolled back");
  assert.equal(s.maxIndex("nodes"), 2);
});

test("txn catalog: cas with ModifyIndex 0 creates only; with the current index it updates; delete and delete-cas cascade", () => {
  const s = new StateStore();
  assert.deepEqual(s.txnRW(2, [{ node: { verb: "cas", node: { node: "a", address: "10.0.0.1", modifyIndex: 0 } } }]).errors, []);
  assert.equal(s.txnRW(3, [{ node: { verb: "cas", node: { node: "a", address: "10.0.0.2", modifyIndex: 0 } } }]).errors[0]!.what, 'failed to set node "a", index is stale');
  assert.deepEqual(s.txnRW(4, [{ node: { verb: "cas", node: { node: "a", address: "10.0.0.2", modifyIndex: 2 } } }]).errors, []);
  assert.equal(s.tables.nodes.get("a")!.address, "10.0.0.2");
  assert.deepEqual(s.txnRW(5, [{ service: { verb: "cas", node: "a", service: { service: "web", modifyIndex: 0 } } }]).errors, []);
  assert.equal(s.txnRW(6, [{ service: { verb: "cas", node: "a", service: { service: "web", port: 1, modifyIndex: 4 } } }]).errors[0]!.what, 'failed to set service "web" on node "a", index is stale');
  assert.deepEqual(s.txnRW(7, [{ service: { verb: "cas", node: "a", service: { service: "web", port: 1, modifyIndex: 5 } } }]).errors, []);
  assert.deepEqual(s.txnRW(8, [{ check: { verb: "cas", check: { node: "a", checkId: "c1", name: "c1", serviceId: "web", modifyIndex: 0 } } }]).errors, []);
  assert.equal(s.txnRW(9, [{ check: { verb: "cas", check: { node: "a", checkId: "c1", name: "c1", status: "passing", modifyIndex: 7 } } }]).errors[0]!.what, 'failed to set check "c1" on node "a", index is stale');
  assert.deepEqual(s.txnRW(10, [{ check: { verb: "delete-cas", check: { node: "a", checkId: "c1", modifyIndex: 8 } } }]).errors, []);
  assert.equal(s.tables.checks.size, 0);
  assert.deepEqual(s.txnRW(11, [{ service: { verb: "delete", node: "a", service: { service: "web" } } }]).errors, []);
  assert.equal(s.tables.services.size, 0);
  s.txnRW(12, [{ service: { verb: "set", node: "a", service: { service: "db" } } }]);
  assert.deepEqual(s.txnRW(13, [{ node: { verb: "delete-cas", node: { node: "a", modifyIndex: 4 } } }]).errors, []);
  assert.deepEqual([s.tables.nodes.size, s.tables.services.size], [0, 0], "the node's services go with it");
  // Deleting what is not there is fine, as in Consul.
  assert.deepEqual(s.txnRW(14, [{ node: { verb: "delete", node: { node: "zz" } } }]).errors, []);
});

test("txn: get-or-empty answers the entry, or the key with no value when it does not exist", () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "a", value: new TextEncoder().encode("1") });
  const out = s.txnRO([{ kv: { verb: "get-or-empty", key: "a" } }, { kv: { verb: "get-or-empty", key: "zz" } }]);
  assert.deepEqual(out.errors, []);
  assert.equal(new TextDecoder().decode(out.results[0]!.kv!.value), "1");
  assert.deepEqual([out.results[1]!.kv!.key, out.results[1]!.kv!.value.length, out.results[1]!.kv!.modifyIndex], ["zz", 0, 0]);
});

test("txn catalog through the FSM: a check deletion invalidates the sessions bound to it, with the command's clock", () => {
  const fsm = new Fsm();
  fsm.apply(2, encodeCommand(MessageType.Txn, { ops: [node("a"), { check: { verb: "set", check: { node: "a", checkId: "c1", name: "c1", status: "passing" } } }], nowMs: 1_000 }));
  fsm.apply(3, encodeCommand(MessageType.Session, { op: "create", session: { id: "s1", node: "a", name: "", ttl: "", lockDelayMs: 15_000, behavior: "release", nodeChecks: ["c1"], serviceChecks: [] } }));
  assert.ok(fsm.state.tables.sessions.get("s1"));
  const out = fsm.apply(4, encodeCommand(MessageType.Txn, { ops: [{ check: { verb: "delete", check: { node: "a", checkId: "c1" } } }], nowMs: 2_000 })) as { errors: unknown[] };
  assert.deepEqual(out.errors, []);
  assert.equal(fsm.state.tables.sessions.get("s1"), undefined, "the session bound to the check is gone");
});
