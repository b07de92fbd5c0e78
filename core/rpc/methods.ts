// The RPC contract between the front ends (HTTP, DNS, CLI through HTTP) and
// the servers. Methods are `Family.Verb` as in Consul. In-process calls and
// the network transport both carry exactly these shapes (msgpack-friendly:
// plain objects, numbers, strings, Uint8Array, no class instances).

/** Read options, parsed from `?index`, `?wait`, `?stale`, `?consistent`. */
export interface QueryOptions {
  /** Block until the result's index is greater than this (0: answer at once). */
  minQueryIndex: number;
  /** Longest block in ms (already clamped by the HTTP layer to ≤ 10 min). */
  maxQueryTimeMs: number;
  /** Any server may answer from its local state. */
  allowStale: boolean;
  /** Confirm leadership with a quorum before reading (ReadIndex). */
  requireConsistent: boolean;
  /** Target datacenter ("" or undefined: the local one). */
  datacenter?: string;
  token?: string;
}

/** Facts about a read, sent back as X-Consul-* headers. */
export interface QueryMeta {
  /** Raft index of the answer; never 0. */
  index: number;
  knownLeader: boolean;
  /** Ms since the answering server last heard from the leader (0 on the leader). */
  lastContactMs: number;
  consistencyLevel: "leader" | "stale" | "consistent";
}

export interface DirEntry {
  key: string;
  flags: number;
  /** Empty values are zero-length arrays; HTTP shows them as null. */
  value: Uint8Array;
  /** Session ID holding the lock, or "" when unlocked. */
  session: string;
  lockIndex: number;
  createIndex: number;
  modifyIndex: number;
}

export type KvsOp = "set" | "cas" | "delete" | "delete-cas" | "delete-tree" | "lock" | "unlock";

export interface KvsApplyArgs {
  op: KvsOp;
  entry: {
    key: string;
    flags?: number;
    value?: Uint8Array;
    /** For cas / delete-cas: the expected ModifyIndex (0: must not exist). */
    modifyIndex?: number;
    /** For lock / unlock. */
    session?: string;
  };
  datacenter?: string;
  token?: string;
}

export type TxnKvVerb =
  | "set" | "cas" | "lock" | "unlock" | "get" | "get-tree" | "check-index" | "check-session"
  | "check-not-exists" | "delete" | "delete-tree" | "delete-cas";

export interface TxnKvOp {
  verb: TxnKvVerb;
  key: string;
  value?: Uint8Array;
  flags?: number;
  index?: number;
  session?: string;
}

export interface TxnOp {
  kv: TxnKvOp;
}

export interface TxnResult {
  kv: DirEntry;
}

export interface TxnError {
  opIndex: number;
  what: string;
}

export interface TxnReply {
  results: TxnResult[];
  errors: TxnError[];
  /** Raft index of the transaction when it wrote. */
  index: number;
}

/** Every RPC method with its argument and reply types. */
export interface RpcMethods {
  "KVS.Apply": { args: KvsApplyArgs; reply: { ok: boolean; index: number } };
  "KVS.Get": { args: { key: string; query: QueryOptions }; reply: { entries: DirEntry[]; meta: QueryMeta } };
  "KVS.List": { args: { prefix: string; query: QueryOptions }; reply: { entries: DirEntry[]; meta: QueryMeta } };
  "KVS.ListKeys": {
    args: { prefix: string; separator: string; query: QueryOptions };
    reply: { keys: string[]; meta: QueryMeta };
  };
  /** Read-only transactions may be served like reads (stale allowed). */
  "Txn.Apply": { args: { ops: TxnOp[]; datacenter?: string; token?: string }; reply: TxnReply };
  /** "ip:port" of the leader's server RPC address, or "" when none is known. */
  "Status.Leader": { args: { datacenter?: string }; reply: string };
  "Status.Peers": { args: { datacenter?: string }; reply: string[] };
}

export type RpcMethod = keyof RpcMethods;
export type RpcArgs<M extends RpcMethod> = RpcMethods[M]["args"];
export type RpcReply<M extends RpcMethod> = RpcMethods[M]["reply"];

/** Something that answers RPCs: the local server, or a forwarder to one. */
export interface Rpc {
  call<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal }): Promise<RpcReply<M>>;
}

/** One handler per method: what a server implements and a transport dispatches to. */
export type RpcHandlers = {
  [M in RpcMethod]: (args: RpcArgs<M>, options?: { signal?: AbortSignal }) => Promise<RpcReply<M>>;
};
