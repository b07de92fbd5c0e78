// A generic in-memory table: rows by primary key, keys kept sorted for
// prefix scans (the radix tree's job in go-memdb), and a watch registry.
// Rows are frozen when written; every mutation goes through a WriteTxn
// (store.ts) so it can be undone and so watchers fire after commit.

import { WatchRegistry } from "./watch.ts";
import type { WatchSet } from "./watch.ts";

export interface TableSchema<T extends object> {
  /** Table name; also its name in the index table and in snapshots. */
  readonly name: string;
  /** Primary key of a row (prefix scans work on it). */
  keyOf(row: T): string;
  /** Check a row decoded from a snapshot; undefined rejects it. */
  fromRecord(raw: unknown): T | undefined;
}

export class Table<T extends object> {
  readonly schema: TableSchema<T>;
  readonly watches = new WatchRegistry();
  readonly #rows = new Map<string, T>();
  /** Keys in ascending order (UTF-16 code unit order). */
  readonly #sorted: string[] = [];

  constructor(schema: TableSchema<T>) {
    this.schema = schema;
  }

  get name(): string {
    return this.schema.name;
  }

  get size(): number {
    return this.#rows.size;
  }

  get(key: string): T | undefined {
    return this.#rows.get(key);
  }

  /** Read one key and watch it (exists or not). */
  getWatch(key: string, ws: WatchSet | undefined): T | undefined {
    if (ws) this.watches.watchKey(ws, key);
    return this.#rows.get(key);
  }

  /** Rows whose key starts with prefix, in key order. */
  prefix(prefix: string, ws?: WatchSet): T[] {
    if (ws) this.watches.watchPrefix(ws, prefix);
    const out: T[] = [];
    const keys = this.#sorted;
    for (let i = prefix === "" ? 0 : lowerBound(keys, prefix); i < keys.length; i++) {
      const k = keys[i]!;
      if (!k.startsWith(prefix)) break;
      out.push(this.#rows.get(k)!);
    }
    return out;
  }

  /** Calls fn for each row under prefix in key order; fn returning false stops. */
  scan(prefix: string, fn: (row: T, key: string) => boolean | void): void {
    const keys = this.#sorted;
    for (let i = prefix === "" ? 0 : lowerBound(keys, prefix); i < keys.length; i++) {
      const k = keys[i]!;
      if (!k.startsWith(prefix)) break;
      if (fn(this.#rows.get(k)!, k) === false) return;
    }
  }

  /** Every row in key order (a fresh array: safe to hold while writes go on). */
  all(): T[] {
    return this.prefix("");
  }

  /** @internal Insert or replace; returns the previous row. Only WriteTxn calls this. */
  _put(key: string, row: T): T | undefined {
    const prev = this.#rows.get(key);
    this.#rows.set(key, row);
    if (prev === undefined) {
      const keys = this.#sorted;
      const n = keys.length;
      if (n === 0 || keys[n - 1]! < key) keys.push(key);
      else keys.splice(lowerBound(keys, key), 0, key);
    }
    return prev;
  }

  /** @internal Remove; returns the removed row. Only WriteTxn calls this. */
  _delete(key: string): T | undefined {
    const prev = this.#rows.get(key);
    if (prev === undefined) return undefined;
    this.#rows.delete(key);
    const keys = this.#sorted;
    const i = lowerBound(keys, key);
    if (keys[i] === key) keys.splice(i, 1);
    return prev;
  }

  /** @internal Bulk load for restore: rows in any order, no watches. */
  _load(rows: Iterable<T>): void {
    for (const row of rows) {
      const key = this.schema.keyOf(row);
      if (!this.#rows.has(key)) this.#sorted.push(key);
      this.#rows.set(key, row);
    }
    this.#sorted.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
}

/** First index i with keys[i] >= key. */
export function lowerBound(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
