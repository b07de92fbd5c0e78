// The state store (consul agent/consul/state/state_store.go): tables, the
// per-table max index, write transactions stamped with the Raft index, and
// watch sets for blocking reads. Public ops open a transaction and call the
// `xxxTxn` helpers; Fsm.apply is the only writer in a running server.

import { CorruptionError } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { nullLogger } from "../log/logger.ts";
import type { DirEntry, TxnOp } from "../rpc/methods.ts";
import {
  kvsDeleteCasTxn,
  kvsDeleteTreeTxn,
  kvsDeleteTxn,
  kvsGetTxn,
  kvsListKeysTxn,
  kvsListTxn,
  kvsLockTxn,
  kvsSetCasTxn,
  kvsSetTxn,
  kvsUnlockTxn,
} from "./kvs.ts";
import { checkIndexRow } from "./catalog_schema.ts";
import type { Indexed, KvsWriteEntry } from "./kvs.ts";
import { createTables, tableList } from "./schema.ts";
import type { Tables } from "./schema.ts";
import { sessionCreateTxn } from "./session.ts";
import { decodeSnapshot, decodeSnapshotSync, encodedSnapshotBytes, encodeSnapshot, snapshotVersion } from "./snapshot.ts";
import type { ByteStream, CapturedState, SnapshotFrames, SnapshotRecord } from "./snapshot.ts";
import { RequestTable } from "./requests.ts";
import { graveyardReapTxn } from "./tombstones.ts";
import { maxIndexOf, WriteTxn } from "./txn.ts";
import type { ReadTxn } from "./txn.ts";
import { txnDispatch } from "./txn_ops.ts";
import type { TxnOutcome } from "./txn_ops.ts";
import { WatchRegistry } from "./watch.ts";
import type { WatchSet } from "./watch.ts";

/** The snapshot table name of the request table (an older reader drops it as an unknown table). */
const requestsTable = "_requests";

export class StateStore implements ReadTxn {
  readonly tables: Tables;
  readonly #indexes = new Map<string, number>();
  readonly #abandonWaiters = new Map<string, Set<WatchSet>>();
  /** Waiters on named indexes (watchIndex): woken when a commit raises the index. */
  readonly #indexWatches = new WatchRegistry();
  #abandoned = false;
  #snapshotIndex = 0;
  #requests = new RequestTable();

  constructor() {
    this.tables = createTables();
  }

  // ---- indexes and transactions ----

