export { agentSelfHandler, agentSelfJson, memberStatus } from "./agent.ts";
export type { AgentInfo, AgentMemberInfo } from "./agent.ts";
export { decodeBase64, encodeBase64 } from "./base64.ts";
export {
  defaultQueryTimeMs,
  maxQueryTimeMs,
  parseDatacenter,
  parseGoDuration,
  parseQueryOptions,
  parseToken,
  parseWriteOptions,
  setMetaHeaders,
} from "./blocking.ts";
export { errorResponse, HttpError, statusForError } from "./http_error.ts";
export { dirEntryToJson, kvMaxValueBytes, kvsHandler } from "./kvs.ts";
export type { DirEntryJson } from "./kvs.ts";
export { createRoutes, defaultMaxBodyBytes, Router } from "./routes.ts";
export type { Route, RouteDeps, RouteLookup } from "./routes.ts";
export { createHttpServer, ListenError, listenErrorMessage } from "./serve_node.ts";
export type { HttpServer, HttpServerOptions } from "./serve_node.ts";
export { statusLeaderHandler, statusPeersHandler } from "./status.ts";
export { maxTxnOps, parseTxnOps, txnHandler, txnReplyToJson } from "./txn.ts";
export type { TxnResponseJson } from "./txn.ts";
export { hasFlag, jsonResponse, makeRequest, textResponse } from "./types.ts";
export type { Handler, HttpRequest, HttpResponse } from "./types.ts";
export { catalogRoutes } from "./catalog_routes.ts";
export { decodeCheck, decodeRegister, parseNodeMeta } from "./catalog.ts";
export { parsePassing } from "./health.ts";
export { decodeSessionCreate, defaultSessionLockDelayMs, parseLockDelay, serfCheckId } from "./session.ts";
export {
  operatorRaftConfigurationHandler,
  operatorRaftMethods,
  operatorRaftPeerHandler,
  operatorRaftRoutes,
  operatorRaftTransferLeaderHandler,
  raftConfigurationJson,
} from "./operator_raft.ts";
export type { OperatorRaftBackend, RaftConfigurationJson } from "./operator_raft.ts";
