import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng, seeds } from "../sim/rng.ts";
import { StateStore } from "./store.ts";
import { WatchSet } from "./watch.ts";

// Random KV ops against a plain Map model. After every op: contents match,
// no read's index ever goes backwards, and exactly the watchers whose key or
// prefix changed were woken.
test("kvs model: contents, monotonic indexes and precise wakeups under random ops", () => {
  const prefixes = ["", "a/", "a/b/", "b/", "c"];
  const keys = ["a/1", "a/2", "a/b/1", "a/b/2", "b/1", "b/2", "c", "c/x", "d"];
  for (const seed of seeds(3)) {
    const rng = new Rng(seed);
    const s = new StateStore();
    s.sessionCreate(1, "s1");
    const model = new Map<string, string>();
    const lastList = new Map<string, number>();
    const lastKeys = new Map<string, number>();
    for (let idx = 2; idx < 400; idx++) {
      // watch everything before the op
      const keyWatch = new Map<string, WatchSet>();
      const prefixWatch = new Map<string, WatchSet>();
      for (const k of keys) s.kvsGet(k, keyWatch.set(k, new WatchSet()).get(k));
      for (const p of prefixes) s.kvsList(p, prefixWatch.set(p, new WatchSet()).get(p));
      const before = new Map(model);

      const key = rng.pick(keys);
      const value = String(rng.int(4));
      const r = rng.int(10);
      const at = `seed ${seed} idx ${idx}`;
      if (r < 4) {
        s.kvsSet(idx, { key, value: new TextEncoder().encode(value) });
        model.set(key, value);
      } else if (r < 6) {
        s.kvsDelete(idx, key);
        model.delete(key);
      } else if (r < 7) {
        const p = rng.pick(prefixes.slice(1));
        s.kvsDeleteTree(idx, p);
        for (const k of [...model.keys()]) if (k.startsWith(p)) model.delete(k);
      } else if (r < 9) {
        const cur = s.kvsGet(key).value;
        const cidx = rng.chance(0.5) && cur ? cur.modifyIndex : rng.int(3);
        const ok = s.kvsSetCas(idx, { key, value: new TextEncoder().encode(value), modifyIndex: cidx });
        const expect = cidx === 0 ? !cur : cur?.modifyIndex === cidx;
        assert.equal(ok, expect, at);
        if (ok) model.set(key, value);
      } else {
        const cur = s.kvsGet(key).value;
        const ok = s.kvsLock(idx, { key, session: "s1", value: new TextEncoder().encode(value) });
        assert.equal(ok, !cur || cur.session === "" || cur.session === "s1", at);
        if (ok) model.set(key, value);
      }

      const got = new Map(s.kvsList("").value.map((e) => [e.key, new TextDecoder().decode(e.value)]));
      assert.deepEqual(got, model, at);
      for (const k of keys) {
        const changed = before.get(k) !== model.get(k);
        // an unchanged value may still be a write (lock, session), so only check "changed ⇒ woken"
        if (changed) assert.ok(keyWatch.get(k)!.fired, `${at}: watcher of ${k} not woken`);
      }
      for (const p of prefixes) {
        const changed = [...new Set([...before.keys(), ...model.keys()])].some((k) => k.startsWith(p) && before.get(k) !== model.get(k));
        if (changed) assert.ok(prefixWatch.get(p)!.fired, `${at}: prefix watcher of "${p}" not woken`);
        const untouched = ![...keys].some((k) => k.startsWith(p) && k === key) && r !== 6;
        if (untouched) assert.ok(!prefixWatch.get(p)!.fired, `${at}: prefix watcher of "${p}" woken by a write to ${key}`);
        const li = s.kvsList(p).index;
        const ki = s.kvsListKeys(p, "/").index;
        assert.ok(li >= (lastList.get(p) ?? 0), `${at}: List("${p}") index went backwards`);
        assert.ok(ki >= (lastKeys.get(p) ?? 0), `${at}: ListKeys("${p}") index went backwards`);
        lastList.set(p, li);
        lastKeys.set(p, ki);
      }
      for (const k of keys) {
        if (k !== key && r !== 6) assert.ok(!keyWatch.get(k)!.fired, `${at}: watcher of ${k} woken by a write to ${key}`);
      }
      for (const w of [...keyWatch.values(), ...prefixWatch.values()]) w.cancel();
    }
  }
});
