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
export type {
  GossipBackend,
  GossipPoolBackend,
  HttpBackends,
  KeyringBackend,
  KeyringPoolResponse,
  LocalAgentBackend,
  LocalStateView,
  MonitorBackend,
  PoolMember,
  PoolMemberStatus,
  UserEvent,
  UserEventsBackend,
} from "./backends.ts";
export { allowAll, cleanPath, defaultMaxBodyBytes, Router } from "./router.ts";
export type { AuthzAccess, AuthzDecision, AuthzRequirement, AuthzResource, Route, RouteAuthorizer, RouteAuthz, RouteLookup } from "./router.ts";
export { createRoutes } from "./routes.ts";
export { uiContentPath, uiHandler, uiRootRedirectHandler } from "./ui.ts";
export type { UiBackend } from "./ui.ts";
export { packUiFiles, unpackUiFiles } from "./ui_pack.ts";
export type { UiFile } from "./ui_pack.ts";
export { seaUiFiles, uiAssetName } from "./ui_assets_node.ts";
export { memberStatusCode, poolStatsStrings } from "./members.ts";
export { createHttpServer, ListenError, listenErrorMessage } from "./serve_node.ts";
export type { HttpServer, HttpServerOptions } from "./serve_node.ts";
export { statusLeaderHandler, statusPeersHandler } from "./status.ts";
export { maxTxnOps, parseTxnOps, txnHandler, txnReplyToJson } from "./txn.ts";
export type { TxnResponseJson } from "./txn.ts";
export { hasFlag, jsonResponse, makeRequest, textResponse } from "./types.ts";
export type { Handler, HttpRequest, HttpResponse } from "./types.ts";
export { decodeCheck, decodeRegister, parseNodeMeta } from "./catalog.ts";
export { parsePassing } from "./health.ts";
export { decodeSessionCreate, defaultSessionLockDelayMs, parseLockDelay, serfCheckId } from "./session.ts";
export {
  operatorRaftConfigurationHandler,
  operatorRaftPeerHandler,
  operatorRaftTransferLeaderHandler,
  raftConfigurationJson,
} from "./operator_raft.ts";
export type { RaftConfigurationJson } from "./operator_raft.ts";
