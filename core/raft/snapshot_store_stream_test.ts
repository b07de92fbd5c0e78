// The streaming side of the file snapshot store: a sink written in chunks
// reads back what it holds, becomes a snapshot only at finish(), a cancelled one leaves nothing, and
// open() checks the newest one whole (size and CRC) before handing it out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CaptureSink, createLogger, nullLogger } from "../log/logger.ts";
import { FileSnapshotStore } from "./snapshot_store_file_node.ts";
import { MemorySnapshotStore } from "./snapshot_store_memory.ts";
import type { SnapshotMeta, SnapshotStore } from "./types.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "cairn-snap-stream-"));
  try {
    await fn(join(dir, "snapshots"));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const meta = (index: number, userRestore?: boolean): SnapshotMeta => ({
  index,
  term: 3,
  sizeBytes: 0,
  configuration: { servers: [{ id: "a", address: "a:8300", suffrage: "voter" }] },
  ...(userRestore ? { userRestore } : {}),
});

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 13 + seed) & 0xff;
  return b;
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c);
  return Buffer.concat(parts);
}

async function contract(store: SnapshotStore): Promise<void> {
  const data = bytes(3 * 1024 * 1024 + 7, 1);
  const sink = store.begin();
  for (let off = 0; off < data.length; off += 100_000) {
    const c = data.subarray(off, off + 100_000);
    // Every third write as parts end to end (an empty one among them), as a restore writes stored gzip blocks.
    if ((off / 100_000) % 3 === 1) await sink.write([c.subarray(0, 10), c.subarray(10, 10), c.subarray(10, 65_535), c.subarray(65_535)]);
    else await sink.write(c);
  }
  assert.equal(sink.written, data.length);
  assert.ok(Buffer.from(await sink.read(0, data.length + 10)).equals(data), "what was written reads back whole before finish");
  assert.equal(await store.open(), undefined, "nothing is visible before finish");
  const stored = await sink.finish(meta(10, true));
  assert.equal(stored.sizeBytes, data.length, "finish sets the size");
  const src = (await store.open())!;
  assert.equal(src.meta.index, 10);
  assert.equal(src.meta.userRestore, true, "the user-restore mark is kept");
  assert.ok((await collect(src.stream())).equals(data));
  assert.ok(Buffer.from(await src.read(1_000_000, 10)).equals(data.subarray(1_000_000, 1_000_010)));
  assert.equal((await src.read(data.length - 3, 10)).length, 3, "short at the end");
  await src.close();
  const dropped = store.begin();
  await dropped.write(bytes(10, 2));
  await dropped.cancel();
  assert.equal((await store.list()).length, 1, "a cancelled sink is no snapshot");
  const byIndex = await store.open({ index: 10, term: 3 });
  assert.equal(byIndex?.meta.index, 10);
  await byIndex?.close();
  assert.equal(await store.open({ index: 11, term: 3 }), undefined);
}

test("snapshot stores: a streamed snapshot, whole only once finished (memory)", () => contract(new MemorySnapshotStore()));

test("snapshot stores: a streamed snapshot, whole only once finished (file), no temp files left", () =>
  withDir(async (dir) => {
    const s = await FileSnapshotStore.open({ dir, logger: nullLogger() });
    await contract(s);
    assert.deepEqual((await readdir(dir)).filter((n) => n.endsWith(".tmp")), []);
    // Reopened from disk, the mark and the bytes are still there.
    const again = await FileSnapshotStore.open({ dir, logger: nullLogger() });
    const src = (await again.open())!;
    assert.equal(src.meta.userRestore, true);
    assert.equal((await collect(src.stream())).length, 3 * 1024 * 1024 + 7);
    await src.close();
  }));

test("file snapshot store: open() skips a newest snapshot whose bytes changed, with a warning, and falls back", () =>
  withDir(async (dir) => {
    const capture = new CaptureSink();
    const s = await FileSnapshotStore.open({ dir, logger: createLogger({ sink: capture, level: "debug" }) });
    for (const index of [5, 6]) {
      const sink = s.begin();
      await sink.write(bytes(5000, index));
      await sink.finish(meta(index));
    }
    const newest = (await readdir(dir)).filter((n) => n.startsWith("00000000000000000006") && n.endsWith(".snap"))[0]!;
    const raw = await readFile(join(dir, newest));
    raw[2500]! ^= 0x01;
    await writeFile(join(dir, newest), raw);
    const src = (await s.open())!;
    assert.equal(src.meta.index, 5, "the older, intact one");
    await src.close();
    assert.ok(capture.records.some((r) => r.message === "skipping damaged Raft snapshot" && /CRC mismatch/.test(String(r.fields.error))), "warned");
  }));

test("snapshot stores: a sink flushed (in the background too) still finishes into the same snapshot, and is closed after finish", async () => {
  await withDir(async (dir) => {
    const stores: SnapshotStore[] = [await FileSnapshotStore.open({ dir, logger: nullLogger() }), new MemorySnapshotStore()];
    for (const store of stores) {
      // 80 MiB in 4 MiB writes: the background flush (every 32 MiB) runs twice.
      const sink = store.begin({ backgroundFlush: true });
      const want: Uint8Array[] = [];
      for (let i = 0; i < 20; i++) {
        const c = bytes(4 << 20, i);
        want.push(c);
        await sink.write(c);
      }
      await sink.flush();
      await sink.write(bytes(1000, 99));
      want.push(bytes(1000, 99));
      const m = await sink.finish(meta(7, true));
      assert.equal(m.sizeBytes, 80 * 2 ** 20 + 1000);
      await assert.rejects(sink.flush());
      const src = await store.open({ index: 7, term: 3 });
      assert.ok(src);
      assert.ok((await collect(src.stream())).equals(Buffer.concat(want)));
      await src.close();
    }
  });
});

test("file snapshot store: a sink begun with keepRecent gives the last MiB written as views, and nothing older or unwritten", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cairn-snap-recent-"));
  try {
    const store = await FileSnapshotStore.open({ dir, logger: nullLogger() });
    const data = bytes(40 * 1024 * 1024 + 5, 3);
    const sink = store.begin({ keepRecent: true });
    const plain = store.begin();
    for (let off = 0; off < data.length; off += 1024 * 1024) {
      const c = data.subarray(off, off + 1024 * 1024);
      await sink.write([c.subarray(0, 65_536), c.subarray(65_536)]);
      await plain.write(c);
    }
    const end = data.length;
    const at = (views: Uint8Array[] | undefined) => (views === undefined ? undefined : Buffer.concat(views));
    assert.ok(at(sink.recent!(end - 5_000_000, 4_000_000))?.equals(data.subarray(end - 5_000_000, end - 1_000_000)), "a range across writes and parts");
    assert.ok(at(sink.recent!(end - 10, 10))?.equals(data.subarray(end - 10)));
    assert.equal(sink.recent!(0, 10), undefined, "the first bytes are long gone from memory");
    assert.equal(sink.recent!(end - 10, 11), undefined, "past what was written");
    assert.equal(plain.recent?.(end - 10, 10), undefined, "without keepRecent, nothing");
    await sink.cancel();
    await plain.cancel();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