  maxIndex(...names: string[]): number {
    return maxIndexOf(this.#indexes, names);
  }

  /** Highest index over every table: the index of the whole store. */
  lastIndex(): number {
    let max = 0;
    for (const v of this.#indexes.values()) if (v > max) max = v;
    return max;
  }

  watchIndex(ws: WatchSet, name: string): void {
    this.#indexWatches.watchKey(ws, name);
  }

  /** Open a write transaction at Raft index idx. Call commit() or abort(). */
  begin(idx: number): WriteTxn {
    return new WriteTxn(this.tables, this.#indexes, idx, this.#indexWatches);
  }

  /** Run fn in a write transaction: commit if it returns, abort if it throws. */
  write<R>(idx: number, fn: (tx: WriteTxn) => R): R {
    const tx = this.begin(idx);
    try {
      const r = fn(tx);
      tx.commit();
      return r;
    } catch (err) {
      tx.abort();
      throw err;
    }
  }

  /** Exactly-once records of recent writes (in snapshots too). */
  get requests(): RequestTable {
    return this.#requests;
  }

  /** Keep another store's request table (a restore replaces the data, not the record of which writes were applied). */
  adoptRequests(from: StateStore): void {
    this.#requests = from.#requests;
  }

  /** The index in the header of the snapshot this store was restored from (0 if none). */
  get snapshotIndex(): number {
    return this.#snapshotIndex;
  }

  // ---- abandon (restore) ----

  /** Wake ws when this store is replaced by a restore. */
  watchAbandon(ws: WatchSet): void {
    ws._register(this.#abandonWaiters, "");
  }

  get abandoned(): boolean {
    return this.#abandoned;
  }

  /** Mark the store replaced and wake every watcher (Consul Abandon). */
  abandon(): void {
    if (this.#abandoned) return;
    this.#abandoned = true;
    const waiters = this.#abandonWaiters.get("");
    this.#abandonWaiters.clear();
    if (waiters) for (const ws of waiters) ws._fire();
    for (const t of tableList(this.tables)) t.watches.notifyAll();
    this.#indexWatches.notifyAll();
  }

  // ---- KV ----

  kvsSet(idx: number, entry: KvsWriteEntry): void {
    this.write(idx, (tx) => kvsSetTxn(tx, idx, entry, false));
  }

  kvsGet(key: string, ws?: WatchSet): Indexed<DirEntry | undefined> {
    return kvsGetTxn(this, ws, key);
  }

  kvsList(prefix: string, ws?: WatchSet): Indexed<DirEntry[]> {
    return kvsListTxn(this, ws, prefix);
  }

  kvsListKeys(prefix: string, separator: string, ws?: WatchSet): Indexed<string[]> {
    return kvsListKeysTxn(this, ws, prefix, separator);
  }

  kvsDelete(idx: number, key: string): void {
    this.write(idx, (tx) => kvsDeleteTxn(tx, idx, key));
  }

  kvsDeleteCas(idx: number, cidx: number, key: string): boolean {
    return this.write(idx, (tx) => kvsDeleteCasTxn(tx, idx, cidx, key));
  }

  kvsSetCas(idx: number, entry: KvsWriteEntry): boolean {
    return this.write(idx, (tx) => kvsSetCasTxn(tx, idx, entry) !== undefined);
  }

  kvsDeleteTree(idx: number, prefix: string): void {
    this.write(idx, (tx) => kvsDeleteTreeTxn(tx, idx, prefix));
  }

  /** Throws StateError for a missing or unknown session. */
  kvsLock(idx: number, entry: KvsWriteEntry): boolean {
    return this.write(idx, (tx) => kvsLockTxn(tx, idx, entry) !== undefined);
  }

  /** Throws StateError for a missing session. */
  kvsUnlock(idx: number, entry: KvsWriteEntry): boolean {
    return this.write(idx, (tx) => kvsUnlockTxn(tx, idx, entry) !== undefined);
  }

  /** Delete tombstones with index ≤ reapIndex (written at Raft index idx). */
  reapTombstones(idx: number, reapIndex: number): number {
    return this.write(idx, (tx) => graveyardReapTxn(tx, reapIndex));
  }

  // ---- sessions (minimal until the sessions work lands) ----

  sessionCreate(idx: number, id: string): void {
    this.write(idx, (tx) => sessionCreateTxn(tx, idx, id));
  }

  // ---- Txn ----

  /** Read-write transaction: all ops or none. `clock`: the leader's wall clock (lock delays of invalidated sessions). */
  txnRW(idx: number, ops: readonly TxnOp[], clock: { nowMs: number } = { nowMs: 0 }): TxnOutcome {
    const tx = this.begin(idx);
    let out: TxnOutcome;
    try {
      out = txnDispatch(tx, idx, ops, true, clock);
    } catch (err) {
      tx.abort();
      throw err;
    }
    if (out.errors.length > 0) tx.abort();
    else tx.commit();
    return out;
  }

  /** Read-only transaction against current state. */
  txnRO(ops: readonly TxnOp[]): TxnOutcome {
    return txnDispatch(this, 0, ops, false);
  }

  // ---- snapshot and restore ----

  /**
   * A point-in-time snapshot as a lazy stream of framed msgpack chunks. The
   * rows are captured now; writes after this call do not show up in it.
   * Each iteration encodes the captured rows anew, to the same bytes.
   * `index` (the last applied Raft index) goes in the header when it is
   * higher than the store's own.
   */
  snapshot(options: { index?: number } = {}): SnapshotFrames {
    const captured: CapturedState = {
      index: Math.max(options.index ?? 0, this.lastIndex()),
      tables: [...tableList(this.tables).map((t): [string, readonly object[]] => [t.name, t.all()]), [requestsTable, this.#requests.rows()]],
      indexes: [...this.#indexes.entries()],
    };
    // Iterable again and again, with the same bytes each time; a streamed
    // archive takes the size first (sizeBytes), then sends the frames.
    return { [Symbol.iterator]: () => encodeSnapshot(captured), sizeBytes: () => encodedSnapshotBytes(captured) };
  }

  /** Build a fresh store from a snapshot stream. Throws CorruptionError on bad data. */
  static async restore(stream: ByteStream, options: { logger?: Logger } = {}): Promise<StateStore> {
    const b = new StateStore().#builder(options.logger ?? nullLogger());
    for await (const rec of decodeSnapshot(stream)) b.add(rec);
    return b.finish();
  }

  /** The same, for bytes in hand (the FSM applies a restore entry synchronously). */
  static restoreSync(bytes: Uint8Array, options: { logger?: Logger } = {}): StateStore {
    const b = new StateStore().#builder(options.logger ?? nullLogger());
    for (const rec of decodeSnapshotSync(bytes)) b.add(rec);
    return b.finish();
  }

  /**
   * Raise every table index to at least `index`: after a restore through the
   * Raft log, blocking queries see the change at the restore's own index.
   */
  raiseIndexes(index: number): void {
    for (const t of tableList(this.tables)) this.#indexes.set(t.name, Math.max(this.#indexes.get(t.name) ?? 0, index));
    for (const [name, idx] of this.#indexes) if (idx < index) this.#indexes.set(name, index);
  }

  #builder(logger: Logger): { add(rec: SnapshotRecord): void; finish(): StateStore } {
    const store = this;
    const byName = new Map(tableList(store.tables).map((t) => [t.name, t]));
    const pending = new Map<string, object[]>();
    let sawHeader = false;
    let skipped = 0;
    const requestRows: unknown[] = [];
    return {
      add(rec) {
        if (!sawHeader) {
          if (rec.t !== "header") throw new CorruptionError("Snapshot does not start with a header");
          if (rec.version !== snapshotVersion) {
            throw new CorruptionError(`Snapshot version ${rec.version} is not supported (want ${snapshotVersion})`);
          }
          sawHeader = true;
          store.#snapshotIndex = rec.index;
          return;
        }
        if (rec.t === "rows") {
          if (rec.table === requestsTable) {
            requestRows.push(...rec.rows);
            return;
          }
          const table = byName.get(rec.table);
          if (!table) {
            skipped += rec.rows.length;
            return;
          }
          let list = pending.get(rec.table);
          if (!list) pending.set(rec.table, (list = []));
          for (const raw of rec.rows) {
            const row = table.schema.fromRecord(raw);
            if (!row) throw new CorruptionError(`Snapshot has a malformed ${JSON.stringify(rec.table)} row`);
            list.push(row);
          }
        } else if (rec.t === "indexes") {
          for (const [name, idx] of rec.indexes) store.#indexes.set(name, idx);
        }
      },
      finish() {
        for (const [name, rows] of pending) byName.get(name)!._load(rows);
        store.#requests = RequestTable.fromRows(requestRows);
        // Snapshots written before the checks_by_service index existed: derive it.
        if (store.tables.checks_by_service.size === 0 && store.tables.checks.size > 0) {
          store.tables.checks_by_service._load(store.tables.checks.all().map(checkIndexRow));
        }
        if (skipped > 0) logger.warn("snapshot rows for unknown tables were dropped", { rows: skipped });
        return store;
      },
    };
  }
}
