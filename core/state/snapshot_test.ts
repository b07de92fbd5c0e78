import assert from "node:assert/strict";
import { test } from "node:test";
import { CorruptionError } from "../errors.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { concatBytes } from "../bytes.ts";
import { StateStore } from "./store.ts";

function dump(s: StateStore) {
  return {
    kvs: s.kvsList("").value.map((e) => ({ ...e, value: [...e.value] })),
    tombstones: s.tables.tombstones.all(),
    sessions: s.tables.sessions.all(),
    indexes: ["kvs", "tombstones", "sessions"].map((n) => s.maxIndex(n)),
  };
}

function populate(s: StateStore, rng: Rng): void {
  s.sessionCreate(1, "sess");
  let idx = 2;
  for (let i = 0; i < 1_000; i++) {
    const key = `k/${rng.int(300)}/${rng.int(10)}`;
    const r = rng.int(10);
    if (r < 7) s.kvsSet(idx, { key, value: rng.bytes(rng.int(20)), flags: rng.int(3) });
    else if (r < 9) s.kvsDelete(idx, key);
    else s.kvsLock(idx, { key, session: "sess" });
    idx++;
  }
}

test("snapshot: restore round-trips every table and index, whatever the chunking", async () => {
  for (const seed of seeds(2)) {
    const rng = new Rng(seed);
    const s = new StateStore();
    populate(s, rng);
    const whole = concatBytes(s.snapshot());
    // re-chunk into random sizes
    const pieces: Uint8Array[] = [];
    for (let off = 0; off < whole.length;) {
      const n = 1 + rng.int(300);
      pieces.push(whole.subarray(off, off + n));
      off += n;
    }
    const r = await StateStore.restore(pieces);
    assert.deepEqual(dump(r), dump(s), `seed ${seed}`);
    const r2 = await StateStore.restore(whole);
    assert.deepEqual(dump(r2), dump(s), `seed ${seed}`);
  }
});

test("snapshot: sizeBytes counts the bytes the frames hold, big values included", () => {
  for (const seed of seeds(2)) {
    const rng = new Rng(seed);
    const s = new StateStore();
    populate(s, rng);
    // Values past the 1 MiB a rows record aims at, so records are cut by bytes too.
    for (let i = 0; i < 5; i++) s.kvsSet(2_000 + i, { key: `big/${i}`, value: rng.bytes(300 * 1024 + rng.int(1024)), flags: 0 });
    const snap = s.snapshot();
    assert.equal(snap.sizeBytes(), concatBytes(snap).length, `seed ${seed}`);
  }
});

test("snapshot: captures a point in time; later writes are not in it", async () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "a" });
  const snap = s.snapshot();
  s.kvsSet(3, { key: "b" });
  const r = await StateStore.restore(snap);
  assert.deepEqual(r.kvsList("").value.map((e) => e.key), ["a"]);
  assert.equal(r.maxIndex("kvs"), 2);
});

test("snapshot: truncated or garbled streams are refused with CorruptionError", async () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "a" });
  const whole = concatBytes(s.snapshot());
  await assert.rejects(StateStore.restore(whole.subarray(0, whole.length - 3)), CorruptionError);
  const bad = whole.slice();
  bad[6] = 0xc1; // never-used msgpack byte inside the header record
  await assert.rejects(StateStore.restore(bad), CorruptionError);
  await assert.rejects(StateStore.restore(new Uint8Array(0)), CorruptionError);
});
