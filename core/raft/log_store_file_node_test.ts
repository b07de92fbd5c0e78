import { test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CorruptionError } from "../errors.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { CaptureSink, createLogger } from "../log/logger.ts";
import { encodeLogEntry } from "./codec.ts";
import { crc32, crc32Js, decodeEntryPayload, encodeEntryRecord, encodeRecord, FileLogStore, readRecord, segmentName } from "./log_store_file_node.ts";
import { logStoreContract } from "./store_contract_node.ts";
import type { LogEntry } from "./types.ts";

function entry(index: number, term = 1, size = 10): LogEntry {
  return { index, term, type: "normal", data: new Uint8Array(size).fill(index & 0xff) };
}

function range(lo: number, hi: number, term = 1, size = 10): LogEntry[] {
  const out: LogEntry[] = [];
  for (let i = lo; i < hi; i++) out.push(entry(i, term, size));
  return out;
}

async function withDir(fn: (dir: string, sink: CaptureSink) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "cairn-log-"));
  const sink = new CaptureSink();
  try {
    await fn(dir, sink);
  } catch (err) {
    if (sink.records.length) (err as Error).message += `\nlogs:\n${sink.text()}`;
    throw err;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function open(dir: string, sink: CaptureSink, segmentSizeBytes = 64 * 1024 * 1024, cacheEntries = 4096, dsync?: boolean) {
  return FileLogStore.open({ dir, logger: createLogger({ sink, level: "debug" }), segmentSizeBytes, cacheEntries, dsync });
}

/** Both ways of making a write durable: O_DSYNC segments (the default) and write + fdatasync. */
const durabilityModes = [{ dsync: true, name: "O_DSYNC" }, { dsync: false, name: "write + fdatasync" }];

async function segments(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith(".log")).sort();
}

test("crc32 matches the standard check value, native and JavaScript alike", () => {
  for (const f of [crc32, crc32Js]) {
    assert.equal(f(new TextEncoder().encode("123456789")), 0xcbf43926);
    assert.equal(f(new Uint8Array(0)), 0);
    assert.equal(f(new Uint8Array(32)), 0x190a55ad);
  }
  const long = new Uint8Array(1000).map((_, i) => (i * 31) & 0xff);
  for (let cut = 0; cut < 20; cut++) assert.equal(crc32Js(long.subarray(cut)), crc32(long.slice(cut)), `cut ${cut}`);
});

test("entry records hold codec.ts's encoding of the entry", () => {
  const e: LogEntry = { index: 42, term: 7, type: "config", data: new Uint8Array([9, 8, 7]) };
  const rec = encodeEntryRecord(e);
  assert.deepEqual(rec, encodeRecord(encodeLogEntry(e)));
  const r = readRecord(rec, 0, 1000);
  assert.ok(r.ok);
  assert.deepEqual(decodeEntryPayload(r.ok ? r.payload : new Uint8Array()), e);
  assert.equal(decodeEntryPayload(new Uint8Array([0xc1])), undefined);
});

test("records: round trip, short and bad", () => {
  const rec = encodeRecord(new Uint8Array([1, 2, 3]));
  const ok = readRecord(rec, 0, 100);
  assert.ok(ok.ok);
  assert.deepEqual([...(ok.ok ? ok.payload : [])], [1, 2, 3]);
  const short = readRecord(rec.subarray(0, rec.length - 1), 0, 100);
  assert.equal(short.ok ? "ok" : short.kind, "short");
  const flipped = rec.slice();
  flipped[9]! ^= 1;
  const bad = readRecord(flipped, 0, 100);
  assert.equal(bad.ok ? "ok" : bad.kind, "bad");
  assert.equal((() => { const r = readRecord(new Uint8Array(8), 0, 100); return r.ok ? "ok" : r.kind; })(), "bad");
});

for (const mode of durabilityModes) test(`file log (${mode.name}): segment files are named by first index and rolled at the size limit`, () =>
  withDir(async (dir, sink) => {
    const s = await open(dir, sink, 1024, 8, mode.dsync);
    for (let i = 1; i <= 100; i += 10) await s.append(range(i, i + 10, 1, 40));
    const names = await segments(dir);
    assert.ok(names.length >= 4, `expected several segments, got ${names.join()}`);
    assert.equal(names[0], segmentName(1));
    assert.equal(names[0], "00000000000000000001.log");
    for (const n of names) assert.ok((await stat(join(dir, n))).size <= 1024, `${n} over the limit`);
    // Reads across segment boundaries, mostly from disk (small cache).
    const got = await s.getEntries(1, 101);
    assert.deepEqual(got.map((e) => e.index), range(1, 101).map((e) => e.index));
    assert.ok(got.every((e) => e.data.length === 40 && e.data[0] === (e.index & 0xff)));
    assert.ok(s.stats.cacheMisses > 0);
    await s.close();
    const again = await open(dir, sink, 1024, 8, mode.dsync);
    assert.deepEqual((await again.getEntries(1, 101)).map((e) => e.index), range(1, 101).map((e) => e.index));
    await again.close();
  }));

