export { Agent } from "./agent.ts";
export type { AgentSelf } from "./agent.ts";
export { decodeBase64, encodeBase64 } from "./base64.ts";
export { ApiClient, ApiConnectionError, ApiError, DEFAULT_HTTP_ADDR, normalizeAddress } from "./client.ts";
export type { ApiClientOptions, QueryMeta, QueryOptions, RawRequest, RawResponse, WriteOptions } from "./client.ts";
export { decodeKVPair, escapeKey, Kv } from "./kv.ts";
export type { KvDeleteOptions, KVPair, KvPutOptions, KvTxnOp, KvTxnVerb, TxnError, TxnResponse } from "./kv.ts";
export { Status } from "./status.ts";
