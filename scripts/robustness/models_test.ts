// The robustness checks catch what they claim to: doctored histories of the
// kinds the suite hunts (a replayed PUT reinstating an old value, a CAS
// answered false that took effect, a torn txn, two holders of one lock) are
// flagged, and correct ones (with outcome-unknown writes) are not.
import { test } from "node:test";
import assert from "node:assert/strict";
import { checkHistories, refusedButApplied, reinstatedValues } from "./checks.ts";
import type { KvInput, KvOutput, Operation } from "./history.ts";
import { checkOperations } from "./linearizability.ts";
import { checkLockInvariants, lockModel, txnModel, type LockInput, type LockOutput, type TxnInput, type TxnOutput } from "./models.ts";
import { clientKinds } from "./runner.ts";
import { workloadKeys, type Histories } from "./workloads.ts";

type KvOp = Operation<KvInput, KvOutput>;
const op = <I, O>(clientId: number, call: number, ret: number, input: I, output?: O): Operation<I, O> =>
  ({ clientId, call, return: ret, input, output: Number.isFinite(ret) ? output : undefined });

const keys = workloadKeys();
const [ka] = keys.kv as [string];

function histories(partial: Partial<Histories>): Histories {
  return { kv: [], txn: [], lock: [], ...partial };
}

test("kv: a replayed PUT that reinstates an older value over a newer acknowledged write is flagged", () => {
  const kv: KvOp[] = [
    op(1, 0, 10, { op: "write", key: ka, value: "k1-0" }, { ok: true }),
    op(2, 20, 30, { op: "write", key: ka, value: "k2-0" }, { ok: true }),
    op(3, 40, 50, { op: "read", key: ka }, { value: "k2-0" }),
    // The replay of k1-0 lands here.
    op(3, 60, 70, { op: "read", key: ka }, { value: "k1-0" }),
  ];
  const r = checkHistories(histories({ kv }), { keys, finalKv: new Map([[ka, "k1-0"]]), timeoutMs: 10_000 });
  assert.deepEqual(r.anomalies.map((a) => a.kind).sort(), ["kv-not-linearizable", "kv-value-came-back", "lost-acknowledged-write"]);
  assert.match(r.anomalies.find((a) => a.kind === "kv-not-linearizable")!.explanation, /k1-0/);
});

test("kv: a CAS answered false although it took effect is flagged; the same CAS with an unknown outcome is not", () => {
  const base: KvOp[] = [
    op(1, 0, 10, { op: "write", key: ka, value: "k1-0" }, { ok: true }),
    op(2, 20, 30, { op: "read", key: ka }, { value: "k1-0" }),
  ];
  const read = op<KvInput, KvOutput>(3, 60, 70, { op: "read", key: ka }, { value: "k2-1" });
  const answeredFalse = [...base, op<KvInput, KvOutput>(2, 31, 50, { op: "cas", key: ka, expect: "k1-0", value: "k2-1" }, { ok: false }), read];
  const unknown = [...base, op<KvInput, KvOutput>(2, 31, Infinity, { op: "cas", key: ka, expect: "k1-0", value: "k2-1" }), read];
  assert.deepEqual(checkHistories(histories({ kv: answeredFalse }), { keys, finalKv: new Map(), timeoutMs: 10_000 }).anomalies.map((a) => a.kind).sort(), ["cas-false-took-effect", "kv-not-linearizable"]);
  assert.deepEqual(checkHistories(histories({ kv: unknown }), { keys, finalKv: new Map([[ka, "k2-1"]]), timeoutMs: 10_000 }).anomalies, []);
});

test("txn: a read that mixes two transactions' values is flagged; reads of whole transactions are not", () => {
  const [a, b] = keys.txn as [string, string];
  const model = txnModel(keys.txn);
  const others = Object.fromEntries(keys.txn.slice(2).map((k) => [k, null]));
  const h: Operation<TxnInput, TxnOutput>[] = [
    op(1, 0, 10, { op: "txn-write", sets: { [a]: "t1-0-a", [b]: "t1-0-b" } }, { ok: true }),
    op(2, 5, 15, { op: "txn-write", sets: { [a]: "t2-0-a", [b]: "t2-0-b" } }, { ok: true }),
    op(3, 20, 30, { op: "txn-read" }, { values: { [a]: "t2-0-a", [b]: "t2-0-b", ...others } }),
  ];
  assert.equal(checkOperations(model, h).result, "ok");
  const torn = [...h.slice(0, 2), op<TxnInput, TxnOutput>(3, 20, 30, { op: "txn-read" }, { values: { [a]: "t2-0-a", [b]: "t1-0-b", ...others } })];
  assert.equal(checkOperations(model, torn).result, "illegal");
});

test("txn: a guarded write answered 409 must not have taken effect", () => {
  const [a, b] = keys.txn as [string, string];
  const model = txnModel(keys.txn);
  const rest = Object.fromEntries(keys.txn.slice(2).map((k) => [k, null]));
  const h: Operation<TxnInput, TxnOutput>[] = [
    op(1, 0, 10, { op: "txn-write", sets: { [a]: "t1-0-a" } }, { ok: true }),
    op(1, 20, 30, { op: "txn-write", sets: { [a]: "t1-1-a", [b]: "t1-1-b" }, cas: { key: a, expect: "t1-0-a" } }, { ok: false }),
    op(2, 40, 50, { op: "txn-read" }, { values: { [a]: "t1-1-a", [b]: "t1-1-b", ...rest } }),
  ];
  assert.equal(checkOperations(model, h).result, "illegal");
  const fine = h.map((x, i) => (i === 1 ? { ...x, return: Infinity, output: undefined } : x));
  assert.equal(checkOperations(model, fine).result, "ok");
});

