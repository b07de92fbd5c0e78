import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CaptureSink, createLogger, nullLogger } from "../log/logger.ts";
import { FileSnapshotStore } from "./snapshot_store_file_node.ts";
import type { SnapshotMeta } from "./types.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "cairn-snap-"));
  try {
    await fn(join(dir, "snapshots"));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function meta(index: number, term = 1): SnapshotMeta {
  return { index, term, sizeBytes: 64, configuration: { servers: [{ id: "a", address: "a:8300", suffrage: "voter" }] } };
}

const data = (n: number) => new Uint8Array(64).fill(n);

test("file snapshot store: keeps two on disk, names sort by index", () =>
  withDir(async (dir) => {
    const s = await FileSnapshotStore.open({ dir, logger: nullLogger() });
    for (let i = 1; i <= 5; i++) await s.create(meta(i * 100), data(i));
    const files = (await readdir(dir)).sort();
    assert.equal(files.length, 4, files.join());
    assert.ok(files[0]!.startsWith("00000000000000000400-"));
    assert.ok(files.every((f) => /^\d{20}-\d{20}-\d{10}\.(meta|snap)$/.test(f)));
    // A second snapshot at the same index is kept apart and wins (newer).
    await s.create(meta(500), data(9));
    assert.deepEqual([...(await s.latest())!.data], [...data(9)]);
    assert.deepEqual((await s.list()).map((m) => m.index), [500, 500]);
    await s.close();
  }));

test("file snapshot store: a half-written snapshot is ignored and cleaned up", () =>
  withDir(async (dir) => {
    let s = await FileSnapshotStore.open({ dir, logger: nullLogger() });
    await s.create(meta(100), data(1));
    await s.close();
    // A crash mid-create: data written, metadata not; and a temp file.
    const half = "00000000000000000200-00000000000000000001-0000000009";
    await writeFile(join(dir, `${half}.snap`), data(2));
    await writeFile(join(dir, `${half}.meta.tmp`), new Uint8Array([1, 2]));
    const sink = new CaptureSink();
    s = await FileSnapshotStore.open({ dir, logger: createLogger({ sink, level: "debug" }) });
    assert.equal((await s.latest())?.meta.index, 100);
    assert.deepEqual((await s.list()).map((m) => m.index), [100]);
    assert.ok(!(await readdir(dir)).some((f) => f.startsWith(half)), "half-written files removed");
    assert.ok(sink.records.some((r) => r.message.includes("half-written")));
    // The sequence continues past the leftover's, so names never collide.
    await s.create(meta(300), data(3));
    assert.equal((await s.latest())?.meta.index, 300);
    await s.close();
  }));

test("file snapshot store: damaged data falls back to the older snapshot", () =>
  withDir(async (dir) => {
    const sink = new CaptureSink();
    const s = await FileSnapshotStore.open({ dir, logger: createLogger({ sink, level: "debug" }) });
    await s.create(meta(100), data(1));
    await s.create(meta(200), data(2));
    const newest = (await readdir(dir)).filter((f) => f.endsWith(".snap")).sort().at(-1)!;
    const bytes = new Uint8Array(await readFile(join(dir, newest)));
    bytes[10]! ^= 1;
    await writeFile(join(dir, newest), bytes);
    const latest = await s.latest();
    assert.equal(latest?.meta.index, 100);
    assert.deepEqual([...latest!.data], [...data(1)]);
    assert.ok(sink.records.some((r) => r.level === "warn" && r.message.includes("damaged")));
    await s.close();
  }));

test("file snapshot store: damaged metadata is ignored on open", () =>
  withDir(async (dir) => {
    let s = await FileSnapshotStore.open({ dir, logger: nullLogger() });
    await s.create(meta(100), data(1));
    await s.create(meta(200), data(2));
    await s.close();
    const newestMeta = (await readdir(dir)).filter((f) => f.endsWith(".meta")).sort().at(-1)!;
    await writeFile(join(dir, newestMeta), new Uint8Array([0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7]));
    s = await FileSnapshotStore.open({ dir, logger: nullLogger() });
    assert.equal((await s.latest())?.meta.index, 100);
    await s.close();
  }));

test("file snapshot store: onWrite is called at each create and at each sink write", () =>
  withDir(async (dir) => {
    let writes = 0;
    const s = await FileSnapshotStore.open({ dir, logger: nullLogger(), onWrite: () => void writes++ });
    await s.create(meta(100), data(1));
    assert.equal(writes, 1);
    const sink = s.begin();
    await sink.write(data(2));
    await sink.write([data(3), data(4)]);
    assert.equal(writes, 3);
    await sink.finish(meta(200));
    assert.equal(writes, 3, "finishing is not a write");
    await s.close();
  }));
