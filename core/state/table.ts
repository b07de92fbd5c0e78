// A generic in-memory table: rows by primary key, keys kept sorted for
// prefix scans (the radix tree's job in go-memdb), and a watch registry.
// Rows are frozen when written; every mutation goes through a WriteTxn
// (store.ts) so it can be undone and so watchers fire after commit.

import { SortedKeys } from "./sorted_keys.ts";
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
  readonly #sorted = new SortedKeys();

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
    const rows = this.#rows;
    this.#sorted.scan(prefix, (k) => {
      out.push(rows.get(k)!);
    });
    return out;
  }

  /** Calls fn for each row under prefix in key order; fn returning false stops. */
  scan(prefix: string, fn: (row: T, key: string) => boolean | void): void {
    const rows = this.#rows;
    this.#sorted.scan(prefix, (k) => fn(rows.get(k)!, k));
  }

  /** Every row in key order (a fresh array: safe to hold while writes go on). */
  all(): T[] {
    return this.prefix("");
  }

  /** @internal Insert or replace; returns the previous row. Only WriteTxn calls this. */
  _put(key: string, row: T): T | undefined {
    const prev = this.#rows.get(key);
    this.#rows.set(key, row);
    if (prev === undefined) this.#sorted.insert(key);
    return prev;
  }

  /** @internal Remove; returns the removed row. Only WriteTxn calls this. */
  _delete(key: string): T | undefined {
    const prev = this.#rows.get(key);
    if (prev === undefined) return undefined;
    this.#rows.delete(key);
    this.#sorted.delete(key);
    return prev;
  }

  /** @internal Bulk load for restore: rows in any order, no watches. */
  _load(rows: Iterable<T>): void {
    for (const row of rows) this.#rows.set(this.schema.keyOf(row), row);
    this.#sorted.load([...this.#rows.keys()]);
  }
}

export { lowerBound } from "./sorted_keys.ts";
