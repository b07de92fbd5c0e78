// Durable Raft log in segment files (`raft/` in the data dir).
//
// A segment is named by the index of its first entry, 20 digits:
// `00000000000000000001.log`. It is a sequence of records
//
//   length u32 BE | crc32(payload) u32 BE | payload (msgpack {index, term, type, data})
//
// and is rolled once it reaches `segmentSizeBytes` (64 MiB). Only the last
// segment is written to. Every append is durable before it resolves (the
// segment is opened O_DSYNC where the platform has it, so the write itself
// waits for the disk: one thread-pool round trip, not write then fdatasync); appends
// that arrive while an fsync runs are written together and share the next
// fsync (group commit). On open every segment is scanned: a short or
// CRC-failing record at the very end of the last segment is a torn write and
// is cut (with a warning naming the file and offset); a bad record anywhere
// else stops the open with a CorruptionError.
//
// Deleting a prefix (compaction after a snapshot) removes whole segments below
// the cut; the logical first index is kept in `log-start` so entries left in a
// partly compacted segment stay hidden after a restart.

import { constants as fsConstants } from "node:fs";
import { syncDir, writeFileDurable } from "../durable_node.ts";
import { lazyFsPromises } from "../lazy_builtins_node.ts";
import type { FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { CorruptionError, errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { Decoder, Encoder } from "@msgpack/msgpack";
import { validateLogEntry } from "./codec.ts";
import { IndexQueue } from "./index_queue.ts";
import type { LogEntry, LogStore } from "./types.ts";

const mkdir = lazyFsPromises("mkdir");
const open = lazyFsPromises("open");
const readdir = lazyFsPromises("readdir");
const readFile = lazyFsPromises("readFile");
const rename = lazyFsPromises("rename");
const rm = lazyFsPromises("rm");
const unlink = lazyFsPromises("unlink");

// ---------------------------------------------------------------- crc32

// Slicing-by-8 tables for CRC-32 (IEEE, reflected 0xEDB88320). Int32Array and
// `| 0` keep every value a small integer in V8 (uint32 values above 2^31 would
// become heap doubles and run several times slower).
const crcTables: Int32Array[] = (() => {
  const tables: Int32Array[] = [];
  const t0 = new Int32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
    t0[i] = c | 0;
  }
  tables.push(t0);
  for (let t = 1; t < 8; t++) {
    const prev = tables[t - 1]!;
    const cur = new Int32Array(256);
    for (let i = 0; i < 256; i++) cur[i] = (prev[i]! >>> 8) ^ t0[prev[i]! & 0xff]!;
    tables.push(cur);
  }
  return tables;
})();

/** CRC-32 (IEEE) in JavaScript; the fallback when `node:zlib` has no `crc32` (Node < 20.15). */
export function crc32Js(bytes: Uint8Array, seed = 0): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = crcTables as [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array];
  let crc = ~seed | 0;
  let i = 0;
  const n = bytes.length;
  const end8 = n - (n % 8);
  while (i < end8) {
    const a = crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    crc =
      t7[a & 0xff]! ^
      t6[(a >>> 8) & 0xff]! ^
      t5[(a >>> 16) & 0xff]! ^
      t4[a >>> 24]! ^
      t3[bytes[i + 4]!]! ^
      t2[bytes[i + 5]!]! ^
      t1[bytes[i + 6]!]! ^
      t0[bytes[i + 7]!]!;
    i += 8;
  }
  while (i < n) crc = t0[(crc ^ bytes[i++]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}

let crc32UpdateImpl: ((crc: number, bytes: Uint8Array) => number) | undefined;

/**
 * CRC-32 (IEEE, as zlib and gzip) continued over more bytes:
 * crc32Update(crc32(a), b) === crc32(a ++ b); start from 0. Native
 * `zlib.crc32` (Node >= 20.15, Deno 2) when present. node:zlib is loaded on
 * the first call (see lazy_builtins_node.ts).
 */
export function crc32Update(crc: number, bytes: Uint8Array): number {
  if (!crc32UpdateImpl) {
    const native = (process.getBuiltinModule("node:zlib") as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;
    crc32UpdateImpl = typeof native === "function" ? (c, b) => native(b, c) >>> 0 : (c, b) => crc32Js(b, c);
  }
  return crc32UpdateImpl(crc, bytes);
}

/** CRC-32 of `bytes` (see crc32Update). */
export function crc32(bytes: Uint8Array): number {
  return crc32Update(0, bytes);
}

// ---------------------------------------------------------------- records

export const recordHeaderBytes = 8;

/** Frames a payload as `length | crc32 | payload`. */
export function encodeRecord(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(recordHeaderBytes + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length, false);
  view.setUint32(4, crc32(payload), false);
  out.set(payload, recordHeaderBytes);
  return out;
}

export type RecordResult =
  | { ok: true; payload: Uint8Array; end: number }
  /** `short`: the record runs past the end of the bytes; `bad`: zero/oversized length or CRC mismatch. */
  | { ok: false; kind: "short" | "bad"; why: string };

/** Reads the record at `offset` of `bytes`. */
export function readRecord(bytes: Uint8Array, offset: number, maxRecordBytes: number): RecordResult {
  if (offset + recordHeaderBytes > bytes.length) return { ok: false, kind: "short", why: "record header is cut short" };
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, recordHeaderBytes);
  const length = view.getUint32(0, false);
  const crc = view.getUint32(4, false);
  if (length === 0 || length > maxRecordBytes) return { ok: false, kind: "bad", why: `record length ${length} is out of range` };
  const end = offset + recordHeaderBytes + length;
  if (end > bytes.length) return { ok: false, kind: "short", why: `record of ${length} bytes is cut short` };
  const payload = bytes.subarray(offset + recordHeaderBytes, end);
  if (crc32(payload) !== crc) return { ok: false, kind: "bad", why: "record CRC mismatch" };
  return { ok: true, payload, end };
}

// One shared encoder/decoder: `encode()`/`decode()` build a new one per call,
// which costs more than the rest of an append. Same bytes as codec.ts
// `encodeLogEntry`: msgpack {index, term, type, data}.
const entryEncoder = new Encoder();
const entryDecoder = new Decoder();

/** The record for one log entry: header plus msgpack payload, in one buffer. */
export function encodeEntryRecord(e: LogEntry): Uint8Array {
  const payload = entryEncoder.encodeSharedRef({ index: e.index, term: e.term, type: e.type, data: e.data });
  const out = new Uint8Array(recordHeaderBytes + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length, false);
  view.setUint32(4, crc32(payload), false);
  out.set(payload, recordHeaderBytes);
  return out;
}

/** Decodes a record payload; undefined when it is not a valid log entry. */
export function decodeEntryPayload(payload: Uint8Array): LogEntry | undefined {
  try {
    return validateLogEntry(entryDecoder.decode(payload));
  } catch {
    return undefined;
  }
}

function isAllZero(bytes: Uint8Array, from: number): boolean {
  for (let i = from; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

// ---------------------------------------------------------------- fs helpers

function isErrno(err: unknown, ...codes: string[]): boolean {
  return typeof err === "object" && err !== null && codes.includes((err as { code?: string }).code ?? "");
}

// ---------------------------------------------------------------- store

const segmentNamePattern = /^(\d{20})\.log$/;
const startFileName = "log-start";

export function segmentName(firstIndex: number): string {
  return `${String(firstIndex).padStart(20, "0")}.log`;
}

interface Segment {
  firstIndex: number;
  name: string;
  path: string;
  /** Byte offset of the record of entry firstIndex + i. */
  offsets: number[];
  /** Bytes of valid records (the write position). */
  sizeBytes: number;
  handle?: FileHandle;
  opening?: Promise<FileHandle>;
}

function segmentLast(s: Segment): number {
  return s.firstIndex + s.offsets.length - 1;
}

export interface FileLogStoreOptions {
  /** The `raft/` directory; created if missing. */
  dir: string;
  logger: Logger;
  /** Roll to a new segment once the current one reaches this size. Default 64 MiB. */
  segmentSizeBytes?: number;
  /** Recently appended entries kept in memory for reads. Default 4096. */
  cacheEntries?: number;
  /**
   * ...and at most this many bytes of entry data (default 32 MiB): 4096 entries of
   * 512 KiB values would otherwise keep 2 GiB resident.
   */
  cacheBytes?: number;
  /** Largest record accepted on read. Default 256 MiB. */
  maxRecordBytes?: number;
  /**
   * Open segments with O_DSYNC, so a write returns once its data is on disk
   * (false: write, then fdatasync). Default: true where node:fs has O_DSYNC.
   */
  dsync?: boolean;
  /**
   * Copy appended entries (default true). false keeps the caller's entries,
   * which must then never change: RaftCore's never do (its own log holds the
   * same objects), and a copy per entry per write is garbage that lives just
   * long enough to be promoted out of the young generation.
   */
  copyEntries?: boolean;
}

const O_DSYNC: number | undefined = (fsConstants as { O_DSYNC?: number }).O_DSYNC;

export interface FileLogStoreStats {
  /** Durable segment writes: O_DSYNC writes or fdatasync calls (group commit: far fewer than appends). */
  syncs: number;
  appends: number;
  /** Write batches (each one fsync). */
  batches: number;
  segmentsCreated: number;
  segmentsDeleted: number;
  cacheHits: number;
  cacheMisses: number;
}

type Op =
  | { kind: "append"; entries: LogEntry[]; resolve: () => void; reject: (err: unknown) => void }
  | { kind: "delete"; min: number; max: number; resolve: () => void; reject: (err: unknown) => void };

function copyEntry(e: LogEntry): LogEntry {
  return { index: e.index, term: e.term, type: e.type, data: e.data.slice() };
}

export class FileLogStore implements LogStore {
  readonly dir: string;
  readonly stats: FileLogStoreStats = {
    syncs: 0,
    appends: 0,
    batches: 0,
    segmentsCreated: 0,
    segmentsDeleted: 0,
    cacheHits: 0,
    cacheMisses: 0,
  };
  readonly #log: Logger;
  readonly #segmentSizeBytes: number;
  readonly #cacheEntries: number;
  readonly #cacheBytesMax: number;
  /** Bytes of entry data in #cache. */
  #cacheBytes = 0;
  readonly #maxRecordBytes: number;
  /** Extra open flag for segments: O_DSYNC, or 0 (then writes are followed by fdatasync). */
  readonly #dsyncFlag: number;
  readonly #copyEntries: boolean;
  #segments: Segment[] = [];
  /** Entries below this index are logically deleted (0: none). */
  #start = 0;
  /** Recent entries by index (not a Map: see index_queue.ts). */
  #cache = new IndexQueue<LogEntry>();
  /** Lowest index whose bytes are not yet written (Infinity: all written); the cache keeps these. */
  #unwrittenFrom = Infinity;
  /** Reads in progress; truncation and deletion wait for them (and block new ones). */
  #readers = 0;
  #readersIdle: (() => void) | undefined;
  #exclusive: Promise<void> | undefined;
  #queue: Op[] = [];
  #running = false;
  #closed = false;
  /** Set when a write failed: memory and disk may disagree, so every later write fails too. */
  #failed: unknown;
  #idle: Promise<void> = Promise.resolve();
  #idleResolve: (() => void) | undefined;

  private constructor(options: FileLogStoreOptions) {
    this.dir = options.dir;
    this.#log = options.logger;
    this.#segmentSizeBytes = options.segmentSizeBytes ?? 64 * 1024 * 1024;
    this.#cacheEntries = Math.max(1, options.cacheEntries ?? 4096);
    this.#cacheBytesMax = Math.max(0, options.cacheBytes ?? 32 * 1024 * 1024);
    this.#maxRecordBytes = options.maxRecordBytes ?? 256 * 1024 * 1024;
    this.#dsyncFlag = options.dsync !== false && O_DSYNC !== undefined ? O_DSYNC : 0;
    this.#copyEntries = options.copyEntries ?? true;
  }

  /** Opens (or creates) the log in `options.dir`, cutting a torn tail. Rejects with CorruptionError on damage elsewhere. */
  static async open(options: FileLogStoreOptions): Promise<FileLogStore> {
    const store = new FileLogStore(options);
    await store.#load();
    return store;
  }

  // ------------------------------------------------------------ reads

  firstIndex(): Promise<number> {
    return Promise.resolve(this.#first());
  }

  lastIndex(): Promise<number> {
    return Promise.resolve(this.#last());
  }

  async getEntries(lo: number, hi: number): Promise<LogEntry[]> {
    // Truncation and deletion change bytes under existing offsets: never overlap them.
    while (this.#exclusive) await this.#exclusive;
    this.#readers++;
    try {
      return await this.#read(lo, hi);
    } finally {
      this.#readers--;
      if (this.#readers === 0) this.#readersIdle?.();
    }
  }

  /** Runs `fn` with no read in progress. Only the writer loop calls this, so never nested. */
  async #exclusively<T>(fn: () => Promise<T>): Promise<T> {
    let release!: () => void;
    this.#exclusive = new Promise<void>((r) => (release = r));
    try {
      if (this.#readers > 0) await new Promise<void>((r) => (this.#readersIdle = r));
      this.#readersIdle = undefined;
      return await fn();
    } finally {
      this.#exclusive = undefined;
      release();
    }
  }

  async #read(lo: number, hi: number): Promise<LogEntry[]> {
    const first = this.#first();
    const last = this.#last();
    if (first === 0) return [];
    const from = Math.max(lo, first);
    const to = Math.min(hi, last + 1);
    const out: LogEntry[] = [];
    let i = from;
    while (i < to) {
      const cached = this.#cache.get(i);
      if (cached) {
        this.stats.cacheHits++;
        out.push(copyEntry(cached));
        i++;
        continue;
      }
      // Read the run of uncached entries in this segment with one read.
      const seg = this.#segmentOf(i);
      if (!seg) break;
      let j = i + 1;
      const segEnd = Math.min(to, segmentLast(seg) + 1);
      while (j < segEnd && !this.#cache.has(j)) j++;
      this.stats.cacheMisses += j - i;
      const entries = await this.#readRun(seg, i, j);
      for (const e of entries) out.push(e);
      i = j;
    }
    return out;
  }

  /** Reads entries [lo, hi) from one segment's file. */
  async #readRun(seg: Segment, lo: number, hi: number): Promise<LogEntry[]> {
    const startOff = seg.offsets[lo - seg.firstIndex]!;
    const endOff = hi - seg.firstIndex < seg.offsets.length ? seg.offsets[hi - seg.firstIndex]! : seg.sizeBytes;
    const buf = new Uint8Array(endOff - startOff);
    const h = await this.#handle(seg);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await h.read(buf, got, buf.length - got, startOff + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    const out: LogEntry[] = [];
    let off = 0;
    for (let index = lo; index < hi; index++) {
      const r = readRecord(buf.subarray(0, got), off, this.#maxRecordBytes);
      const entry = r.ok ? decodeEntryPayload(r.payload) : undefined;
      if (!r.ok || !entry || entry.index !== index) {
        const why = !r.ok ? r.why : !entry ? "record is not a log entry" : `record holds index ${entry.index}, expected ${index}`;
        throw new CorruptionError(`Corrupt Raft log record in "${seg.path}" at offset ${startOff + off}: ${why}`, {
          file: seg.path,
          offset: startOff + off,
        });
      }
      out.push(entry);
      off = r.end;
    }
    return out;
  }

  #segmentOf(index: number): Segment | undefined {
    const segs = this.#segments;
    let lo = 0;
    let hi = segs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = segs[mid]!;
      if (index < s.firstIndex) hi = mid - 1;
      else if (index > segmentLast(s)) lo = mid + 1;
      else return s;
    }
    return undefined;
  }

  #physicalFirst(): number {
    for (const s of this.#segments) if (s.offsets.length > 0) return s.firstIndex;
    return 0;
  }

  #physicalLast(): number {
    for (let k = this.#segments.length - 1; k >= 0; k--) {
      const s = this.#segments[k]!;
      if (s.offsets.length > 0) return segmentLast(s);
    }
    return 0;
  }

  #first(): number {
    const last = this.#physicalLast();
    if (last === 0) return 0;
    const first = Math.max(this.#start, this.#physicalFirst());
    return first > last ? 0 : first;
  }

  #last(): number {
    return this.#first() === 0 ? 0 : this.#physicalLast();
  }

  // ------------------------------------------------------------ writes

  append(entries: LogEntry[]): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("Log store is closed"));
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    for (let k = 1; k < entries.length; k++) {
      if (entries[k]!.index !== entries[k - 1]!.index + 1) {
        return Promise.reject(new RangeError(`Entries to append are not contiguous at index ${entries[k]!.index}`));
      }
    }
    for (const e of entries) {
      if (!validateLogEntry(e)) return Promise.reject(new TypeError(`Not a valid log entry at index ${String(e?.index)}`));
    }
    const copies = this.#copyEntries ? entries.map(copyEntry) : entries.slice();
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ kind: "append", entries: copies, resolve, reject });
      this.#kick();
    });
  }

  deleteRange(min: number, max: number): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("Log store is closed"));
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ kind: "delete", min, max, resolve, reject });
      this.#kick();
    });
  }

  /** Drops every entry with index >= fromIndex, durably (`deleteRange(fromIndex, ∞)`). */
  truncateSuffix(fromIndex: number): Promise<void> {
    return this.deleteRange(fromIndex, Number.MAX_SAFE_INTEGER);
  }

  /** Drops every entry with index <= upTo, removing whole segments below it (`deleteRange(0, upTo)`). */
  compact(upTo: number): Promise<void> {
    return this.deleteRange(0, upTo);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#idle;
    for (const s of this.#segments) await this.#closeHandle(s);
  }

  #kick(): void {
    if (this.#running) return;
    this.#running = true;
    this.#idle = new Promise((r) => (this.#idleResolve = r));
    void this.#run();
  }

  async #run(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const head = this.#queue[0]!;
        if (this.#failed !== undefined) {
          this.#queue.shift();
          head.reject(this.#failed);
          continue;
        }
        if (head.kind === "delete") {
          this.#queue.shift();
          try {
            await this.#exclusively(() => this.#deleteRange(head.min, head.max));
            head.resolve();
          } catch (err) {
            if (!(err instanceof RangeError)) this.#fail(err);
            head.reject(err);
          }
          continue;
        }
        // Group commit: every append queued right now shares one write + fsync.
        const batch: (Op & { kind: "append" })[] = [];
        while (this.#queue.length > 0 && this.#queue[0]!.kind === "append") batch.push(this.#queue.shift() as Op & { kind: "append" });
        await this.#writeBatch(batch);
      }
    } finally {
      this.#running = false;
      this.#idleResolve?.();
    }
  }

  async #writeBatch(batch: (Op & { kind: "append" })[]): Promise<void> {
    const accepted: (Op & { kind: "append" })[] = [];
    const refused = new Set<Op>();
    /** Pending bytes per segment, written before the sync. */
    const pending = new Map<Segment, { at: number; chunks: Uint8Array[] }>();
    const toSync = new Set<Segment>();
    let dirty = false; // a file was created or removed: fsync the directory
    try {
      for (const op of batch) {
        this.stats.appends++;
        if (op.entries.length === 0) {
          accepted.push(op);
          continue;
        }
        const start = op.entries[0]!.index;
        const first = this.#first();
        const last = this.#last();
        if (first !== 0 && start > last + 1) {
          refused.add(op);
          op.reject(new RangeError(`Cannot append at index ${start}: log ends at ${last}`));
          continue;
        }
        if (first === 0 || start <= first) {
          // Empty log (any start is fine) or everything is overwritten: drop all files.
          if (this.#segments.length > 0) {
            // Make the removal durable before new files appear, so a crash
            // cannot bring old segments back beside new ones.
            await this.#flushPending(pending);
            await this.#exclusively(() => this.#removeSegments(this.#segments.length));
            await syncDir(this.dir);
          }
          if (this.#start !== 0) {
            await writeFileDurable(join(this.dir, startFileName), "0");
            this.#start = 0;
          }
        } else if (start <= last) {
          // Make the cut durable before writing over it: otherwise a crash
          // could leave new records followed by misaligned old ones, which
          // reads as corruption rather than a torn tail.
          await this.#flushPending(pending);
          const removed = await this.#exclusively(() => this.#truncateFrom(start));
          const active = this.#segments.at(-1);
          if (active) await this.#sync(active);
          if (removed) await syncDir(this.dir);
        }
        for (const e of op.entries) {
          const record = encodeEntryRecord(e);
          let active = this.#segments.at(-1);
          if (!active || (active.sizeBytes > 0 && active.sizeBytes + record.length > this.#segmentSizeBytes)) {
            if (active) {
              // Seal the full segment durably before starting the next, so a
              // crash can only ever leave a torn tail in the last segment.
              await this.#flushPending(pending);
              if (this.#dsyncFlag === 0) await this.#sync(active);
              toSync.delete(active);
            }
            active = await this.#createSegment(e.index);
            dirty = true;
          }
          let p = pending.get(active);
          if (!p) {
            p = { at: active.sizeBytes, chunks: [] };
            pending.set(active, p);
          }
          p.chunks.push(record);
          active.offsets.push(active.sizeBytes);
          active.sizeBytes += record.length;
          toSync.add(active);
          this.#remember(e);
        }
        accepted.push(op);
      }
      await this.#flushPending(pending);
      if (this.#dsyncFlag === 0) for (const s of toSync) if (this.#segments.includes(s)) await this.#sync(s);
      if (dirty) await syncDir(this.dir);
      this.stats.batches++;
    } catch (err) {
      this.#fail(err);
      for (const op of batch) if (!refused.has(op)) op.reject(err);
      return;
    } finally {
      this.#unwrittenFrom = Infinity;
      this.#trimCache();
    }
    for (const op of accepted) op.resolve();
  }

  #fail(err: unknown): void {
    if (this.#failed !== undefined) return;
    this.#failed = err;
    this.#log.error("Raft log write failed; the log store refuses further writes until restarted", {
      dir: this.dir,
      error: errorMessage(err),
    });
  }

  async #flushPending(pending: Map<Segment, { at: number; chunks: Uint8Array[] }>): Promise<void> {
    for (const [seg, p] of pending) {
      let total = 0;
      for (const c of p.chunks) total += c.length;
      const buf = new Uint8Array(total);
      let at = 0;
      for (const c of p.chunks) {
        buf.set(c, at);
        at += c.length;
      }
      const h = await this.#handle(seg);
      let written = 0;
      while (written < buf.length) {
        const { bytesWritten } = await h.write(buf, written, buf.length - written, p.at + written);
        written += bytesWritten;
      }
      if (this.#dsyncFlag !== 0) this.stats.syncs++;
    }
    pending.clear();
    this.#unwrittenFrom = Infinity;
  }

  async #sync(seg: Segment): Promise<void> {
    const h = await this.#handle(seg);
    await h.datasync();
    this.stats.syncs++;
  }

  /** Drops entries >= index (index within the log). Returns true when files were removed. */
  async #truncateFrom(index: number): Promise<boolean> {
    this.#cache.deleteFrom(index);
    this.#recountCache();
    let removed = false;
    // Remove later segments newest first, so a crash leaves a contiguous log.
    while (this.#segments.length > 0 && this.#segments.at(-1)!.firstIndex > index) {
      await this.#removeSegments(1, true);
      removed = true;
    }
    const seg = this.#segments.at(-1);
    if (seg && index <= segmentLast(seg)) {
      const keep = index - seg.firstIndex;
      const size = seg.offsets[keep]!;
      seg.offsets.length = keep;
      seg.sizeBytes = size;
      const h = await this.#handle(seg);
      await h.truncate(size);
    }
    return removed;
  }

  async #deleteRange(min: number, max: number): Promise<void> {
    const first = this.#first();
    const last = this.#last();
    if (first === 0 || max < min || max < first || min > last) return;
    if (min <= first && max >= last) {
      // Everything goes (e.g. before installing a snapshot).
      this.#cache.clear();
      this.#cacheBytes = 0;
      await this.#removeSegments(this.#segments.length);
      await syncDir(this.dir);
      return;
    }
    if (min <= first) {
      // Compaction: hide entries <= max, then remove whole segments below the cut.
      await writeFileDurable(join(this.dir, startFileName), String(max + 1));
      this.#start = max + 1;
      this.#cache.deleteUpTo(max);
      this.#recountCache();
      let n = 0;
      while (n < this.#segments.length - 1 && segmentLast(this.#segments[n]!) <= max) n++;
      if (n > 0) {
        await this.#removeSegments(n);
        await syncDir(this.dir);
      }
      return;
    }
    if (max >= last) {
      await this.#truncateFrom(min);
      const active = this.#segments.at(-1);
      if (active) await this.#sync(active);
      await syncDir(this.dir);
      return;
    }
    throw new RangeError(`Cannot delete entries ${min}..${max} from the middle of the log (${first}..${last})`);
  }

  /** Removes `n` segments from the front (or from the back with fromEnd). */
  async #removeSegments(n: number, fromEnd = false): Promise<void> {
    for (let k = 0; k < n; k++) {
      const seg = fromEnd ? this.#segments.pop() : this.#segments.shift();
      if (!seg) return;
      await this.#closeHandle(seg);
      await unlink(seg.path).catch((err: unknown) => {
        if (!isErrno(err, "ENOENT")) throw err;
      });
      this.stats.segmentsDeleted++;
    }
  }

  async #createSegment(firstIndex: number): Promise<Segment> {
    const name = segmentName(firstIndex);
    const path = join(this.dir, name);
    const handle = await open(path, fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_TRUNC | this.#dsyncFlag);
    const seg: Segment = { firstIndex, name, path, offsets: [], sizeBytes: 0, handle };
    this.#segments.push(seg);
    this.stats.segmentsCreated++;
    return seg;
  }

  #handle(seg: Segment): Promise<FileHandle> {
    if (seg.handle) return Promise.resolve(seg.handle);
    if (!seg.opening) {
      seg.opening = open(seg.path, fsConstants.O_RDWR | this.#dsyncFlag).then((h) => {
        seg.handle = h;
        seg.opening = undefined;
        return h;
      });
      seg.opening.catch(() => (seg.opening = undefined));
    }
    return seg.opening;
  }

  async #closeHandle(seg: Segment): Promise<void> {
    const h = seg.handle ?? (seg.opening ? await seg.opening.catch(() => undefined) : undefined);
    seg.handle = undefined;
    seg.opening = undefined;
    await h?.close().catch(() => {});
  }

  #remember(e: LogEntry): void {
    const old = this.#cache.get(e.index);
    if (old) this.#cacheBytes -= old.data.length;
    this.#cache.set(e.index, e);
    this.#cacheBytes += e.data.length;
    if (e.index < this.#unwrittenFrom) this.#unwrittenFrom = e.index;
  }

  #trimCache(): void {
    // Oldest first; entries not yet written stay (reads during the write need them).
    while ((this.#cache.size > this.#cacheEntries || this.#cacheBytes > this.#cacheBytesMax) && this.#cache.size > 0 && this.#cache.firstKey()! < this.#unwrittenFrom) {
      this.#cacheBytes -= this.#cache.shift()!.data.length;
    }
  }

  /** After a bulk removal from the cache (truncation, compaction): count its bytes again. */
  #recountCache(): void {
    let n = 0;
    for (const e of this.#cache.values()) n += e.data.length;
    this.#cacheBytes = n;
  }

  // ------------------------------------------------------------ open

  async #load(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const names = await readdir(this.dir);
    for (const n of names) {
      if (n.endsWith(".tmp")) await rm(join(this.dir, n), { force: true });
    }
    try {
      const text = new TextDecoder().decode(await readFile(join(this.dir, startFileName))).trim();
      const start = Number(text);
      if (!Number.isSafeInteger(start) || start < 0) {
        throw new CorruptionError(`Bad Raft log start in "${join(this.dir, startFileName)}": ${JSON.stringify(text)}`, {
          file: join(this.dir, startFileName),
          offset: 0,
        });
      }
      this.#start = start;
    } catch (err) {
      if (!isErrno(err, "ENOENT")) throw err;
    }
    const segNames = names
      .map((n) => segmentNamePattern.exec(n))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ name: m[0], firstIndex: Number(m[1]) }))
      .sort((a, b) => a.firstIndex - b.firstIndex);

    for (let k = 0; k < segNames.length; k++) {
      const { name, firstIndex } = segNames[k]!;
      const isLast = k === segNames.length - 1;
      const path = join(this.dir, name);
      const seg = await this.#scanSegment(path, name, firstIndex, isLast);
      const prev = this.#segments.at(-1);
      if (prev && seg.firstIndex !== segmentLast(prev) + 1) {
        throw new CorruptionError(
          `Raft log segment "${path}" starts at index ${seg.firstIndex} but "${prev.path}" ends at ${segmentLast(prev)}`,
          { file: path, offset: 0 },
        );
      }
      this.#segments.push(seg);
    }
    // A start past the end means everything was deleted: drop the files now.
    if (this.#segments.length > 0 && this.#first() === 0) await this.#removeSegments(this.#segments.length);
    this.#log.debug("Raft log opened", { dir: this.dir, segments: this.#segments.length, first: this.#first(), last: this.#last() });
  }

  /** True when a valid record for an index >= `index` starts anywhere at or after `from`. */
  #hasRecordAfter(bytes: Uint8Array, from: number, index: number): boolean {
    for (let off = from; off + recordHeaderBytes < bytes.length; off++) {
      const r = readRecord(bytes, off, this.#maxRecordBytes);
      if (!r.ok) continue;
      const e = decodeEntryPayload(r.payload);
      if (e && e.index >= index) return true;
    }
    return false;
  }

  async #scanSegment(path: string, name: string, firstIndex: number, isLast: boolean): Promise<Segment> {
    const bytes = new Uint8Array(await readFile(path));
    const seg: Segment = { firstIndex, name, path, offsets: [], sizeBytes: 0 };
    let off = 0;
    while (off < bytes.length) {
      const r = readRecord(bytes, off, this.#maxRecordBytes);
      let why: string | undefined;
      if (!r.ok) why = r.why;
      else {
        const entry = decodeEntryPayload(r.payload);
        const want = firstIndex + seg.offsets.length;
        if (!entry) why = "record is not a log entry";
        else if (entry.index !== want) why = `record holds index ${entry.index}, expected ${want}`;
        else {
          seg.offsets.push(off);
          off = r.end;
          continue;
        }
      }
      // A write cut short by a crash leaves a short record, a bad last
      // record, or zeros (space the file system allocated but never filled),
      // and nothing valid after it. A damaged length field also looks short,
      // but intact records follow it: that is corruption, not a torn tail.
      const torn =
        isLast &&
        r.ok === false &&
        (isAllZero(bytes, off) ||
          ((r.kind === "short" || tailIsOneRecord(bytes, off)) && !this.#hasRecordAfter(bytes, off + 1, firstIndex + seg.offsets.length)));
      if (!torn) {
        throw new CorruptionError(`Corrupt Raft log record in "${path}" at offset ${off}: ${why}`, { file: path, offset: off });
      }
      this.#log.warn("cutting torn tail of Raft log", { file: path, offset: off, droppedBytes: bytes.length - off, reason: why });
      const h = await open(path, "r+");
      try {
        await h.truncate(off);
        await h.sync();
      } finally {
        await h.close();
      }
      break;
    }
    seg.sizeBytes = off;
    if (isLast) {
      // Warm the cache with the tail (copies: decoded data are views into the whole file).
      for (let k = Math.max(0, seg.offsets.length - this.#cacheEntries); k < seg.offsets.length; k++) {
        const r = readRecord(bytes, seg.offsets[k]!, this.#maxRecordBytes);
        const e = r.ok ? decodeEntryPayload(r.payload) : undefined;
        if (e) this.#remember({ ...e, data: e.data.slice() });
      }
      this.#unwrittenFrom = Infinity;
      this.#trimCache();
    }
    return seg;
  }
}

/** True when the record at `off` claims exactly the rest of the bytes (a last record with a bad CRC). */
function tailIsOneRecord(bytes: Uint8Array, off: number): boolean {
  if (off + recordHeaderBytes > bytes.length) return true;
  const length = new DataView(bytes.buffer, bytes.byteOffset + off, 4).getUint32(0, false);
  return off + recordHeaderBytes + length === bytes.length;
}

/** Opens the durable Raft log in `options.dir`. */
export function openFileLogStore(options: FileLogStoreOptions): Promise<FileLogStore> {
  return FileLogStore.open(options);
}