for (const mode of durabilityModes) test(`file log (${mode.name}): group commit: many concurrent appends share few fsyncs`, () =>
  withDir(async (dir, sink) => {
    const s = await open(dir, sink, undefined, undefined, mode.dsync);
    const n = 200;
    const writes: Promise<void>[] = [];
    for (let i = 1; i <= n; i++) writes.push(s.append([entry(i)]));
    await Promise.all(writes);
    assert.equal(await s.lastIndex(), n);
    assert.ok(s.stats.syncs <= 5, `${n} appends used ${s.stats.syncs} fsyncs`);
    assert.equal(s.stats.appends, n);
    // Sequential appends each get their own fsync: every one is durable when it resolves.
    const before = s.stats.syncs;
    for (let i = n + 1; i <= n + 5; i++) await s.append([entry(i)]);
    assert.equal(s.stats.syncs - before, 5);
    await s.close();
  }));

test("file log: a record cut short at the end of the last segment is cut on open", () =>
  withDir(async (dir, sink) => {
    let s = await open(dir, sink);
    await s.append(range(1, 11));
    await s.close();
    const file = join(dir, segmentName(1));
    const size = (await stat(file)).size;
    await truncate(file, size - 5); // mid-record
    s = await open(dir, sink);
    assert.equal(await s.lastIndex(), 9);
    const warn = sink.records.find((r) => r.message.includes("torn tail"));
    assert.ok(warn, "warned");
    assert.equal(warn.fields.file, file);
    assert.equal(typeof warn.fields.offset, "number");
    assert.ok((await stat(file)).size < size - 5, "file was truncated at the record boundary");
    // Appending continues at the cut.
    await s.append([entry(10, 2)]);
    await s.close();
    s = await open(dir, sink);
    assert.equal(await s.lastIndex(), 10);
    assert.equal((await s.getEntries(10, 11))[0]!.term, 2);
    await s.close();
  }));

test("file log: a header cut short, a CRC-failing last record and a zero-filled tail are all torn tails", () =>
  withDir(async (dir, sink) => {
    let s = await open(dir, sink);
    await s.append(range(1, 6));
    await s.close();
    const file = join(dir, segmentName(1));
    await appendFile(file, new Uint8Array([0, 0, 0])); // 3 bytes of a header
    s = await open(dir, sink);
    assert.equal(await s.lastIndex(), 5);
    await s.close();

    const bytes = new Uint8Array(await readFile(file));
    bytes[bytes.length - 2]! ^= 0xff; // damage the last record's payload
    await writeFile(file, bytes);
    s = await open(dir, sink);
    assert.equal(await s.lastIndex(), 4);
    await s.close();

    await appendFile(file, new Uint8Array(4096)); // zeros the file system allocated
    s = await open(dir, sink);
    assert.equal(await s.lastIndex(), 4);
    await s.append([entry(5)]);
    assert.equal(await s.lastIndex(), 5);
    await s.close();
  }));

test("file log: a corrupt record in the middle stops the open with CorruptionError naming file and offset", () =>
  withDir(async (dir, sink) => {
    let s = await open(dir, sink);
    await s.append(range(1, 11));
    await s.close();
    const file = join(dir, segmentName(1));
    const bytes = new Uint8Array(await readFile(file));
    const recordSize = bytes.length / 10;
    bytes[3 * recordSize + 12]! ^= 0x01; // inside record 4's payload
    await writeFile(file, bytes);
    await assert.rejects(open(dir, sink), (err: unknown) => {
      assert.ok(err instanceof CorruptionError);
      assert.equal(err.file, file);
      assert.equal(err.offset, 3 * recordSize);
      assert.match(err.message, /offset \d+/);
      return true;
    });
    // The file is untouched: an operator can inspect it.
    assert.equal((await stat(file)).size, bytes.length);
  }));

test("file log: damage at the end of an earlier segment is corruption, not a torn tail", () =>
  withDir(async (dir, sink) => {
    let s = await open(dir, sink, 512);
    for (let i = 1; i <= 60; i += 10) await s.append(range(i, i + 10, 1, 30));
    await s.close();
    const names = await segments(dir);
    assert.ok(names.length >= 2);
    const file = join(dir, names[0]!);
    const size = (await stat(file)).size;
    await truncate(file, size - 3);
    await assert.rejects(open(dir, sink, 512), CorruptionError);
  }));

