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
export { defaultLockDelayMs, makeSession, sessionCreateTxn, sessionGetTxn, sessionsSchema } from "./session.ts";
export {
  kvsLockDelayUntil,
  nodeSessionsTxn,
  sessionCreateFullTxn,
  sessionGetReadTxn,
  sessionInvalidateTxn,
  sessionListTxn,
} from "./session_ops.ts";
export type { SessionCreate } from "./session_ops.ts";
export {
  catalogMaxIndex,
  checkServiceNodesTxn,
  checksInStateTxn,
  deregisterTxn,
  isCheckStatus,
  nodeChecksTxn,
  nodeServicesTxn,
  nodesTxn,
  nodeTxn,
  registerTxn,
  serviceChecksTxn,
  serviceMaxIndex,
  serviceNodesTxn,
  servicesTxn,
} from "./catalog.ts";
export type { WriteClock } from "./catalog.ts";
export { checksSchema, nodesSchema, servicesByNameSchema, servicesSchema } from "./catalog_schema.ts";
export type { IndexRow, ServiceRow } from "./catalog_schema.ts";
export { applyDeregisterCommand, applyRegisterCommand, applySessionCommand } from "./catalog_commands.ts";
export type { DeregisterCommand, RegisterCommand, SessionCommand } from "./catalog_commands.ts";
export {
  checkServiceNodeToJson,
  formatGoDurationMs,
  healthCheckToJson,
  nodeServicesToJson,
  nodeServiceToJson,
  nodeToJson,
  serviceNodeToJson,
  sessionToJson,
} from "./catalog_json.ts";
export type { Session } from "./session.ts";
export { isReadOnlyTxn, txnDispatch } from "./txn_ops.ts";
export type { TxnOutcome } from "./txn_ops.ts";
export { decodeSnapshot, encodeSnapshot, snapshotVersion } from "./snapshot.ts";
export type { ByteStream, CapturedState, SnapshotFrames, SnapshotRecord } from "./snapshot.ts";
export {
  applyPreparedQueryCommand,
  isUuid,
  makePreparedQuery,
  preparedQueriesDeleteBySessionTxn,
  preparedQueriesSchema,
  preparedQueryBodyFrom,
  preparedQueryDeleteTxn,
  preparedQueryGetTxn,
  preparedQueryListTxn,
  preparedQueryResolveOrThrow,
  preparedQueryResolveTxn,
  preparedQuerySetProblem,
  preparedQuerySetTxn,
  queryNotFoundMessage,
} from "./prepared_query.ts";
export type { PreparedQueryCommand } from "./prepared_query.ts";
export { compileTemplate, goRegexp, isTemplate, parseInterpolation, renderTemplate, templateMatches } from "./prepared_query_template.ts";
export { preparedQueryToJson } from "./prepared_query_json.ts";
