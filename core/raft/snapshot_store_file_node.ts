// Durable Raft snapshots in `raft/snapshots/`.
//
// A snapshot is two files named `<index>-<term>-<seq>` (20, 20 and 10 digits):
// `.snap` holds the Fsm state, `.meta` one record `length | crc32 | msgpack
// { meta, dataBytes, dataCrc }`. Each is written to a `.tmp` name, fsynced
// and renamed, data first, and the directory is fsynced: a snapshot exists
// once its `.meta` does. Leftover `.tmp` files and a `.snap` without `.meta`
// (a crash mid-write) are removed on open; a snapshot whose data fails its
// size or CRC check is skipped with a warning. The newest `retain` (2) are kept.

import { lazyFsPromises } from "../lazy_builtins_node.ts";
import { join } from "node:path";
import { decode, encode } from "@msgpack/msgpack";
import { byteLength, partsOf } from "../bytes.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { validateSnapshotMeta } from "./codec.ts";
import { syncDir, writeFileDurable } from "../durable_node.ts";
import { crc32, crc32Update, encodeRecord, readRecord } from "./log_store_file_node.ts";
import type { SnapshotMeta, SnapshotSink, SnapshotSource, SnapshotStore } from "./types.ts";

const mkdir = lazyFsPromises("mkdir");
const open = lazyFsPromises("open");
const readdir = lazyFsPromises("readdir");
const readFile = lazyFsPromises("readFile");
const rename = lazyFsPromises("rename");
const rm = lazyFsPromises("rm");

/** Bytes per read when a snapshot is streamed or checked. */
const readChunkBytes = 1024 * 1024;

/** With keepRecent, a sink keeps views of at least this many of the last bytes written. */
const keepRecentBytes = 16 * 1024 * 1024;

/** With backgroundFlush, a sink's written bytes are flushed to disk in the background every this many. */
const backgroundSyncBytes = 8 * 1024 * 1024;

const namePattern = /^(\d{20})-(\d{20})-(\d{10})\.(meta|snap)$/;

export interface FileSnapshotStoreOptions {
  /** The `raft/snapshots/` directory; created if missing. */
  dir: string;
  logger: Logger;
  /** Snapshots kept. Default 2. */
  retain?: number;
  /** Called at each write of a snapshot (a sink's, or create's): the agent tunes V8 for bulk work meanwhile (cli/agent_v8.ts). */
  onWrite?: () => void;
}

interface Entry {
  name: string;
  index: number;
  seq: number;
  meta: SnapshotMeta;
  dataBytes: number;
  dataCrc: number;
}

function newestFirst(a: Entry, b: Entry): number {
  return b.index - a.index || b.seq - a.seq;
}

export class FileSnapshotStore implements SnapshotStore {
  readonly dir: string;
  readonly #log: Logger;
  readonly #retain: number;
  readonly #onWrite: () => void;
  #entries: Entry[] = [];
  #seq = 0;
  #chain: Promise<void> = Promise.resolve();

  private constructor(options: FileSnapshotStoreOptions) {
    this.dir = options.dir;
    this.#log = options.logger;
    this.#retain = Math.max(1, options.retain ?? 2);
    this.#onWrite = options.onWrite ?? (() => {});
  }

  static async open(options: FileSnapshotStoreOptions): Promise<FileSnapshotStore> {
    const store = new FileSnapshotStore(options);
    await store.#scan();
    return store;
  }

  create(meta: SnapshotMeta, data: Uint8Array): Promise<void> {
    this.#onWrite();
    const copy = structuredClone(meta);
    const bytes = data.slice();
    const run = this.#chain.then(() => this.#create(copy, bytes));
    this.#chain = run.catch(() => {});
    return run;
  }

