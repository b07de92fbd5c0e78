// checkSnapshotArchiveStream (the CLI save's check): the same verdicts as
// readSnapshotArchiveStream on our archives however they are cut, on other
// gzip writers' archives, and on damaged ones.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { test } from "node:test";
import { CorruptionError } from "../errors.ts";
import { memberHeaderBytes, readSnapshotArchiveStream, snapshotArchiveStream } from "./snapshot_archive_node.ts";
import { checkSnapshotArchiveStream } from "./snapshot_check_node.ts";

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c);
  return Buffer.concat(parts);
}

async function* cut(bytes: Uint8Array, sizes: number[]): AsyncGenerator<Uint8Array> {
  for (let off = 0, i = 0; off < bytes.length; i++) {
    const n = Math.min(sizes[i % sizes.length]!, bytes.length - off);
    yield bytes.subarray(off, off + n);
    off += n;
  }
}

// Random bytes (stored members) around JSON (deflated members): both kinds, ~3.3 MiB.
const text = Buffer.from(JSON.stringify(Array.from({ length: 30_000 }, (_, i) => ({ key: `app/${i}`, v: i % 7 }))));
const state = [randomBytes(1_500_000), text, randomBytes(1_200_001)];
const archive = await collect(snapshotArchiveStream(state, { index: 12, term: 2, nowMs: 1_700_000_000_000 }));

/** The member boundaries of one of our archives: [start, deflate length, stored?]. */
function members(gz: Uint8Array): { start: number; length: number; stored: boolean }[] {
  const out = [];
  for (let off = 0; off < gz.length;) {
    const length = new DataView(gz.buffer, gz.byteOffset + off + 16, 4).getUint32(0, true);
    out.push({ start: off, length, stored: ((gz[off + memberHeaderBytes]! >> 1) & 3) === 0 });
    off += memberHeaderBytes + length + 8;
  }
  return out;
}

test("check: our archive, cut any way, checks out as readSnapshotArchiveStream reads it", async () => {
  const ms = members(archive);
  assert.ok(ms.some((m) => m.stored) && ms.some((m) => !m.stored), "stored and deflated members");
  const want = await readSnapshotArchiveStream(cut(archive, [archive.length]), () => {});
  assert.equal(want.meta.Index, 12);
  for (const sizes of [[archive.length], [1, 7, 19, 513], [65_536 + 3], [1_000_000, 5], [memberHeaderBytes - 1, 4096]]) {
    const got = await checkSnapshotArchiveStream(cut(archive, sizes));
    assert.deepEqual(got, want, `cut in ${sizes.join(",")}`);
  }
});

test("check: other writers' gzip (one member, no length field), alone or after ours, goes through gunzip", async () => {
  const tar = gunzipSync(archive);
  const plain = gzipSync(tar, { level: 6 });
  const want = await readSnapshotArchiveStream(cut(plain, [plain.length]), () => {});
  assert.deepEqual(await checkSnapshotArchiveStream(cut(plain, [4096])), want);
  // Our first two members, then the rest as one ordinary member.
  const ms = members(archive);
  const split = ms[2]!.start;
  const firstTwo = gunzipSync(archive.subarray(0, split));
  const mixed = Buffer.concat([archive.subarray(0, split), gzipSync(tar.subarray(firstTwo.length))]);
  assert.deepEqual(await checkSnapshotArchiveStream(cut(mixed, [100_000])), want);
});

async function refused(bytes: Uint8Array, pattern: RegExp, what: string): Promise<void> {
  await assert.rejects(checkSnapshotArchiveStream(cut(bytes, [65_536])), (e: unknown) => e instanceof CorruptionError && pattern.test(e.message), `${what}: ${pattern}`);
  await assert.rejects(readSnapshotArchiveStream(cut(bytes, [65_536]), () => {}), CorruptionError, `${what}: readSnapshotArchiveStream refuses it too`);
}

test("check: a damaged archive is refused, wherever the damage is", async () => {
  const ms = members(archive);
  const stored = ms.find((m) => m.stored)!;
  const deflated = ms.find((m) => !m.stored)!;
  const flip = (at: number, bits = 0x10) => {
    const b = Buffer.from(archive);
    b[at]! ^= bits;
    return b;
  };
  await refused(flip(stored.start + memberHeaderBytes + 5000), /incorrect data check/, "a byte of stored data");
  // Inflated differently, the damage may show first as a bad tar, or at the CRC: refused either way.
  await refused(flip(deflated.start + memberHeaderBytes + 100), /not valid gzip|incorrect data check|tar|Snapshot archive/, "a byte of deflated data");
  await refused(flip(stored.start + memberHeaderBytes + stored.length + 2), /incorrect data check/, "the CRC in a trailer");
  await refused(flip(stored.start + memberHeaderBytes + 1), /not valid gzip/, "a stored block's LEN");
  // The length field is only a hint to us: gunzip ignores it, and so the check does when it is wrong.
  const want = await readSnapshotArchiveStream(cut(archive, [archive.length]), () => {});
  for (const bits of [0x01, 0x80]) assert.deepEqual(await checkSnapshotArchiveStream(cut(flip(stored.start + 16, bits), [65_536])), want);
  await refused(flip(0, 0xff), /not valid gzip/, "the magic");
  for (const at of [1, memberHeaderBytes - 1, memberHeaderBytes + 3, stored.start + 100_000, deflated.start + memberHeaderBytes + deflated.length + 4, archive.length - 1]) {
    await refused(archive.subarray(0, at), /truncated|not valid gzip/, `cut after ${at} bytes`);
  }
  await refused(Buffer.concat([archive, Buffer.from("garbage")]), /not valid gzip|after the end/, "bytes after the last member");
  await assert.rejects(checkSnapshotArchiveStream(cut(new Uint8Array(0), [1])), /Snapshot archive is empty/);
  // A well-formed archive whose state was changed before it was gzipped: only SHA256SUMS can tell.
  const tar = gunzipSync(archive);
  tar[4000]! ^= 1;
  await assert.rejects(checkSnapshotArchiveStream(cut(gzipSync(tar), [70_000])), /checksum mismatch for state\.bin/);
});