test("lock: two sessions holding the lock at once is flagged by the model and by the LockIndex invariant", () => {
  const h: Operation<LockInput, LockOutput>[] = [
    op(1, 0, 10, { op: "acquire", session: "s1" }, { ok: true }),
    op(2, 20, 30, { op: "lock-read" }, { entry: { lockIndex: 1, session: "s1" } }),
    op(2, 40, 50, { op: "acquire", session: "s2" }, { ok: true }),
    op(3, 60, 70, { op: "lock-read" }, { entry: { lockIndex: 1, session: "s2" } }),
  ];
  assert.equal(checkOperations(lockModel, h).result, "illegal");
  assert.deepEqual(checkLockInvariants(h).map((v) => v.kind), ["lock-index-two-sessions"]);
});

test("lock: LockIndex going back between reads in real-time order is flagged; concurrent reads are not", () => {
  const r = (c: number, call: number, ret: number, lockIndex: number): Operation<LockInput, LockOutput> =>
    op(c, call, ret, { op: "lock-read" }, { entry: { lockIndex, session: null } });
  assert.deepEqual(checkLockInvariants([r(1, 0, 10, 3), r(2, 5, 20, 2)]), []);
  assert.deepEqual(checkLockInvariants([r(1, 0, 10, 3), r(2, 11, 20, 2)]).map((v) => v.kind), ["lock-index-went-back"]);
});

test("lock: a replayed acquire after a release is flagged; a correct acquire/release cycle is not", () => {
  const cycle: Operation<LockInput, LockOutput>[] = [
    op(1, 0, 10, { op: "acquire", session: "s1" }, { ok: true }),
    op(1, 20, 30, { op: "release", session: "s1" }, { ok: true }),
    op(2, 40, 50, { op: "acquire", session: "s2" }, { ok: true }),
    op(3, 60, 70, { op: "lock-read" }, { entry: { lockIndex: 2, session: "s2" } }),
    op(2, 80, 90, { op: "release", session: "s2" }, { ok: true }),
    op(3, 100, 110, { op: "lock-read" }, { entry: { lockIndex: 2, session: null } }),
  ];
  assert.equal(checkOperations(lockModel, cycle).result, "ok");
  // s1's first acquire applied again after s2 released: LockIndex 3, held by s1.
  const replayed = [...cycle, op<LockInput, LockOutput>(3, 120, 130, { op: "lock-read" }, { entry: { lockIndex: 3, session: "s1" } })];
  assert.equal(checkOperations(lockModel, replayed).result, "illegal");
});

test("clientKinds: every workload gets a client from three clients up", () => {
  assert.deepEqual(clientKinds(10), ["kv", "kv", "kv", "kv", "kv", "lock", "lock", "lock", "txn", "txn"]);
  assert.deepEqual(new Set(clientKinds(3)), new Set(["kv", "lock", "txn"]));
});

test("diagnostics: a value read again after another value was read is named; overlapping reads are not", () => {
  const kv: KvOp[] = [
    op(1, 0, 10, { op: "write", key: ka, value: "k1-0" }, { ok: true }),
    op(2, 20, 30, { op: "write", key: ka, value: "k2-0" }, { ok: true }),
    op(3, 40, 50, { op: "read", key: ka }, { value: "k2-0" }),
    op(3, 60, 70, { op: "read", key: ka }, { value: "k1-0" }),
  ];
  const kinds = (h: KvOp[]) => reinstatedValues(histories({ kv: h }), keys.txn).map((a) => a.kind);
  assert.deepEqual(kinds(kv), ["kv-value-came-back"]);
  // The same reads overlapping in time prove nothing.
  assert.deepEqual(kinds([kv[0]!, kv[1]!, op(3, 40, 65, { op: "read", key: ka }, { value: "k2-0" }), op(4, 60, 70, { op: "read", key: ka }, { value: "k1-0" })]), []);
});

test("diagnostics: a txn applied twice is named through the txn's other keys", () => {
  const [a, b] = keys.txn as [string, string];
  const rest = Object.fromEntries(keys.txn.slice(2).map((k) => [k, null]));
  const h: Operation<TxnInput, TxnOutput>[] = [
    op(9, 0, 100, { op: "txn-write", sets: { [a]: "t9-1-a", [b]: "t9-1-b" } }, { ok: true }),
    op(8, 5, 40, { op: "txn-write", sets: { [b]: "t8-1-b" } }, { ok: true }),
    // T9 installed (a shows it), b already overwritten by t8-1.
    op(8, 50, 60, { op: "txn-read" }, { values: { [a]: "t9-1-a", [b]: "t8-1-b", ...rest } }),
    op(8, 110, 120, { op: "txn-write", sets: { [a]: "t8-2-a" } }, { ok: true }),
    // T9 again: b is back.
    op(9, 130, 140, { op: "txn-read" }, { values: { [a]: "t8-2-a", [b]: "t9-1-b", ...rest } }),
  ];
  assert.deepEqual(reinstatedValues(histories({ txn: h }), keys.txn).map((x) => x.kind), ["txn-value-came-back"]);
  assert.equal(checkOperations(txnModel(keys.txn), h).result, "illegal");
});

test("diagnostics: a CAS answered false whose value is read is named", () => {
  const kv: KvOp[] = [
    op(1, 0, 10, { op: "write", key: ka, value: "k1-0" }, { ok: true }),
    op(2, 20, 30, { op: "cas", key: ka, expect: "k1-0", value: "k2-0" }, { ok: false }),
    op(3, 40, 50, { op: "read", key: ka }, { value: "k2-0" }),
  ];
  assert.deepEqual(refusedButApplied(histories({ kv }), keys.txn).map((a) => a.kind), ["cas-false-took-effect"]);
});
