import assert from "node:assert/strict";
import { test } from "node:test";
import { StateError } from "../errors.ts";
import { kvsSessionInvalidateTxn } from "./kvs.ts";
import { StateStore } from "./store.ts";

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined) => (b ? new TextDecoder().decode(b) : undefined);

test("kvs: set stamps create/modify indexes and keeps createIndex on update", () => {
  const s = new StateStore();
  s.kvsSet(3, { key: "a", value: bytes("1"), flags: 7 });
  let e = s.kvsGet("a").value!;
  assert.deepEqual([e.createIndex, e.modifyIndex, e.flags, e.lockIndex, e.session], [3, 3, 7, 0, ""]);
  assert.ok(Object.isFrozen(e));
  s.kvsSet(5, { key: "a", value: bytes("2") });
  e = s.kvsGet("a").value!;
  assert.deepEqual([e.createIndex, e.modifyIndex, text(e.value)], [3, 5, "2"]);
  assert.equal(s.kvsGet("missing").index, 5);
});

test("kvs: an unchanged set does not move ModifyIndex", () => {
  const s = new StateStore();
  s.kvsSet(3, { key: "a", value: bytes("1") });
  s.kvsSet(4, { key: "a", value: bytes("1") });
  assert.equal(s.kvsGet("a").value!.modifyIndex, 3);
  assert.equal(s.maxIndex("kvs"), 3);
});

test("kvs: table index never goes backwards across deletes (tombstones)", () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "a/x", value: bytes("1") });
  s.kvsSet(3, { key: "a/y", value: bytes("1") });
  s.kvsSet(4, { key: "b", value: bytes("1") });
  assert.equal(s.kvsList("a/").index, 3);
  s.kvsDelete(5, "a/y");
  const l = s.kvsList("a/");
  assert.equal(l.value.length, 1);
  assert.ok(l.index >= 5, `list index ${l.index} went backwards`);
  s.kvsDelete(6, "a/x");
  const empty = s.kvsList("a/");
  assert.equal(empty.value.length, 0);
  assert.equal(empty.index, 6);
  assert.equal(s.kvsListKeys("a/", "/").index, 6);
  // deleting an absent key is a no-op
  s.kvsDelete(7, "nope");
  assert.equal(s.maxIndex("kvs", "tombstones"), 6);
  // reaping keeps the table index but the prefix falls back to the table index
  s.reapTombstones(8, 6);
  assert.equal(s.tables.tombstones.size, 0);
  assert.equal(s.kvsList("a/").index, 6);
});

test("kvs: reapTombstones removes only stones at or below the index", () => {
  const s = new StateStore();
  for (let i = 1; i <= 4; i++) s.kvsSet(i, { key: `k${i}` });
  s.kvsDelete(5, "k1");
  s.kvsDelete(6, "k2");
  s.kvsDelete(7, "k3");
  assert.equal(s.reapTombstones(8, 6), 2);
  assert.deepEqual(s.tables.tombstones.all().map((t) => t.key), ["k3"]);
});

test("kvs: delete-tree leaves one tombstone for the prefix (the root too)", () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "t/a" });
  s.kvsSet(3, { key: "t/b/c" });
  s.kvsSet(4, { key: "u" });
  s.kvsDeleteTree(5, "t/");
  assert.deepEqual(s.kvsList("").value.map((e) => e.key), ["u"]);
  assert.deepEqual(s.tables.tombstones.all(), [{ key: "t/", index: 5 }]);
  assert.equal(s.kvsList("t/").index, 5);
  s.kvsDeleteTree(6, "");
  assert.equal(s.tables.kvs.size, 0);
  assert.deepEqual(s.tables.tombstones.all().map((t) => t.key), ["", "t/"]);
  assert.equal(s.kvsList("").index, 6);
  s.kvsDeleteTree(7, "zzz");
  assert.equal(s.maxIndex("kvs"), 6, "deleting nothing does not bump the index");
});

test("kvs: a delete-tree of an ancestor moves a sub-prefix's index forward", () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "a/b/old" });
  s.kvsDelete(3, "a/b/old");
  s.kvsSet(4, { key: "a/b/c" });
  assert.equal(s.kvsList("a/b/").index, 4);
  s.kvsDeleteTree(5, "a/");
  assert.equal(s.kvsList("a/b/").index, 5, "not the older stone at 3");
  s.kvsSet(6, { key: "x/y/z" });
  s.kvsDeleteTree(7, "");
  assert.equal(s.kvsList("x/y/").index, 7);
  assert.equal(s.kvsListKeys("x/", "/").index, 7);
});