test("file log: compaction deletes whole segments so disk use shrinks", () =>
  withDir(async (dir, sink) => {
    let s = await open(dir, sink, 1024);
    for (let i = 1; i <= 200; i += 20) await s.append(range(i, i + 20, 1, 50));
    const before = await segments(dir);
    await s.deleteRange(1, 150);
    const after = await segments(dir);
    assert.ok(after.length < before.length, `${before.length} -> ${after.length}`);
    assert.ok(after.length >= 1);
    assert.equal(await s.firstIndex(), 151);
    assert.equal((await s.getEntries(140, 155)).map((e) => e.index).join(), "151,152,153,154");
    await s.close();
    s = await open(dir, sink, 1024);
    assert.equal(await s.firstIndex(), 151);
    assert.equal(await s.lastIndex(), 200);
    await s.close();
  }));

test("file log: truncation across segments removes later files and reopens cleanly", () =>
  withDir(async (dir, sink) => {
    let s = await open(dir, sink, 512, 2);
    for (let i = 1; i <= 100; i += 10) await s.append(range(i, i + 10, 1, 30));
    const before = await segments(dir);
    await s.append([entry(20, 2, 30), entry(21, 2, 30)]);
    const after = await segments(dir);
    assert.ok(after.length < before.length);
    assert.equal(await s.lastIndex(), 21);
    assert.deepEqual((await s.getEntries(18, 30)).map((e) => `${e.index}/${e.term}`), ["18/1", "19/1", "20/2", "21/2"]);
    await s.close();
    s = await open(dir, sink, 512, 2);
    assert.deepEqual((await s.getEntries(18, 30)).map((e) => `${e.index}/${e.term}`), ["18/1", "19/1", "20/2", "21/2"]);
    await s.close();
  }));

test("file log: reads racing truncation and compaction see the log before or after, never a mix", () =>
  withDir(async (dir, sink) => {
    const s = await open(dir, sink, 512, 1);
    const show = (es: LogEntry[]) => es.map((e) => `${e.index}/${e.term}`).join(" ");
    const expect = (lo: number, hi: number, last: number, newFrom: number) =>
      show(range(Math.max(lo, 1), Math.min(hi, last + 1)).map((e) => (e.index >= newFrom ? { ...e, term: 2 } : e)));
    for (let i = 1; i <= 100; i += 10) await s.append(range(i, i + 10, 1, 30));
    const ops = [s.getEntries(1, 101), s.getEntries(25, 45), s.append(range(30, 40, 2, 30)), s.getEntries(1, 101), s.getEntries(25, 45)];
    const [a, b, , c, d] = (await Promise.all(ops)) as LogEntry[][];
    const before = [expect(1, 101, 100, 1000), expect(25, 45, 100, 1000)];
    const after = [expect(1, 101, 39, 30), expect(25, 45, 39, 30)];
    assert.ok(show(a!) === before[0] || show(a!) === after[0], show(a!));
    assert.ok(show(b!) === before[1] || show(b!) === after[1], show(b!));
    assert.ok(show(c!) === before[0] || show(c!) === after[0], show(c!));
    assert.ok(show(d!) === before[1] || show(d!) === after[1], show(d!));
    assert.equal(show(await s.getEntries(1, 101)), after[0]);
    const [e] = (await Promise.all([s.getEntries(1, 40), s.deleteRange(1, 20)])) as LogEntry[][];
    assert.ok(show(e!) === after[0] || show(e!) === expect(21, 40, 39, 30), show(e!));
    assert.equal(show(await s.getEntries(1, 40)), expect(21, 40, 39, 30));
    await s.close();
  }));

test("file log: a crash at any byte of the last writes reopens to a prefix of the log", () =>
  withDir(async (dir, sink) => {
    const src = join(dir, "src");
    let s = await open(src, sink);
    for (let i = 1; i <= 12; i += 3) await s.append(range(i, i + 3, 1, 5 + i));
    await s.close();
    const file = join(src, segmentName(1));
    const full = new Uint8Array(await readFile(file));
    // Record boundaries, from the records themselves.
    const ends: number[] = [];
    for (let off = 0; off < full.length; ) {
      const r = readRecord(full, off, 1 << 20);
      assert.ok(r.ok);
      off = r.ok ? r.end : full.length;
      ends.push(off);
    }
    assert.equal(ends.length, 12);
    const work = join(dir, "work");
    for (let cut = ends[9]! - 3; cut <= full.length; cut++) {
      await rm(work, { recursive: true, force: true });
      await mkdir(work);
      await writeFile(join(work, segmentName(1)), full.subarray(0, cut));
      s = await open(work, sink);
      const complete = ends.filter((e) => e <= cut).length;
      assert.equal(await s.lastIndex(), complete, `cut at byte ${cut}`);
      assert.equal((await s.getEntries(1, 100)).length, complete);
      if (cut % 8 === 0) await s.append([entry(complete + 1, 9)]);
      await s.close();
    }
  }));