  async latest(): Promise<{ meta: SnapshotMeta; data: Uint8Array } | undefined> {
    await this.#chain;
    for (const e of [...this.#entries]) {
      const path = join(this.dir, `${e.name}.snap`);
      try {
        const data = new Uint8Array(await readFile(path));
        if (data.length !== e.dataBytes) throw new Error(`holds ${data.length} bytes, expected ${e.dataBytes}`);
        if (crc32(data) !== e.dataCrc) throw new Error("CRC mismatch");
        return { meta: structuredClone(e.meta), data };
      } catch (err) {
        this.#log.warn("skipping damaged Raft snapshot", { file: path, error: errorMessage(err) });
      }
    }
    return undefined;
  }

  begin(options: { backgroundFlush?: boolean; keepRecent?: boolean } = {}): SnapshotSink {
    const flushEvery = options.backgroundFlush === true ? backgroundSyncBytes : Infinity;
    /** With keepRecent: the last writes, oldest first, each where it starts (see recent()). */
    let recentWrites: { at: number; parts: readonly Uint8Array[]; bytes: number }[] = [];
    let recentBytes = 0;
    this.#seq++;
    const tmp = join(this.dir, `incoming-${String(this.#seq).padStart(10, "0")}.snap.tmp`);
    const handle = open(tmp, "w", 0o644);
    handle.catch(() => {}); // awaited by the first write, finish or cancel
    let written = 0;
    let crc = 0;
    let state: "open" | "done" = "open";
    let writes: Promise<void> = Promise.resolve();
    /** Bytes whose writes resolved (read() waits for the others). */
    let settled = 0;
    /** A second handle, for read(): opened on its first use. */
    let reader: ReturnType<typeof open> | undefined;
    /** Bytes written since the last background flush began, the flush running, and its failure. */
    let unsynced = 0;
    let syncing: Promise<void> | undefined;
    let syncError: unknown;
    const store = this;
    const closeReader = async (): Promise<void> => {
      const r = reader;
      reader = undefined;
      await (await r?.catch(() => undefined))?.close().catch(() => {});
    };
    return {
      get written() {
        return written;
      },
      write(chunk: Uint8Array | readonly Uint8Array[]): Promise<void> {
        if (state !== "open") return Promise.reject(new Error("snapshot sink is closed"));
        store.#onWrite();
        // Not copied: the caller keeps the chunks unchanged until this write resolves.
        const parts = partsOf(chunk);
        const n = byteLength(parts);
        for (const p of parts) crc = crc32Update(crc, p);
        const at = written;
        written += n;
        if (options.keepRecent === true && n > 0) {
          recentWrites.push({ at, parts, bytes: n });
          recentBytes += n;
          while (recentBytes - recentWrites[0]!.bytes >= keepRecentBytes) recentBytes -= recentWrites.shift()!.bytes;
        }
        const run = writes.then(async () => {
          const fh = await handle;
          await writeAllAt(fh, parts, at);
          settled += n;
          unsynced += n;
          if (unsynced >= flushEvery && !syncing) {
            // Flush what is written so far while more arrives, so that flush()
            // and finish() have little left: a 1 GiB fsync took 1.9 s.
            unsynced = 0;
            syncing = fh.datasync().then(() => { syncing = undefined; }, (err: unknown) => { syncing = undefined; syncError ??= err; });
          }
        });
        writes = run.catch(() => {});
        return run;
      },
      async read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
        if (state !== "open") throw new Error("snapshot sink is closed");
        const end = Math.min(written, offset + length);
        if (end > settled) await writes;
        if (end <= offset) return new Uint8Array(0);
        reader ??= open(tmp, "r");
        const fh = await reader;
        const got = await readAt(fh, offset, end - offset, into);
        if (got.length < end - offset) throw new Error(`snapshot file ${tmp} is shorter than the ${end} bytes written`);
        return got;
      },
      recent(offset: number, length: number): Uint8Array[] | undefined {
        if (state !== "open" || recentWrites.length === 0 || offset < recentWrites[0]!.at || offset + length > written || length <= 0) return undefined;
        const out: Uint8Array[] = [];
        let want = length;
        let pos = offset;
        for (const w of recentWrites) {
          if (w.at + w.bytes <= pos) continue;
          let at = w.at;
          for (const p of w.parts) {
            const end = at + p.length;
            if (end > pos && want > 0) {
              const from = pos - at;
              const n = Math.min(p.length - from, want);
              out.push(p.subarray(from, from + n));
              pos += n;
              want -= n;
            }
            at = end;
          }
          if (want === 0) break;
        }
        return want === 0 ? out : undefined;
      },
      async flush(): Promise<void> {
        if (state !== "open") throw new Error("snapshot sink is closed");
        await writes;
        await syncing;
        if (syncError !== undefined) throw syncError;
        unsynced = 0;
        await (await handle).datasync();
      },
      async finish(meta: SnapshotMeta): Promise<SnapshotMeta> {
        if (state !== "open") throw new Error("snapshot sink is closed");
        state = "done";
        recentWrites = [];
        await writes;
        await closeReader();
        const fh = await handle;
        try {
          await syncing;
          if (syncError !== undefined) throw syncError;
          await fh.sync();
        } finally {
          await fh.close();
        }
        const m: SnapshotMeta = { ...structuredClone(meta), sizeBytes: written };
        const run = store.#chain.then(() => store.#adopt(m, tmp, written, crc));
        store.#chain = run.catch(() => {});
        await run;
        return m;
      },
      async cancel(): Promise<void> {
        if (state !== "open") return;
        state = "done";
        recentWrites = [];
        await writes;
        await syncing;
        await closeReader();
        await (await handle.catch(() => undefined))?.close().catch(() => {});
        await rm(tmp, { force: true });
      },
    };
  }

