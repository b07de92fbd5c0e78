import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CorruptionError } from "../errors.ts";
import { nullLogger } from "../log/logger.ts";
import { FileStableStore, stableFileName } from "./stable_store_file_node.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "cairn-stable-"));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test("file stable store: replaced atomically, no temp file left behind", () =>
  withDir(async (dir) => {
    const s = await FileStableStore.open({ dir, logger: nullLogger() });
    for (let term = 1; term <= 5; term++) await s.save({ term, vote: `n${term}`, commit: term * 10 });
    assert.equal(s.saves, 5);
    assert.deepEqual(await readdir(dir), [stableFileName]);
    await s.close();
    const again = await FileStableStore.open({ dir, logger: nullLogger() });
    assert.deepEqual(await again.load(), { term: 5, vote: "n5", commit: 50 });
    await again.close();
  }));

test("file stable store: a leftover temp file from a crash is ignored", () =>
  withDir(async (dir) => {
    const s = await FileStableStore.open({ dir, logger: nullLogger() });
    await s.save({ term: 2, vote: "a", commit: 1 });
    await s.close();
    await writeFile(join(dir, `${stableFileName}.tmp`), new Uint8Array([1, 2, 3]));
    const again = await FileStableStore.open({ dir, logger: nullLogger() });
    assert.deepEqual(await again.load(), { term: 2, vote: "a", commit: 1 });
    assert.deepEqual(await readdir(dir), [stableFileName]);
    await again.close();
  }));

test("file stable store: a damaged file stops the open with CorruptionError", () =>
  withDir(async (dir) => {
    const s = await FileStableStore.open({ dir, logger: nullLogger() });
    await s.save({ term: 7, vote: "b", commit: 3 });
    await s.close();
    const path = join(dir, stableFileName);
    const bytes = new Uint8Array(await readFile(path));
    bytes[bytes.length - 1]! ^= 0x40;
    await writeFile(path, bytes);
    await assert.rejects(FileStableStore.open({ dir, logger: nullLogger() }), (e: unknown) => e instanceof CorruptionError && e.file === path);
  }));
