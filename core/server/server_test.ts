import assert from "node:assert/strict";
import { test } from "node:test";
import { BadRequestError, CairnError, NoLeaderError, NotLeaderError, TooLargeError } from "../errors.ts";
import { createLocalRpc } from "../rpc/local.ts";
import type { TxnOp } from "../rpc/methods.ts";
import { Rng } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import type { Consensus } from "./consensus.ts";
import { createDevServer } from "./dev.ts";
import { Fsm } from "./fsm.ts";
import { Server } from "./server.ts";
import { q } from "./_test_query.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

async function dev() {
  const clock = new SimClock();
  const d = await createDevServer({ clock, rng: new Rng(1) });
  return { clock, ...d, rpc: createLocalRpc(d.server) };
}

test("server: KV put/get/list/keys/delete through the local RPC", async () => {
  const { rpc } = await dev();
  assert.deepEqual(await rpc.call("KVS.Apply", { op: "set", entry: { key: "app/a", value: bytes("1"), flags: 5 } }), { ok: true, index: 3 });
  await rpc.call("KVS.Apply", { op: "set", entry: { key: "app/b/c", value: bytes("2") } });
  const got = await rpc.call("KVS.Get", { key: "app/a", query: q() });
  assert.equal(got.entries.length, 1);
  assert.equal(got.entries[0]!.flags, 5);
  assert.deepEqual(got.meta, { index: 3, knownLeader: true, lastContactMs: 0, consistencyLevel: "leader" });
  const miss = await rpc.call("KVS.Get", { key: "nope", query: q() });
  assert.deepEqual([miss.entries, miss.meta.index], [[], 4]);
  const list = await rpc.call("KVS.List", { prefix: "app/", query: q() });
  assert.deepEqual(list.entries.map((e) => e.key), ["app/a", "app/b/c"]);
  const keys = await rpc.call("KVS.ListKeys", { prefix: "app/", separator: "/", query: q() });
  assert.deepEqual(keys.keys, ["app/a", "app/b/"]);
  assert.deepEqual(await rpc.call("KVS.Apply", { op: "delete", entry: { key: "app/a" } }), { ok: true, index: 5 });
  const after = await rpc.call("KVS.List", { prefix: "app/", query: q() });
  assert.equal(after.meta.index, 5);
});

test("server: cas and delete-cas failures answer ok:false, not an error", async () => {
  const { rpc } = await dev();
  assert.equal((await rpc.call("KVS.Apply", { op: "cas", entry: { key: "k", modifyIndex: 0 } })).ok, true);
  assert.equal((await rpc.call("KVS.Apply", { op: "cas", entry: { key: "k", modifyIndex: 0 } })).ok, false);
  assert.equal((await rpc.call("KVS.Apply", { op: "delete-cas", entry: { key: "k", modifyIndex: 99 } })).ok, false);
  assert.equal((await rpc.call("KVS.Apply", { op: "delete-cas", entry: { key: "k", modifyIndex: 3 } })).ok, true);
});

test("server: lock on an unknown session fails with Consul's message; validation errors are BadRequest", async () => {
  const { rpc, fsm } = await dev();
  await assert.rejects(rpc.call("KVS.Apply", { op: "lock", entry: { key: "l", session: "abc" } }), (e: unknown) =>
    e instanceof CairnError && e.message.startsWith("invalid session") && e.message === 'invalid session "abc"');
  fsm.state.sessionCreate(10, "abc");
  assert.equal((await rpc.call("KVS.Apply", { op: "lock", entry: { key: "l", session: "abc" } })).ok, true);
  assert.equal((await rpc.call("KVS.Apply", { op: "unlock", entry: { key: "l", session: "zzz" } })).ok, false);
  await assert.rejects(rpc.call("KVS.Apply", { op: "set", entry: { key: "" } }), BadRequestError);
  await assert.rejects(rpc.call("KVS.Apply", { op: "bogus" as "set", entry: { key: "x" } }), BadRequestError);
  await assert.rejects(rpc.call("KVS.Apply", { op: "set", entry: { key: "x", flags: -1 } }), BadRequestError);
  // delete-tree may name the root
  assert.equal((await rpc.call("KVS.Apply", { op: "delete-tree", entry: { key: "" } })).ok, true);
});