  async open(which?: { index: number; term: number }): Promise<SnapshotSource | undefined> {
    await this.#chain;
    const candidates = which ? this.#entries.filter((e) => e.meta.index === which.index && e.meta.term === which.term) : [...this.#entries];
    for (const e of candidates) {
      const path = join(this.dir, `${e.name}.snap`);
      let fh: Awaited<ReturnType<typeof open>> | undefined;
      try {
        fh = await open(path, "r");
        const size = (await fh.stat()).size;
        if (size !== e.dataBytes) throw new Error(`holds ${size} bytes, expected ${e.dataBytes}`);
        if (!which) {
          // The newest one is read at start: check it all before restoring from it.
          let crc = 0;
          const buf = new Uint8Array(readChunkBytes);
          for (let off = 0; off < size;) {
            const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, size - off), off);
            if (bytesRead === 0) throw new Error("is shorter than its size");
            crc = crc32Update(crc, buf.subarray(0, bytesRead));
            off += bytesRead;
          }
          if (crc !== e.dataCrc) throw new Error("CRC mismatch");
        }
        return fileSource(fh, structuredClone(e.meta), size);
      } catch (err) {
        await fh?.close().catch(() => {});
        this.#log.warn("skipping damaged Raft snapshot", { file: path, error: errorMessage(err) });
      }
    }
    return undefined;
  }

  async list(): Promise<SnapshotMeta[]> {
    await this.#chain;
    return this.#entries.map((e) => structuredClone(e.meta));
  }

  async close(): Promise<void> {
    await this.#chain;
  }

  /** A new snapshot's file name (without extension): index, term, then a sequence number. */
  #nextName(meta: SnapshotMeta): string {
    this.#seq++;
    return `${String(meta.index).padStart(20, "0")}-${String(meta.term).padStart(20, "0")}-${String(this.#seq).padStart(10, "0")}`;
  }

  /** A sink's finished temp file becomes a stored snapshot. */
  async #adopt(meta: SnapshotMeta, tmp: string, dataBytes: number, dataCrc: number): Promise<void> {
    const name = this.#nextName(meta);
    await rename(tmp, join(this.dir, `${name}.snap`));
    await syncDir(this.dir);
    await this.#record(name, meta, dataBytes, dataCrc);
  }

  async #create(meta: SnapshotMeta, data: Uint8Array): Promise<void> {
    const name = this.#nextName(meta);
    const dataCrc = crc32(data);
    await writeFileDurable(join(this.dir, `${name}.snap`), data);
    await this.#record(name, meta, data.length, dataCrc);
  }

  /** Write the .meta (the snapshot exists from then on) and drop the oldest beyond `retain`. */
  async #record(name: string, meta: SnapshotMeta, dataBytes: number, dataCrc: number): Promise<void> {
    const record = encodeRecord(encode({ meta, dataBytes, dataCrc }));
    await writeFileDurable(join(this.dir, `${name}.meta`), record);
    this.#entries.push({ name, index: meta.index, seq: this.#seq, meta, dataBytes, dataCrc });
    this.#entries.sort(newestFirst);
    const old = this.#entries.splice(this.#retain);
    for (const e of old) {
      // Meta first: a crash in between leaves an orphan .snap, removed on open.
      await rm(join(this.dir, `${e.name}.meta`), { force: true });
      await rm(join(this.dir, `${e.name}.snap`), { force: true });
    }
    if (old.length > 0) await syncDir(this.dir);
    this.#log.info("Raft snapshot stored", { index: meta.index, term: meta.term, sizeBytes: dataBytes, removed: old.length });
  }

  async #scan(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const names = await readdir(this.dir);
    const metas = new Set<string>();
    const snaps = new Set<string>();
    for (const n of names) {
      if (n.endsWith(".tmp")) {
        await rm(join(this.dir, n), { force: true, recursive: true });
        continue;
      }
      const m = namePattern.exec(n);
      if (!m) continue;
      const base = n.slice(0, -5);
      this.#seq = Math.max(this.#seq, Number(m[3]));
      (m[4] === "meta" ? metas : snaps).add(base);
    }
    for (const base of snaps) {
      if (!metas.has(base)) {
        this.#log.warn("removing half-written Raft snapshot", { file: join(this.dir, `${base}.snap`) });
        await rm(join(this.dir, `${base}.snap`), { force: true });
      }
    }
    for (const base of metas) {
      const path = join(this.dir, `${base}.meta`);
      const m = namePattern.exec(`${base}.meta`)!;
      const entry = await this.#readMeta(path, base, Number(m[3]));
      if (!entry || !snaps.has(base)) {
        this.#log.warn("ignoring damaged Raft snapshot", { file: path, reason: entry ? "data file missing" : "bad metadata" });
        continue;
      }
      this.#entries.push(entry);
    }
    this.#entries.sort(newestFirst);
  }

  async #readMeta(path: string, name: string, seq: number): Promise<Entry | undefined> {
    try {
      const bytes = new Uint8Array(await readFile(path));
      const r = readRecord(bytes, 0, 64 * 1024 * 1024);
      if (!r.ok || r.end !== bytes.length) return undefined;
      const raw = decode(r.payload) as { meta?: unknown; dataBytes?: unknown; dataCrc?: unknown };
      const meta = validateSnapshotMeta(raw?.meta);
      if (!meta || typeof raw.dataBytes !== "number" || typeof raw.dataCrc !== "number") return undefined;
      return { name, index: meta.index, seq, meta, dataBytes: raw.dataBytes, dataCrc: raw.dataCrc };
    } catch {
      return undefined;
    }
  }
}

