import assert from "node:assert/strict";
import { test } from "node:test";
import { CorruptionError } from "../errors.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { concatBytes } from "../bytes.ts";
import { StateStore } from "./store.ts";
import { framesAt, type SnapshotBytesAt } from "./snapshot.ts";

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

/** Snapshot bytes read at offsets, as a file store reads them: into `into` when given, or fresh. */
function bytesAt(whole: Uint8Array, useInto: boolean): SnapshotBytesAt & { reads: number } {
  const src = {
    reads: 0,
    read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
      src.reads++;
      const part = whole.subarray(offset, Math.min(whole.length, offset + length));
      if (useInto && into && into.length >= part.length) {
        into.set(part);
        return Promise.resolve(into.subarray(0, part.length));
      }
      return Promise.resolve(part.slice());
    },
  };
  return src;
}

test("snapshot: framesAt reads each frame into a buffer of its own, big ones straight from the file", async () => {
  for (const seed of seeds(3)) {
    const rng = new Rng(seed);
    const s = new StateStore();
    populate(s, rng);
    // Frames larger than framesAt's 256 KiB read-ahead, and a small one between them.
    for (let i = 0; i < 4; i++) s.kvsSet(2_000 + i, { key: `big/${i}`, value: rng.bytes(200 * 1024 + rng.int(400 * 1024)), flags: 0 });
    s.kvsSet(2_010, { key: "small/after", value: rng.bytes(10), flags: 0 });
    const whole = concatBytes(s.snapshot());
    for (const useInto of [true, false]) {
      const frames: Uint8Array[] = [];
      for await (const f of framesAt(bytesAt(whole, useInto))) frames.push(f);
      assert.ok(frames.length > 3, `seed ${seed}`);
      assert.ok(Buffer.from(concatBytes(frames)).equals(whole), `seed ${seed}: the frames are the bytes`);
      for (const f of frames) {
        assert.equal(f.byteOffset, 0, "a buffer of its own");
        assert.equal(f.buffer.byteLength, f.length, "nothing else in it");
        assert.equal(new DataView(f.buffer).getUint32(0) + 4, f.length, "exactly one frame");
      }
      const r = await StateStore.restore(framesAt(bytesAt(whole, useInto)));
      assert.deepEqual(dump(r), dump(s), `seed ${seed} into=${useInto}`);
      // A value decoded in place keeps its frame alive, and no more than it (not the read-ahead).
      const frameSizes = new Set(frames.map((f) => f.length));
      for (const e of r.kvsList("").value) {
        if (e.value.length > 0) assert.ok(frameSizes.has(e.value.buffer.byteLength), `${e.key}: held in a buffer of ${e.value.buffer.byteLength}`);
      }
    }
    // Big frames cost a read of their own, not a read per 256 KiB: the whole state in few reads.
    const src = bytesAt(whole, true);
    for await (const _ of framesAt(src)) void _;
    assert.ok(src.reads <= 2 * Math.ceil(whole.length / (256 * 1024)) + 4, `${src.reads} reads for ${whole.length} bytes`);
  }
});

test("snapshot: framesAt over a short or garbled file ends in CorruptionError", async () => {
  const s = new StateStore();
  s.kvsSet(2, { key: "a", value: new Uint8Array(300 * 1024).fill(7), flags: 0 });
  s.kvsSet(3, { key: "b", value: new Uint8Array(5), flags: 0 });
  const whole = concatBytes(s.snapshot());
  // Cut inside a length, inside a big frame, inside a small one, and at nothing.
  for (const cut of [2, 6, 100, 200 * 1024, whole.length - 10, whole.length - 1, 0]) {
    await assert.rejects(StateStore.restore(framesAt(bytesAt(whole.subarray(0, cut), true))), CorruptionError, `cut at ${cut}`);
  }
  const huge = whole.slice();
  new DataView(huge.buffer).setUint32(0, 0xfffffff0);
  await assert.rejects(StateStore.restore(framesAt(bytesAt(huge, true))), /too large/);
  const trailing = concatBytes([whole, Uint8Array.of(0, 0, 0, 1, 0xc0)]);
  await assert.rejects(StateStore.restore(framesAt(bytesAt(trailing, true))), /after its end record/);
});