test("kvs: ListKeys rolls up at the separator like Consul", () => {
  const s = new StateStore();
  let i = 1;
  for (const k of ["foo", "foo/", "foo/bar", "foo/bar/baz", "foo/zip", "foo/zip/zap", "foobar", "other"]) {
    s.kvsSet(i++, { key: k });
  }
  assert.deepEqual(s.kvsListKeys("foo/", "/").value, ["foo/", "foo/bar", "foo/bar/", "foo/zip", "foo/zip/"]);
  assert.deepEqual(s.kvsListKeys("", "/").value, ["foo", "foo/", "foobar", "other"]);
  assert.deepEqual(s.kvsListKeys("foo", "").value, ["foo", "foo/", "foo/bar", "foo/bar/baz", "foo/zip", "foo/zip/zap", "foobar"]);
  assert.equal(s.kvsListKeys("foo/", "/").index, 6);
  assert.equal(s.kvsListKeys("", "/").index, 8);
});

test("kvs: cas with index 0 sets only if absent; otherwise must match ModifyIndex", () => {
  const s = new StateStore();
  assert.equal(s.kvsSetCas(2, { key: "a", value: bytes("1"), modifyIndex: 0 }), true);
  assert.equal(s.kvsSetCas(3, { key: "a", value: bytes("2"), modifyIndex: 0 }), false);
  assert.equal(s.kvsSetCas(3, { key: "a", value: bytes("2"), modifyIndex: 1 }), false);
  assert.equal(s.kvsSetCas(3, { key: "b", value: bytes("2"), modifyIndex: 9 }), false);
  assert.equal(s.kvsSetCas(3, { key: "a", value: bytes("2"), modifyIndex: 2 }), true);
  assert.equal(text(s.kvsGet("a").value!.value), "2");
  assert.equal(s.kvsGet("b").value, undefined);
});

test("kvs: delete-cas matches ModifyIndex; an absent key counts as deleted", () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "a" });
  assert.equal(s.kvsDeleteCas(3, 1, "a"), false);
  assert.ok(s.kvsGet("a").value);
  assert.equal(s.kvsDeleteCas(3, 2, "a"), true);
  assert.equal(s.kvsGet("a").value, undefined);
  assert.equal(s.kvsDeleteCas(4, 2, "a"), true);
});

test("kvs: lock and unlock follow Consul's session and LockIndex rules", () => {
  const s = new StateStore();
  assert.throws(() => s.kvsLock(2, { key: "l", session: "s1" }), (e: unknown) =>
    e instanceof StateError && e.message === 'invalid session "s1"');
  assert.throws(() => s.kvsLock(2, { key: "l" }), /missing session/);
  s.sessionCreate(2, "s1");
  s.sessionCreate(3, "s2");
  assert.equal(s.kvsLock(4, { key: "l", value: bytes("v"), session: "s1" }), true);
  let e = s.kvsGet("l").value!;
  assert.deepEqual([e.session, e.lockIndex, e.createIndex, e.modifyIndex], ["s1", 1, 4, 4]);
  // held by someone else
  assert.equal(s.kvsLock(5, { key: "l", session: "s2" }), false);
  // re-acquire by the holder keeps LockIndex, updates value
  assert.equal(s.kvsLock(6, { key: "l", value: bytes("w"), session: "s1" }), true);
  e = s.kvsGet("l").value!;
  assert.deepEqual([e.lockIndex, e.modifyIndex, text(e.value)], [1, 6, "w"]);
  // plain set keeps the session
  s.kvsSet(7, { key: "l", value: bytes("x") });
  assert.equal(s.kvsGet("l").value!.session, "s1");
  // unlock by a non-holder fails; by the holder clears the session
  assert.equal(s.kvsUnlock(8, { key: "l", session: "s2" }), false);
  assert.equal(s.kvsUnlock(8, { key: "nope", session: "s1" }), false);
  assert.equal(s.kvsUnlock(8, { key: "l", session: "s1", value: bytes("x") }), true);
  e = s.kvsGet("l").value!;
  assert.deepEqual([e.session, e.modifyIndex], ["", 8]);
  // acquiring a free lock increments LockIndex
  assert.equal(s.kvsLock(9, { key: "l", session: "s2" }), true);
  assert.equal(s.kvsGet("l").value!.lockIndex, 1 + e.lockIndex);
});

