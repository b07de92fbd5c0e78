// Durable Raft HardState (term, vote, commit) in one small file, `raft/stable`.
// The file is one record `length | crc32 | msgpack HardState` (the log's
// record format), replaced atomically: temp name, fsync, rename, fsync dir.
// A rename is atomic, so the file is always the old or the new state; a bad
// CRC is real damage and stops the open with a CorruptionError.

import { lazyFsPromises } from "../lazy_builtins_node.ts";
import { join } from "node:path";
import { CorruptionError } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { decodeHardState, encodeHardState } from "./codec.ts";
import { writeFileDurable } from "../durable_node.ts";
import { encodeRecord, readRecord } from "./log_store_file_node.ts";
import type { HardState, StableStore } from "./types.ts";

const mkdir = lazyFsPromises("mkdir");
const readFile = lazyFsPromises("readFile");
const rm = lazyFsPromises("rm");

export const stableFileName = "stable";

export interface FileStableStoreOptions {
  /** The `raft/` directory; created if missing. */
  dir: string;
  logger: Logger;
}

export class FileStableStore implements StableStore {
  readonly dir: string;
  readonly path: string;
  readonly #log: Logger;
  #state: HardState | undefined;
  /** Saves run one at a time, in call order. */
  #chain: Promise<void> = Promise.resolve();
  /** Completed saves (each one fsync + rename). */
  saves = 0;

  private constructor(options: FileStableStoreOptions) {
    this.dir = options.dir;
    this.path = join(options.dir, stableFileName);
    this.#log = options.logger;
  }

  static async open(options: FileStableStoreOptions): Promise<FileStableStore> {
    const store = new FileStableStore(options);
    await mkdir(store.dir, { recursive: true });
    // A temporary file left by a crash during a save (both the current name and the one before durable_node).
    await rm(join(store.dir, `.${stableFileName}.tmp`), { force: true });
    await rm(`${store.path}.tmp`, { force: true });
    let bytes: Uint8Array | undefined;
    try {
      bytes = new Uint8Array(await readFile(store.path));
    } catch (err) {
      if ((err as { code?: string }).code !== "ENOENT") throw err;
    }
    if (bytes) {
      const r = readRecord(bytes, 0, 1024 * 1024);
      const state = r.ok && r.end === bytes.length ? decodeHardState(r.payload) : undefined;
      if (!state) {
        const why = !r.ok ? r.why : r.end !== bytes.length ? "trailing bytes after the record" : "record is not a HardState";
        throw new CorruptionError(`Corrupt Raft stable state "${store.path}": ${why}`, { file: store.path, offset: 0 });
      }
      store.#state = state;
    }
    store.#log.debug("Raft stable state loaded", { path: store.path, term: store.#state?.term, vote: store.#state?.vote });
    return store;
  }

  load(): Promise<HardState | undefined> {
    return Promise.resolve(this.#state ? { ...this.#state } : undefined);
  }

  save(state: HardState): Promise<void> {
    const copy: HardState = { term: state.term, vote: state.vote, commit: state.commit };
    const bytes = encodeRecord(encodeHardState(copy));
    const run = this.#chain.then(async () => {
      await writeFileDurable(join(this.dir, stableFileName), bytes);
      this.#state = copy;
      this.saves++;
    });
    this.#chain = run.catch(() => {});
    return run;
  }

  async close(): Promise<void> {
    await this.#chain;
  }
}

export function openFileStableStore(options: FileStableStoreOptions): Promise<FileStableStore> {
  return FileStableStore.open(options);
}
