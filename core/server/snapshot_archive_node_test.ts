import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { gunzipSync, gzipSync } from "node:zlib";
import { CorruptionError } from "../errors.ts";
import { readSnapshotArchive } from "./snapshot_archive.ts";
import { ByteQueue, gzipAdaptive, readSnapshotArchiveStream, snapshotArchiveStream } from "./snapshot_archive_node.ts";

/** A state that iterates to the same chunks every time, like StateStore.snapshot(). */
function fakeState(chunks: number, chunkBytes: number): Iterable<Uint8Array> {
  return {
    *[Symbol.iterator]() {
      for (let i = 0; i < chunks; i++) {
        const c = new Uint8Array(chunkBytes);
        for (let j = 0; j < c.length; j++) c[j] = (i * 31 + j * 7) & 0xff;
        yield c;
      }
    },
  };
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c);
  return Buffer.concat(parts);
}

function* rechunk(data: Uint8Array, size: number): Generator<Uint8Array> {
  for (let off = 0; off < data.length; off += size) yield data.subarray(off, off + size);
}

async function readAll(archive: Uint8Array, chunk = 4096): Promise<{ meta: unknown; state: Buffer }> {
  const parts: Uint8Array[] = [];
  const r = await readSnapshotArchiveStream(
    (async function* () {
      yield* rechunk(archive, chunk);
    })(),
    (c) => void parts.push(c.slice()),
  );
  return { meta: r.meta, state: Buffer.concat(parts) };
}

test("streamed snapshot archive: round trip, any chunking, and the whole-buffer reader agrees", async () => {
  const state = fakeState(40, 100_000);
  const want = Buffer.concat([...state]);
  const archive = await collect(snapshotArchiveStream(state, { index: 99, nowMs: 1_700_000_000_000 }));
  for (const chunk of [1, 511, 512, 65_536, archive.length]) {
    const r = await readAll(archive, chunk);
    assert.deepEqual(r.meta, { Version: 1, ID: "0-99-1700000000000", Index: 99, Size: want.length });
    assert.ok(r.state.equals(want), `chunk ${chunk}`);
  }
  // The archive is the same format the whole-buffer reader (and Consul's layout) expects.
  const whole = await readSnapshotArchive(archive);
  assert.equal(whole.meta.Index, 99);
  assert.ok(Buffer.from(whole.state).equals(want));
  const tar = gunzipSync(archive);
  assert.deepEqual([0, 1024 + 512 * Math.ceil(want.length / 512) + 512].map((o) => tar.subarray(o, o + 10).toString().replace(/\0.*/, "")), ["meta.json", "SHA256SUMS"]);
  const sums = tar.subarray(tar.length - 1024 - 512, tar.length - 1024).toString();
  assert.match(sums, new RegExp(`${createHash("sha256").update(want).digest("hex")}  state\\.bin`));
});

test("streamed snapshot archive: damage is refused with its reason", async () => {
  const state = fakeState(8, 10_000);
  const archive = await collect(snapshotArchiveStream(state, { index: 5, nowMs: 0 }));
  const tar = gunzipSync(archive);
  const refuse = (bytes: Uint8Array, re: RegExp) => assert.rejects(readAll(bytes), (e: unknown) => e instanceof CorruptionError && re.test(e.message), String(re));
  await refuse(Buffer.from("not a snapshot at all"), /not valid gzip/);
  await refuse(new Uint8Array(0), /empty/);
  await refuse(archive.subarray(0, archive.length - 100), /truncated/);
  await refuse(archive.subarray(0, Math.floor(archive.length / 2)), /truncated/);
  // Well-formed gzip around a tar cut inside state.bin.
  await refuse(gzipSync(tar.subarray(0, 512 * 3 + 700)), /truncated: entry "state\.bin"/);
  const flipped = Buffer.from(tar);
  flipped[512 * 3 + 5]! ^= 0xff;
  await refuse(gzipSync(flipped), /checksum mismatch for state\.bin/);
  const badHeader = Buffer.from(tar);
  badHeader[3] ^= 0x20;
  await refuse(gzipSync(badHeader), /not a valid tar: bad header checksum/);
  await refuse(gzipSync(tar.subarray(0, 1024)), /must hold meta\.json, state\.bin and SHA256SUMS/);
  // A flipped byte in the gzip body: the CRC or the deflate data says so.
  const badGzip = Buffer.from(archive);
  badGzip[Math.floor(badGzip.length / 2)]! ^= 0xff;
  await assert.rejects(readAll(badGzip), CorruptionError);
});

test("streamed snapshot archive: an error from the state consumer stops the read", async () => {
  const archive = await collect(snapshotArchiveStream(fakeState(4, 5000), { index: 1, nowMs: 0 }));
  await assert.rejects(
    readSnapshotArchiveStream(
      (async function* () {
        yield archive;
      })(),
      () => {
        throw new Error("disk full");
      },
    ),
    /disk full/,
  );
});

test("ByteQueue: hands chunks over in order, holds the producer at its bound, and passes an error on", async () => {
  const q = new ByteQueue(10);
  const got: number[] = [];
  const consumer = (async () => {
    for await (const c of q) got.push(c[0]!);
  })();
  for (let i = 0; i < 5; i++) await q.push(new Uint8Array([i, 0, 0, 0, 0, 0]));
  q.end();
  await consumer;
  assert.deepEqual(got, [0, 1, 2, 3, 4]);
  const failing = new ByteQueue();
  failing.end(new Error("bad"));
  await assert.rejects((async () => {
    for await (const _ of failing) void _;
  })(), /bad/);
});

test("adaptive gzip: one valid gzip member, compressed where the data compresses, stored where it does not", async () => {
  const { randomBytes } = await import("node:crypto");
  const text = Buffer.from(JSON.stringify(Array.from({ length: 40_000 }, (_, i) => ({ id: i, name: `service-${i}`, tags: ["a", "b"] }))));
  const noise = randomBytes(3 * 1024 * 1024 + 17);
  const input = Buffer.concat([text, noise, text.subarray(0, 1000)]);
  const gz = await collect(gzipAdaptive((async function* () {
    yield* rechunk(input, 300_000);
  })()));
  assert.ok(gunzipSync(gz).equals(input), "gunzip reads it back");
  assert.ok(gz.length < noise.length + text.length / 2, "the JSON part was compressed");
  assert.ok(gz.length > noise.length, "the random part was stored");
  // Any gzip reader takes it (node's is zlib, as gzip(1) and Go's compress/gzip).
  const empty = await collect(gzipAdaptive((async function* () {})()));
  assert.equal(gunzipSync(empty).length, 0);
});