/**
 * `parts` end to end at `position`: one writev for many (a restore's stored
 * gzip blocks are 64 KiB views; a write each cost a thread-pool turn each),
 * each write again from where a short one stopped.
 */
async function writeAllAt(fh: Awaited<ReturnType<typeof open>>, parts: readonly Uint8Array[], position: number): Promise<void> {
  let rest = parts.filter((p) => p.length > 0);
  let pos = position;
  while (rest.length > 0) {
    let n: number;
    if (rest.length === 1 || typeof fh.writev !== "function") {
      const p = rest[0]!;
      n = (await fh.write(p, 0, p.length, pos)).bytesWritten;
    } else {
      n = (await fh.writev(rest as Uint8Array[], pos)).bytesWritten;
    }
    pos += n;
    while (n > 0 && rest.length > 0) {
      const first = rest[0]!;
      if (n >= first.length) {
        n -= first.length;
        rest = rest.slice(1);
      } else {
        rest = [first.subarray(n), ...rest.slice(1)];
        n = 0;
      }
    }
  }
}

/** Up to `n` bytes at `offset` (fewer only where the file ends), into `into` when it has room. */
async function readAt(fh: Awaited<ReturnType<typeof open>>, offset: number, n: number, into?: Uint8Array): Promise<Uint8Array> {
  const buf = into && into.length >= n ? into.subarray(0, n) : new Uint8Array(n);
  let got = 0;
  while (got < n) {
    const { bytesRead } = await fh.read(buf, got, n - got, offset + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === n ? buf : buf.subarray(0, got);
}

/** Reads from an open file: the data stays readable even once a newer snapshot removed its name. */
function fileSource(fh: Awaited<ReturnType<typeof open>>, meta: SnapshotMeta, size: number): SnapshotSource {
  let closed = false;
  return {
    meta,
    read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
      return readAt(fh, offset, Math.max(0, Math.min(length, size - offset)), into);
    },
    async *stream(): AsyncIterable<Uint8Array> {
      for (let off = 0; off < size;) {
        const buf = new Uint8Array(Math.min(readChunkBytes, size - off));
        const { bytesRead } = await fh.read(buf, 0, buf.length, off);
        if (bytesRead === 0) throw new Error(`snapshot file is shorter than ${size} bytes`);
        off += bytesRead;
        yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
      }
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await fh.close();
    },
  };
}

export function openFileSnapshotStore(options: FileSnapshotStoreOptions): Promise<FileSnapshotStore> {
  return FileSnapshotStore.open(options);
}