test("txn: all or nothing, errors carry opIndex and Consul's wording", () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "keep", value: bytes("1") });
  const out = s.txnRW(3, [
    { kv: { verb: "set", key: "new", value: bytes("n") } },
    { kv: { verb: "delete", key: "keep" } },
    { kv: { verb: "cas", key: "keep", index: 99 } },
    { kv: { verb: "check-index", key: "other", index: 1 } },
  ]);
  assert.deepEqual(out.results, []);
  assert.deepEqual(out.errors, [
    { opIndex: 2, what: 'failed to set key "keep", index is stale' },
    { opIndex: 3, what: 'failed to check index, key "other" doesn\'t exist' },
  ]);
  assert.equal(s.kvsGet("new").value, undefined, "rolled back");
  assert.ok(s.kvsGet("keep").value, "rolled back delete");
  assert.equal(s.tables.tombstones.size, 0);
  assert.equal(s.maxIndex("kvs", "tombstones"), 2);

  const ok = s.txnRW(4, [
    { kv: { verb: "set", key: "new", value: bytes("n") } },
    { kv: { verb: "get", key: "keep" } },
    { kv: { verb: "check-not-exists", key: "zzz" } },
    { kv: { verb: "delete", key: "keep" } },
  ]);
  assert.deepEqual(ok.errors, []);
  assert.equal(ok.results.length, 2);
  assert.equal(ok.results[0]!.kv!.key, "new");
  assert.equal(ok.results[0]!.kv!.value.length, 0, "non-get results carry no value");
  assert.equal(ok.results[0]!.kv!.modifyIndex, 4);
  assert.equal(text(ok.results[1]!.kv!.value), "1");
  assert.equal(s.kvsGet("keep").value, undefined);
});

test("txn: read-only ops and more wording", () => {
  const s = new StateStore();
  s.sessionCreate(1, "s1");
  s.kvsSet(2, { key: "d/a", value: bytes("1") });
  s.kvsSet(3, { key: "d/b", value: bytes("2") });
  const r = s.txnRO([
    { kv: { verb: "get-tree", key: "d/" } },
    { kv: { verb: "check-session", key: "d/a", session: "" } },
  ]);
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.results.map((x) => x.kv!.key), ["d/a", "d/b", "d/a"]);
  const bad = s.txnRO([
    { kv: { verb: "check-session", key: "d/a", session: "s1" } },
    { kv: { verb: "check-not-exists", key: "d/a" } },
    { kv: { verb: "get", key: "zz" } },
    { kv: { verb: "set", key: "zz" } },
  ]);
  assert.deepEqual(bad.errors.map((e) => e.what), [
    'failed session check for key "d/a", current session "" != "s1"',
    'key "d/a" exists',
    'key "zz" doesn\'t exist',
    "set is not allowed in a read-only transaction",
  ]);
  const w = s.txnRW(4, [
    { kv: { verb: "lock", key: "d/a", session: "s1" } },
    { kv: { verb: "unlock", key: "d/b", session: "s1" } },
    { kv: { verb: "delete-cas", key: "d/b", index: 1 } },
    { kv: { verb: "lock", key: "d/a", session: "nope" } },
  ]);
  assert.deepEqual(w.errors.map((e) => [e.opIndex, e.what]), [
    [1, `failed to unlock key "d/b", lock isn't held, or is held by another session`],
    [2, 'failed to delete key "d/b", index is stale'],
    [3, 'invalid session "nope"'],
  ]);
  assert.equal(s.kvsGet("d/a").value!.session, "");
});

test("kvs: session invalidation releases or deletes the keys it holds", () => {
  const s = new StateStore();
  s.sessionCreate(1, "s1");
  s.sessionCreate(1, "s2");
  s.kvsLock(2, { key: "a", value: bytes("va"), session: "s1" });
  s.kvsLock(3, { key: "b", session: "s1" });
  s.kvsLock(4, { key: "c", session: "s2" });
  const released = s.write(5, (tx) => kvsSessionInvalidateTxn(tx, 5, "s1", "release"));
  assert.deepEqual(released, ["a", "b"]);
  const a = s.kvsGet("a").value!;
  assert.deepEqual([a.session, a.lockIndex, a.modifyIndex, text(a.value)], ["", 1, 5, "va"]);
  assert.equal(s.kvsGet("c").value!.session, "s2");
  const deleted = s.write(6, (tx) => kvsSessionInvalidateTxn(tx, 6, "s2", "delete"));
  assert.deepEqual(deleted, ["c"]);
  assert.equal(s.kvsGet("c").value, undefined);
  assert.equal(s.kvsList("c").index, 6);
});
