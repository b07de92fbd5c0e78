// In-memory LogStore. Models durability: a write is visible at once but becomes
// durable only when its (optionally delayed) "fsync" finishes, and `crash()`
// throws away everything not yet durable, so the simulation can kill a node
// mid-write. `-dev` keeps its log here with `modelCrashes: false` and
// `copyEntries: false`: nothing outlives the process, so no durable image is
// kept (copying it on every append cost O(log length) per write), and the
// entries are held as the driver hands them over (the core keeps the same
// objects and never changes them), which halves the memory a long log takes.
import type { LogEntry, LogStore } from "./types.ts";

export interface MemoryStoreOptions {
  /** Awaited by every write before it counts as durable (sim: a SimClock timer). */
  syncDelay?: () => Promise<void>;
  /** Keep a durable image for `crash()` (default true; the log store reads it, the stable store ignores it). */
  modelCrashes?: boolean;
  /** Copy appended entries (default true; the store contract: never hold a caller's arrays). */
  copyEntries?: boolean;
}

const immediate = (): Promise<void> => Promise.resolve();

function copyEntry(e: LogEntry): LogEntry {
  return { index: e.index, term: e.term, type: e.type, data: e.data.slice() };
}

export class MemoryLogStore implements LogStore {
  #entries: LogEntry[] = [];
  #durable: LogEntry[] = [];
  #epoch = 0;
  #syncDelay: () => Promise<void>;
  #modelCrashes: boolean;
  #copyEntries: boolean;
  /** Number of completed syncs (tests measure group commit with it). */
  syncs = 0;
  /** The sync running now, and the one queued behind it that writes made now will share. */
  #current: Promise<void> | undefined;
  #queued: Promise<void> | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    this.#syncDelay = options.syncDelay ?? immediate;
    this.#modelCrashes = options.modelCrashes ?? true;
    this.#copyEntries = options.copyEntries ?? true;
  }

  firstIndex(): Promise<number> {
    return Promise.resolve(this.#entries[0]?.index ?? 0);
  }

  lastIndex(): Promise<number> {
    return Promise.resolve(this.#entries.at(-1)?.index ?? 0);
  }

  getEntries(lo: number, hi: number): Promise<LogEntry[]> {
    return Promise.resolve(this.entriesNow(lo, hi));
  }

  /** Synchronous read for tests and the simulation's invariant checks. */
  entriesNow(lo: number, hi: number): LogEntry[] {
    const first = this.#entries[0]?.index ?? 0;
    if (first === 0) return [];
    const from = Math.max(0, lo - first);
    const to = Math.max(from, Math.min(this.#entries.length, hi - first));
    return this.#entries.slice(from, to).map(copyEntry);
  }

  append(entries: LogEntry[]): Promise<void> {
    if (entries.length === 0) return this.#sync();
    const start = entries[0]!.index;
    const first = this.#entries[0]?.index ?? 0;
    const last = this.#entries.at(-1)?.index ?? 0;
    if (first !== 0 && start > last + 1) {
      return Promise.reject(new RangeError(`Cannot append at index ${start}: log ends at ${last}`));
    }
    if (first !== 0 && start <= last) this.#entries.length = Math.max(0, start - first);
    for (const e of entries) this.#entries.push(this.#copyEntries ? copyEntry(e) : e);
    return this.#sync();
  }

  deleteRange(min: number, max: number): Promise<void> {
    this.#entries = this.#entries.filter((e) => e.index < min || e.index > max);
    return this.#sync();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Lose every write whose sync has not finished. */
  crash(): void {
    if (!this.#modelCrashes) throw new TypeError("crash() needs a MemoryLogStore created with modelCrashes");
    this.#epoch++;
    this.#entries = this.#durable.slice();
  }

  /**
   * One sync at a time, as on a disk: writes made while one runs share the
   * next (group commit). An earlier write is never durable after a later one.
   */
  #sync(): Promise<void> {
    if (this.#queued) return this.#queued;
    if (!this.#current) return this.#start();
    const queued = this.#current.then(() => {}, () => {}).then(() => {
      this.#queued = undefined;
      return this.#start();
    });
    this.#queued = queued;
    return queued;
  }

  #start(): Promise<void> {
    const p = this.#syncOnce();
    this.#current = p;
    const done = (): void => {
      if (this.#current === p) this.#current = undefined;
    };
    p.then(done, done);
    return p;
  }

  async #syncOnce(): Promise<void> {
    if (!this.#modelCrashes) {
      await this.#syncDelay();
      this.syncs++;
      return;
    }
    const epoch = this.#epoch;
    const image = this.#entries.slice();
    await this.#syncDelay();
    if (epoch !== this.#epoch) throw new Error("Log store crashed during sync");
    this.#durable = image;
    this.syncs++;
  }
}

