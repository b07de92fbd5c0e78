export { StateStore } from "./store.ts";
export { WriteTxn } from "./txn.ts";
export type { ReadTxn } from "./txn.ts";
export { WatchRegistry, WatchSet } from "./watch.ts";
export { Table, lowerBound } from "./table.ts";
export type { TableSchema } from "./table.ts";
export { createTables, tableList } from "./schema.ts";
export type { Tables } from "./schema.ts";
export {
  goQuote,
  kvsCheckIndexTxn,
  kvsCheckSessionTxn,
  kvsDeleteCasTxn,
  kvsDeleteTreeTxn,
  kvsDeleteTxn,
  kvsGetTxn,
  kvsListKeysTxn,
  kvsListTxn,
  kvsLockTxn,
  kvsMaxIndex,
  kvsSetCasTxn,
  kvsSessionInvalidateTxn,
  kvsSetTxn,
  kvsUnlockTxn,
} from "./kvs.ts";
export type { Indexed, KvsWriteEntry } from "./kvs.ts";
export { isIndex, kvsSchema, makeDirEntry } from "./kvs_schema.ts";
export { defaultTombstoneGranularityMs, defaultTombstoneTtlMs, TombstoneGc } from "./tombstone_gc.ts";
export { graveyardInsertTxn, graveyardMaxIndexTxn, graveyardReapTxn, tombstonesSchema } from "./tombstones.ts";
export type { Tombstone } from "./tombstones.ts";
export { sessionCreateTxn, sessionGetTxn, sessionsSchema } from "./session.ts";
export type { Session } from "./session.ts";
export { isReadOnlyTxn, txnDispatch } from "./txn_ops.ts";
export type { TxnOutcome } from "./txn_ops.ts";
export { concatChunks, decodeSnapshot, encodeSnapshot, snapshotVersion } from "./snapshot.ts";
export type { ByteStream, CapturedState, SnapshotRecord } from "./snapshot.ts";