test("server: blocking KVS.Get wakes on a write to its key", async () => {
  const { rpc, clock } = await dev();
  await rpc.call("KVS.Apply", { op: "set", entry: { key: "w", value: bytes("1") } });
  let answered: number | undefined;
  void rpc.call("KVS.Get", { key: "w", query: q({ minQueryIndex: 3, maxQueryTimeMs: 30_000 }) }).then((r) => {
    answered = r.meta.index;
  });
  await clock.runFor(100);
  await rpc.call("KVS.Apply", { op: "set", entry: { key: "other", value: bytes("1") } });
  await clock.runFor(100);
  assert.equal(answered, undefined);
  await rpc.call("KVS.Apply", { op: "set", entry: { key: "w", value: bytes("2") } });
  await drainMicrotasks(3);
  assert.equal(answered, 5);
});

test("server: txn writes, read-only txns, limits and rollback", async () => {
  const { rpc } = await dev();
  const w = await rpc.call("Txn.Apply", {
    ops: [{ kv: { verb: "set", key: "t/a", value: bytes("1") } }, { kv: { verb: "set", key: "t/b", value: bytes("2") } }],
  });
  assert.deepEqual(w.errors, []);
  assert.equal(w.index, 3);
  assert.deepEqual(w.results.map((r) => [r.kv!.key, r.kv!.modifyIndex, r.kv!.value.length]), [["t/a", 3, 0], ["t/b", 3, 0]]);
  const r = await rpc.call("Txn.Apply", { ops: [{ kv: { verb: "get", key: "t/a" } }] });
  assert.equal(new TextDecoder().decode(r.results[0]!.kv!.value), "1");
  assert.equal(r.index, 3);
  const fail = await rpc.call("Txn.Apply", {
    ops: [{ kv: { verb: "delete", key: "t/a" } }, { kv: { verb: "check-index", key: "t/b", index: 1 } }],
  });
  assert.deepEqual(fail.errors, [{ opIndex: 1, what: 'failed index check for key "t/b", current modify index 3 != 1' }]);
  assert.deepEqual(fail.results, []);
  assert.equal((await rpc.call("KVS.Get", { key: "t/a", query: q() })).entries.length, 1, "rolled back");
  const noKey = await rpc.call("Txn.Apply", { ops: [{ kv: { verb: "set", key: "" } }] });
  assert.deepEqual(noKey.errors, [{ opIndex: 0, what: "Must provide key" }]);
  const many: TxnOp[] = Array.from({ length: 129 }, (_, i) => ({ kv: { verb: "set", key: `k${i}` } }));
  await assert.rejects(rpc.call("Txn.Apply", { ops: many }), TooLargeError);
  const exactly = await rpc.call("Txn.Apply", { ops: many.slice(0, 128) });
  assert.deepEqual(exactly.errors, []);
});

test("server: status answers from the consensus seam", async () => {
  const { rpc } = await dev();
  assert.equal(await rpc.call("Status.Leader", {}), "127.0.0.1:8300");
  assert.deepEqual(await rpc.call("Status.Peers", {}), ["127.0.0.1:8300"]);
});

test("server: a follower refuses writes and non-stale reads, serves stale ones", async () => {
  const fsm = new Fsm();
  fsm.state.kvsSet(7, { key: "a" });
  let leader = "10.0.0.9:8300";
  const follower: Consensus = {
    apply: () => Promise.reject(new Error("not leader")),
    isLeader: () => false,
    leaderAddr: () => leader,
    lastContactMs: () => 12,
    peers: () => [],
    readBarrier: () => Promise.resolve(),
  };
  const rpc = createLocalRpc(new Server({ fsm, consensus: follower, clock: new SimClock(), rng: new Rng(1) }));
  await assert.rejects(rpc.call("KVS.Apply", { op: "set", entry: { key: "x" } }), (e: unknown) =>
    e instanceof NotLeaderError && e.leader === "10.0.0.9:8300");
  await assert.rejects(rpc.call("KVS.Get", { key: "a", query: q() }), NotLeaderError);
  const stale = await rpc.call("KVS.Get", { key: "a", query: q({ allowStale: true }) });
  assert.deepEqual(stale.meta, { index: 7, knownLeader: true, lastContactMs: 12, consistencyLevel: "stale" });
  // Read-only transactions follow the same rules (Consul Txn.Read), with the read's meta.
  const get = [{ kv: { verb: "get" as const, key: "a" } }];
  await assert.rejects(rpc.call("Txn.Apply", { ops: get }), NotLeaderError);
  const staleTxn = await rpc.call("Txn.Apply", { ops: get, query: q({ allowStale: true }) });
  assert.deepEqual([staleTxn.results.map((r) => r.kv!.key), staleTxn.meta], [["a"], { index: 7, knownLeader: true, lastContactMs: 12, consistencyLevel: "stale" }]);
  leader = "";
  await assert.rejects(rpc.call("KVS.Get", { key: "a", query: q() }), NoLeaderError);
});
