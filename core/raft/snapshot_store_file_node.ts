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
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { validateSnapshotMeta } from "./codec.ts";
import { syncDir, writeFileDurable } from "../durable_node.ts";
import { crc32, encodeRecord, readRecord } from "./log_store_file_node.ts";
import type { SnapshotMeta, SnapshotStore } from "./types.ts";

const mkdir = lazyFsPromises("mkdir");
const readdir = lazyFsPromises("readdir");
const readFile = lazyFsPromises("readFile");
const rm = lazyFsPromises("rm");

const namePattern = /^(\d{20})-(\d{20})-(\d{10})\.(meta|snap)$/;

export interface FileSnapshotStoreOptions {
  /** The `raft/snapshots/` directory; created if missing. */
  dir: string;
  logger: Logger;
  /** Snapshots kept. Default 2. */
  retain?: number;
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
  #entries: Entry[] = [];
  #seq = 0;
  #chain: Promise<void> = Promise.resolve();

  private constructor(options: FileSnapshotStoreOptions) {
    this.dir = options.dir;
    this.#log = options.logger;
    this.#retain = Math.max(1, options.retain ?? 2);
  }

  static async open(options: FileSnapshotStoreOptions): Promise<FileSnapshotStore> {
    const store = new FileSnapshotStore(options);
    await store.#scan();
    return store;
  }

  create(meta: SnapshotMeta, data: Uint8Array): Promise<void> {
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

  async list(): Promise<SnapshotMeta[]> {
    await this.#chain;
    return this.#entries.map((e) => structuredClone(e.meta));
  }

  async close(): Promise<void> {
    await this.#chain;
  }

  async #create(meta: SnapshotMeta, data: Uint8Array): Promise<void> {
    this.#seq++;
    const name = `${String(meta.index).padStart(20, "0")}-${String(meta.term).padStart(20, "0")}-${String(this.#seq).padStart(10, "0")}`;
    const dataCrc = crc32(data);
    await writeFileDurable(join(this.dir, `${name}.snap`), data);
    const record = encodeRecord(encode({ meta, dataBytes: data.length, dataCrc }));
    await writeFileDurable(join(this.dir, `${name}.meta`), record);
    this.#entries.push({ name, index: meta.index, seq: this.#seq, meta, dataBytes: data.length, dataCrc });
    this.#entries.sort(newestFirst);
    const old = this.#entries.splice(this.#retain);
    for (const e of old) {
      // Meta first: a crash in between leaves an orphan .snap, removed on open.
      await rm(join(this.dir, `${e.name}.meta`), { force: true });
      await rm(join(this.dir, `${e.name}.snap`), { force: true });
    }
    if (old.length > 0) await syncDir(this.dir);
    this.#log.info("Raft snapshot stored", { index: meta.index, term: meta.term, sizeBytes: data.length, removed: old.length });
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

export function openFileSnapshotStore(options: FileSnapshotStoreOptions): Promise<FileSnapshotStore> {
  return FileSnapshotStore.open(options);
}