test("file log: a flipped byte before the last record is always CorruptionError, never a silent cut", () =>
  withDir(async (dir, sink) => {
    const src = join(dir, "src");
    const s = await open(src, sink);
    await s.append(range(1, 21, 1, 16));
    await s.close();
    const full = new Uint8Array(await readFile(join(src, segmentName(1))));
    const lastStart = full.length - full.length / 20;
    const work = join(dir, "work");
    for (const seed of seeds(40)) {
      const rng = new Rng(seed);
      const at = rng.int(lastStart);
      const bytes = full.slice();
      bytes[at]! ^= 1 << rng.int(8);
      await rm(work, { recursive: true, force: true });
      await mkdir(work);
      await writeFile(join(work, segmentName(1)), bytes);
      await assert.rejects(open(work, sink), CorruptionError, `seed ${seed}: byte ${at} flipped`);
    }
  }));

test("file log: truncateSuffix and compact are deleteRange from either end", () =>
  withDir(async (dir, sink) => {
    const s = await open(dir, sink, 512);
    await s.append(range(1, 51, 1, 20));
    await s.truncateSuffix(41);
    assert.equal(await s.lastIndex(), 40);
    await s.compact(10);
    assert.equal(await s.firstIndex(), 11);
    await s.truncateSuffix(1);
    assert.equal(await s.lastIndex(), 0);
    assert.deepEqual(await segments(dir), []);
    await s.close();
  }));

test("file log: entries that could not be read back are refused up front", () =>
  withDir(async (dir, sink) => {
    const s = await open(dir, sink);
    await assert.rejects(s.append([{ index: 0, term: 1, type: "normal", data: new Uint8Array(0) }]), TypeError);
    await assert.rejects(s.append([{ index: 1, term: 1, type: "bogus" as "normal", data: new Uint8Array(0) }]), TypeError);
    await assert.rejects(s.append([entry(1), entry(3)]), RangeError);
    assert.equal(await s.lastIndex(), 0);
    await s.close();
  }));

// The LogStore contract, in each durability mode and with and without copies of appended entries.
for (const mode of durabilityModes) {
  for (const copyEntries of [true, false]) {
    const dirs: string[] = [];
    process.on("exit", () => {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });
    const openAt = (dir: string) => FileLogStore.open({ dir, logger: createLogger({ sink: new CaptureSink(), level: "debug" }), dsync: mode.dsync, copyEntries });
    logStoreContract(`file log (${mode.name}, copyEntries ${copyEntries})`, {
      create: async () => {
        const dir = await mkdtemp(join(tmpdir(), "cairn-log-contract-"));
        dirs.push(dir);
        return openAt(dir);
      },
      reopen: async (s) => {
        await s.close();
        return openAt((s as FileLogStore).dir);
      },
    });
  }
}

test("file log: the read cache holds at most cacheBytes of entry data, and reads past it come from disk", () =>
  withDir(async (dir, sink) => {
    const s = await FileLogStore.open({ dir, logger: createLogger({ sink, level: "debug" }), cacheEntries: 4096, cacheBytes: 4096 });
    // 50 entries of 1 KiB: the entry cap alone would keep them all.
    for (let i = 1; i <= 50; i += 10) await s.append(range(i, i + 10, 1, 1024));
    const before = s.stats.cacheMisses;
    const got = await s.getEntries(1, 51);
    assert.deepEqual(got.map((e) => e.index), range(1, 51).map((e) => e.index));
    assert.ok(got.every((e) => e.data.length === 1024 && e.data[0] === (e.index & 0xff)));
    const misses = s.stats.cacheMisses - before;
    assert.ok(misses >= 45, `only about 4 KiB stay cached: ${misses} of 50 read from disk`);
    await s.close();
    // Reopened, the warmed tail obeys the same cap.
    const again = await FileLogStore.open({ dir, logger: createLogger({ sink, level: "debug" }), cacheEntries: 4096, cacheBytes: 4096 });
    const m0 = again.stats.cacheMisses;
    await again.getEntries(1, 51);
    assert.ok(again.stats.cacheMisses - m0 >= 45);
    await again.close();
  }));
