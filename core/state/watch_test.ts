import assert from "node:assert/strict";
import { test } from "node:test";
import { StateStore } from "./store.ts";
import { WatchSet } from "./watch.ts";

function watcher(): { ws: WatchSet; count: () => number } {
  const ws = new WatchSet();
  let n = 0;
  ws.onFire(() => n++);
  return { ws, count: () => n };
}

test("watch: a write to key a wakes a's watcher, not b's nor prefix c/", () => {
  const s = new StateStore();
  const a = watcher();
  const b = watcher();
  const c = watcher();
  s.kvsGet("a", a.ws);
  s.kvsGet("b", b.ws);
  s.kvsList("c/", c.ws);
  s.kvsSet(2, { key: "a" });
  assert.deepEqual([a.count(), b.count(), c.count()], [1, 0, 0]);
  assert.equal(a.ws.size, 0, "fired set drops its registrations");
});

test("watch: a write under c/ wakes prefix watchers of c/ and of the root, not of d/ or c/x/", () => {
  const s = new StateStore();
  const c = watcher();
  const root = watcher();
  const d = watcher();
  const cx = watcher();
  const keys = watcher();
  s.kvsList("c/", c.ws);
  s.kvsList("", root.ws);
  s.kvsList("d/", d.ws);
  s.kvsList("c/x/", cx.ws);
  s.kvsListKeys("c", "/", keys.ws);
  s.kvsSet(2, { key: "c/y" });
  assert.deepEqual([c.count(), root.count(), d.count(), cx.count(), keys.count()], [1, 1, 0, 0, 1]);
});

test("watch: the exact key counts as its own prefix; deletes and delete-tree wake", () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "p/q" });
  const exact = watcher();
  s.kvsList("p/q", exact.ws);
  const del = watcher();
  s.kvsGet("p/q", del.ws);
  s.kvsDeleteTree(3, "p/");
  assert.deepEqual([exact.count(), del.count()], [1, 1]);
});

test("watch: watchers fire only after commit, never for a rolled-back txn", () => {
  const s = new StateStore();
  const w = watcher();
  s.kvsGet("a", w.ws);
  const out = s.txnRW(2, [
    { kv: { verb: "set", key: "a" } },
    { kv: { verb: "check-index", key: "zzz", index: 1 } },
  ]);
  assert.equal(out.errors.length, 1);
  assert.equal(w.count(), 0);
  let seenDuring = -1;
  const tx = s.begin(3);
  w.ws.onFire(() => { seenDuring = 1; });
  tx.insert(s.tables.kvs, { key: "a", flags: 0, value: new Uint8Array(0), session: "", lockIndex: 0, createIndex: 3, modifyIndex: 3 });
  assert.equal(seenDuring, -1, "not fired before commit");
  tx.commit();
  assert.equal(seenDuring, 1);
});

test("watch: a cas that fails or an unchanged set wakes nobody", () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "a" });
  const w = watcher();
  s.kvsGet("a", w.ws);
  s.kvsSetCas(3, { key: "a", modifyIndex: 0 });
  s.kvsSet(4, { key: "a" });
  assert.equal(w.count(), 0);
});

test("watch: cancel frees registrations so idle keys leave no garbage", () => {
  const s = new StateStore();
  const w = watcher();
  s.kvsGet("a", w.ws);
  s.kvsList("b/", w.ws);
  assert.equal(s.tables.kvs.watches.watchedCount, 2);
  w.ws.cancel();
  assert.equal(s.tables.kvs.watches.watchedCount, 0);
  s.kvsSet(2, { key: "a" });
  assert.equal(w.count(), 0);
});

test("watch: abandon wakes every watcher", () => {
  const s = new StateStore();
  const list = [watcher(), watcher(), watcher()];
  s.kvsGet("a", list[0]!.ws);
  s.kvsList("x/", list[1]!.ws);
  s.watchAbandon(list[2]!.ws);
  s.abandon();
  assert.deepEqual(list.map((w) => w.count()), [1, 1, 1]);
  assert.ok(s.abandoned);
});

test("watch: 10,000 watchers of one key; a write to another key wakes none, a write to it wakes all", () => {
  const s = new StateStore();
  s.kvsSet(1, { key: "hot" });
  let woken = 0;
  const sets: WatchSet[] = [];
  for (let i = 0; i < 10_000; i++) {
    const ws = new WatchSet();
    ws.onFire(() => woken++);
    s.kvsGet("hot", ws);
    sets.push(ws);
  }
  // a few prefix watchers elsewhere, so the prefix path is exercised too
  for (let i = 0; i < 50; i++) s.kvsList(`other${i}/`, new WatchSet());
  const t0 = performance.now();
  for (let i = 0; i < 1_000; i++) s.kvsSet(2 + i, { key: `cold/${i}`, value: new Uint8Array([i & 255]) });
  const coldMs = performance.now() - t0;
  assert.equal(woken, 0);
  assert.ok(coldMs < 500, `1,000 unrelated writes took ${coldMs.toFixed(1)} ms with 10,000 watchers`);
  s.kvsSet(5000, { key: "hot", value: new Uint8Array([1]) });
  assert.equal(woken, 10_000);
  assert.ok(sets.every((w) => w.fired));
});
