// Transactions over the state store. JavaScript runs one thing at a time, so a
// write transaction edits the live tables in place and keeps an undo log;
// abort() replays it backwards. Watchers are woken only by commit(), so a
// reader never sees a change that was rolled back.

import type { Tables } from "./schema.ts";
import type { Table } from "./table.ts";
import type { WatchRegistry, WatchSet } from "./watch.ts";

/** What read helpers need: the tables and the per-table max index. */
export interface ReadTxn {
  readonly tables: Tables;
  /** Highest index recorded for any of the named tables (0 if none). */
  maxIndex(...names: string[]): number;
  /**
   * Wake ws when the named index (a table's, or "service.<name>") is raised by
   * a commit. A read whose answer moves exactly with one index watches it
   * instead of every row it read: one registration, however large the answer.
   */
  watchIndex(ws: WatchSet, name: string): void;
}

interface Changed {
  table: Table<object>;
  key: string;
}

export class WriteTxn implements ReadTxn {
  /** The Raft index this transaction commits at. */
  readonly index: number;
  readonly tables: Tables;
  readonly #indexes: Map<string, number>;
  readonly #undo: (() => void)[] = [];
  readonly #changed: Changed[] = [];
  readonly #deferred: (() => void)[] = [];
  readonly #indexWatches: WatchRegistry | undefined;
  /** Index names raised by this transaction (their watchers wake on commit). */
  readonly #raised = new Set<string>();
  #done = false;

  constructor(tables: Tables, indexes: Map<string, number>, index: number, indexWatches?: WatchRegistry) {
    this.tables = tables;
    this.#indexes = indexes;
    this.index = index;
    this.#indexWatches = indexWatches;
  }

  maxIndex(...names: string[]): number {
    return maxIndexOf(this.#indexes, names);
  }

  watchIndex(ws: WatchSet, name: string): void {
    this.#indexWatches?.watchKey(ws, name);
  }

  /** Insert or replace a row (frozen here); its key comes from the table schema. */
  insert<T extends object>(table: Table<T>, row: T): void {
    this.#check();
    const key = table.schema.keyOf(row);
    const prev = table._put(key, Object.isFrozen(row) ? row : Object.freeze(row));
    this.#undo.push(prev === undefined ? () => { table._delete(key); } : () => { table._put(key, prev); });
    this.#changed.push({ table: table as unknown as Table<object>, key });
  }

  /** Delete a row by key; returns it, or undefined if absent. */
  delete<T extends object>(table: Table<T>, key: string): T | undefined {
    this.#check();
    const prev = table._delete(key);
    if (prev === undefined) return undefined;
    this.#undo.push(() => { table._put(key, prev); });
    this.#changed.push({ table: table as unknown as Table<object>, key });
    return prev;
  }

  /** Delete every row under prefix; returns them in key order. */
  deletePrefix<T extends object>(table: Table<T>, prefix: string): T[] {
    const rows = table.prefix(prefix);
    for (const row of rows) this.delete(table, table.schema.keyOf(row));
    return rows;
  }

  /** Raise a table's max index to idx (indexes never go backwards). */
  setIndex(name: string, idx: number): void {
    this.#check();
    const prev = this.#indexes.get(name);
    if (prev !== undefined && prev >= idx) return;
    this.#indexes.set(name, idx);
    this.#raised.add(name);
    this.#undo.push(prev === undefined ? () => { this.#indexes.delete(name); } : () => { this.#indexes.set(name, prev); });
  }

  /** Run fn after a successful commit (after watchers are woken). */
  defer(fn: () => void): void {
    this.#deferred.push(fn);
  }

  /** Whether anything was written so far. */
  get hasChanges(): boolean {
    return this.#undo.length > 0;
  }

  commit(): void {
    this.#check();
    this.#done = true;
    for (const c of this.#changed) c.table.watches.notify(c.key);
    if (this.#indexWatches) for (const name of this.#raised) this.#indexWatches.notify(name);
    for (const fn of this.#deferred) fn();
  }

  /** Undo every write. Safe after commit (then it does nothing). */
  abort(): void {
    if (this.#done) return;
    this.#done = true;
    for (let i = this.#undo.length - 1; i >= 0; i--) this.#undo[i]!();
  }

  #check(): void {
    if (this.#done) throw new Error("Transaction already finished");
  }
}

export function maxIndexOf(indexes: Map<string, number>, names: readonly string[]): number {
  let max = 0;
  for (const n of names) {
    const v = indexes.get(n);
    if (v !== undefined && v > max) max = v;
  }
  return max;
}
