import assert from "node:assert/strict";
import { test } from "node:test";
import { CorruptionError } from "../errors.ts";
import { readSnapshotArchive, writeSnapshotArchive } from "./snapshot_archive.ts";

const state = new TextEncoder().encode("state bytes ".repeat(100));

test("snapshot archive: round trip keeps the state and its meta", async () => {
  const archive = await writeSnapshotArchive(state, { index: 42, nowMs: 1_700_000_000_123 });
  assert.deepEqual([archive[0], archive[1]], [0x1f, 0x8b], "gzip");
  const r = await readSnapshotArchive(archive);
  assert.deepEqual(r.meta, { Version: 1, ID: "42-1700000000123", Index: 42, Size: state.length });
  assert.deepEqual(r.state, state);
});

test("snapshot archive: a changed, truncated or foreign file is refused with the reason", async () => {
  const archive = await writeSnapshotArchive(state, { index: 7, nowMs: 0 });
  const tar = new Uint8Array(await new Response(new Blob([archive as BlobPart]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());
  const regzip = async (t: Uint8Array) => new Uint8Array(await new Response(new Blob([t as BlobPart]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
  // One byte of state.bin changed (its data starts after two 512-byte blocks: meta header + meta data, then its header).
  const flipped = tar.slice();
  flipped[512 * 3 + 5]! ^= 0xff;
  await assert.rejects(readSnapshotArchive(await regzip(flipped)), (e: unknown) => e instanceof CorruptionError && /checksum mismatch for state\.bin/.test(e.message));
  await assert.rejects(readSnapshotArchive(archive.subarray(0, archive.length - 20)), CorruptionError);
  await assert.rejects(readSnapshotArchive(new TextEncoder().encode("not a snapshot")), /not valid gzip/);
  await assert.rejects(readSnapshotArchive(await regzip(tar.subarray(0, 512 * 2))), /must hold meta\.json, state\.bin and SHA256SUMS/);
  const badHeader = tar.slice();
  badHeader[0] = "x".charCodeAt(0);
  await assert.rejects(readSnapshotArchive(await regzip(badHeader)), /bad tar header checksum/);
});
