// The RPC contract between the front ends (HTTP, DNS, CLI through HTTP) and
// the servers. Methods are `Family.Verb` as in Consul. In-process calls and
// the network transport both carry exactly these shapes (msgpack-friendly:
// plain objects, numbers, strings, Uint8Array, no class instances).

import type { RequestId } from "../state/requests.ts";
export type { RequestId } from "../state/requests.ts";

/**
 * The request context of a read, parsed once at the edge (core/http/blocking.ts
 * parseQueryOptions for HTTP; the DNS server and the CLI build the same):
 * `?index`, `?wait`, `?stale`, `?max_stale`, `?consistent`, `?dc`, the token,
 * `?filter`, `?near`.
 */
export interface QueryOptions {
  /** Block until the result's index is greater than this (0: answer at once). */
  minQueryIndex: number;
  /** Longest block in ms (already clamped by the HTTP layer to ≤ 10 min). */
  maxQueryTimeMs: number;
  /** Any server may answer from its local state. */
  allowStale: boolean;
  /** Confirm leadership with a quorum before reading (ReadIndex). */
  requireConsistent: boolean;
  /**
   * `?max_stale`: a stale answer whose server last heard from the leader
   * longer ago than this is asked again of the leader (once). 0/undefined: any age.
   */
  maxStaleMs?: number;
  /** Target datacenter ("" or undefined: the local one). */
  datacenter?: string;
  token?: string;
  /** `?filter`: a filter expression over the result rows (core/filter). */
  filter?: string;
  /** `?near`: sort by round-trip time from this node ("_agent": the answering agent). */
  near?: string;
}

/** Facts about a read, sent back as X-Consul-* headers. */
export interface QueryMeta {
  /** Raft index of the answer; never 0. */
  index: number;
  knownLeader: boolean;
  /** Ms since the answering server last heard from the leader (0 on the leader). */
  lastContactMs: number;
  /** Items the token may not read were left out (X-Consul-Results-Filtered-By-ACLs). */
  resultsFilteredByAcls?: boolean;
  consistencyLevel: "leader" | "stale" | "consistent";
}

/**
 * A KV entry's flags: Consul's uint64. A number up to 2^53 - 1; above that
 * the exact decimal digits (Terraform's consul backend locks with
 * 0x2ddccbc058a50c18 and compares it on read), which msgpack and JSON
 * carry unchanged.
 */
export type KvFlags = number | string;

const maxUint64 = 18446744073709551615n;

/** Whether a value is valid KV flags (a safe non-negative integer, or the digits of a larger uint64). */
export function isKvFlags(v: unknown): v is KvFlags {
  if (typeof v === "number") return Number.isSafeInteger(v) && v >= 0;
  return typeof v === "string" && /^\d{16,20}$/.test(v) && BigInt(v) > BigInt(Number.MAX_SAFE_INTEGER) && BigInt(v) <= maxUint64 && !v.startsWith("0");
}

/** Decimal text (a query parameter, JSON digits) as KV flags; undefined when it is not a uint64. */
export function parseKvFlags(text: string): KvFlags | undefined {
  if (!/^\d+$/.test(text)) return undefined;
  const n = BigInt(text);
  if (n > maxUint64) return undefined;
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

export interface DirEntry {
  key: string;
  flags: KvFlags;
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
    flags?: KvFlags;
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
  | "set" | "cas" | "lock" | "unlock" | "get" | "get-or-empty" | "get-tree" | "check-index" | "check-session"
  | "check-not-exists" | "delete" | "delete-tree" | "delete-cas";

/** The verbs of Node, Service and Check operations in a transaction (consul api.NodeOp, ServiceOp, CheckOp). */
export type TxnCatalogVerb = "set" | "cas" | "get" | "delete" | "delete-cas";

export interface TxnKvOp {
  verb: TxnKvVerb;
  key: string;
  value?: Uint8Array;
  flags?: KvFlags;
  index?: number;
  session?: string;
}

/** A node in a transaction (structs.TxnNodeOp): found by ID when one is given, else by name; `modifyIndex` for cas and delete-cas. */
export interface TxnNodeOp {
  verb: TxnCatalogVerb;
  node: {
    id?: string;
    node: string;
    address?: string;
    datacenter?: string;
    taggedAddresses?: Record<string, string>;
    meta?: Record<string, string>;
    modifyIndex?: number;
  };
}

/** A service instance on a node (structs.TxnServiceOp); `service.modifyIndex` for cas and delete-cas. */
export interface TxnServiceOp {
  verb: TxnCatalogVerb;
  node: string;
  service: NodeServiceInput & { modifyIndex?: number };
}

/** A health check (structs.TxnCheckOp); `check.node` names its node, `check.modifyIndex` is for cas and delete-cas. */
export interface TxnCheckOp {
  verb: TxnCatalogVerb;
  check: Omit<HealthCheckInput, "name"> & { name?: string; node: string; modifyIndex?: number };
}

/** One operation: exactly one of its fields is set (Consul's TxnOp). */
export interface TxnOp {
  kv?: TxnKvOp;
  node?: TxnNodeOp;
  service?: TxnServiceOp;
  check?: TxnCheckOp;
}

/** One result: the field of the operation's kind. */
export interface TxnResult {
  kv?: DirEntry;
  node?: Node;
  service?: NodeService;
  check?: HealthCheck;
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
  /** Read-only transactions: the read's meta (index, leader contact, consistency). */
  meta?: QueryMeta;
}

// ---- Catalog, health and sessions (Consul's structs, camelCase) ----

/** Read options shared by the catalog, health and session list reads. */
export interface CatalogQueryArgs {
  query: QueryOptions;
  /** A filter expression (Consul's `?filter=`, go-bexpr syntax) over the HTTP JSON field names of each result. */
  filter?: string;
  /** `?node-meta=key:value` pairs; every pair must match the node's meta. */
  nodeMetaFilters?: Record<string, string>;
}

export interface Node {
  /** Node UUID ("" when the registration gave none). */
  id: string;
  node: string;
  address: string;
  datacenter: string;
  /** e.g. { lan: "10.0.0.1", wan: "198.51.100.1" } */
  taggedAddresses: Record<string, string>;
  meta: Record<string, string>;
  createIndex: number;
  modifyIndex: number;
}

export interface ServiceAddress {
  address: string;
  port: number;
}

/** DNS SRV weights of a service instance by health (Consul default {passing: 1, warning: 1}). */
export interface Weights {
  passing: number;
  warning: number;
}

/** One service instance on one node (Consul `structs.NodeService`). */
export interface NodeService {
  /** "" for a typical service (Consul `Kind`). */
  kind: string;
  /** Instance ID, unique per node (defaults to the service name). */
  id: string;
  /** Service name. */
  service: string;
  tags: string[];
  /** "" means: use the node's address. */
  address: string;
  taggedAddresses: Record<string, ServiceAddress>;
  meta: Record<string, string>;
  port: number;
  weights: Weights;
  enableTagOverride: boolean;
  createIndex: number;
  modifyIndex: number;
}

/** A catalog service entry: the node and one of its service instances (HTTP flattens it: `ServiceID`, `ServicePort`, …). */
export interface ServiceNode {
  node: Node;
  service: NodeService;
}

export type CheckStatus = "passing" | "warning" | "critical";

/** How a check runs (Consul `structs.HealthCheckDefinition`); all optional. */
export interface HealthCheckDefinition {
  http?: string;
  tlsServerName?: string;
  tlsSkipVerify?: boolean;
  header?: Record<string, string[]>;
  method?: string;
  body?: string;
  tcp?: string;
  grpc?: string;
  grpcUseTls?: boolean;
  intervalMs?: number;
  timeoutMs?: number;
  deregisterCriticalServiceAfterMs?: number;
}

export interface HealthCheck {
  node: string;
  checkId: string;
  name: string;
  status: CheckStatus;
  notes: string;
  output: string;
  /** "" for a node-level check. */
  serviceId: string;
  /** Denormalised from the service on write. */
  serviceName: string;
  serviceTags: string[];
  /** "ttl", "http", "tcp", "script", "serf", … ("" when unknown). */
  type: string;
  /** Go duration strings as Consul shows them ("10s", or ""). */
  interval: string;
  timeout: string;
  definition: HealthCheckDefinition;
  createIndex: number;
  modifyIndex: number;
}

/** A health service entry: node, service instance and every check that applies (node checks + service checks). */
export interface CheckServiceNode {
  node: Node;
  service: NodeService;
  checks: HealthCheck[];
}

export type SessionBehavior = "release" | "delete";

export interface ServiceCheckRef {
  id: string;
  namespace?: string;
}

export interface Session {
  id: string;
  name: string;
  node: string;
  /** Lock delay in ms (Consul default 15 s); HTTP shows it in ns. */
  lockDelayMs: number;
  behavior: SessionBehavior;
  /** Go duration string ("30s") or "" for no TTL. */
  ttl: string;
  /** Node-level check IDs the session is bound to (Consul default ["serfHealth"]). */
  nodeChecks: string[];
  serviceChecks: ServiceCheckRef[];
  createIndex: number;
  modifyIndex: number;
}

/** A service instance to register; omitted fields take Consul's defaults (id = service, weights {1, 1}, …). */
export type NodeServiceInput = Partial<Omit<NodeService, "createIndex" | "modifyIndex">> & { service: string };

/** A check to register; `checkId` defaults to `name`, `status` to "critical", `node` to the registration's node. */
export type HealthCheckInput = Partial<Omit<HealthCheck, "createIndex" | "modifyIndex" | "serviceName" | "serviceTags">> & {
  name: string;
};

/** Consul `structs.RegisterRequest`: upsert the node, then optionally a service and checks. */
export interface CatalogRegisterArgs {
  node: string;
  id?: string;
  address: string;
  taggedAddresses?: Record<string, string>;
  nodeMeta?: Record<string, string>;
  service?: NodeServiceInput;
  check?: HealthCheckInput;
  checks?: HealthCheckInput[];
  /** Leave the node's own fields as they are (anti-entropy of a service only). */
  skipNodeUpdate?: boolean;
  datacenter?: string;
  token?: string;
}

/** Consul `structs.DeregisterRequest`: with neither serviceId nor checkId the whole node goes (with its services, checks and sessions). */
export interface CatalogDeregisterArgs {
  node: string;
  serviceId?: string;
  checkId?: string;
  datacenter?: string;
  token?: string;
}

/** Fields for Session.Apply create; defaults are applied by the HTTP layer (node = agent's node, lock delay 15 s, behavior release, nodeChecks ["serfHealth"]). */
export type SessionInput = Partial<Omit<Session, "createIndex" | "modifyIndex">>;

export interface SessionApplyArgs {
  op: "create" | "destroy";
  /** For destroy only `id` matters. */
  session: SessionInput;
  datacenter?: string;
  token?: string;
}

// ---- Prepared queries (Consul structs.PreparedQuery, camelCase) ----

/** Consul's only template type: the query's Name is a prefix of the names it answers. */
export const queryTemplateTypeNamePrefixMatch = "name_prefix_match";

export interface PreparedQueryTemplate {
  /** "" for a static query, else "name_prefix_match". */
  type: string;
  /** Go regexp run over the looked-up name; its groups are `${match(N)}`. */
  regexp: string;
  /** Drop tags that render to "". */
  removeEmptyTags: boolean;
}

export interface QueryFailover {
  nearestN: number;
  datacenters: string[];
}

/** Consul structs.ServiceQuery. */
export interface ServiceQuery {
  service: string;
  /** When the local datacenter has no healthy instance: the NearestN other datacenters by RTT, then Datacenters in order. */
  failover: QueryFailover;
  ignoreCheckIds: string[];
  onlyPassing: boolean;
  /** Sort by RTT from this node ("_agent": the agent that asked). */
  near: string;
  /** Required tags; "!tag" excludes. Case-insensitive. */
  tags: string[];
  nodeMeta: Record<string, string>;
  serviceMeta: Record<string, string>;
  connect: boolean;
}

export interface PreparedQuery {
  id: string;
  name: string;
  /** A session whose invalidation deletes the query ("" for none). */
  session: string;
  token: string;
  template: PreparedQueryTemplate;
  service: ServiceQuery;
  dns: { ttl: string };
  createIndex: number;
  modifyIndex: number;
}

/** A query without indexes: what Apply carries. */
export type PreparedQueryBody = Omit<PreparedQuery, "createIndex" | "modifyIndex">;

export interface PreparedQueryApplyArgs {
  op: "create" | "update" | "delete";
  /** Create: id must be ""; delete: only id matters. */
  query: PreparedQueryBody;
  datacenter?: string;
  token?: string;
}

export interface PreparedQueryExecuteArgs {
  queryIdOrName: string;
  /** Keep at most this many nodes (0: all). */
  limit?: number;
  /** `?near`: sort by RTT from this node; "" uses the query's Near. */
  near?: string;
  /** The agent that asked: `_agent` means this node. */
  agent: { node: string; datacenter: string };
  query: QueryOptions;
}

/** A query run in another datacenter during a failover (consul PreparedQueryExecuteRemoteRequest): the definition travels with it. */
export interface PreparedQueryExecuteRemoteArgs {
  /** The query as the first datacenter resolved (and rendered) it. */
  definition: PreparedQuery;
  limit?: number;
  /** `query.datacenter` names the datacenter that runs it. */
  query: QueryOptions;
}

export interface PreparedQueryExecuteReply {
  /** The (rendered) service name that was queried. */
  service: string;
  nodes: CheckServiceNode[];
  dns: { ttl: string };
  /** The datacenter that answered (another one after a failover). */
  datacenter: string;
  /** How many other datacenters were tried (0: the local one answered). */
  failovers: number;
  meta: QueryMeta;
}

/** A Vivaldi network coordinate (Serf's coordinate.Coordinate; HTTP: Vec, Error, Adjustment, Height). */
export interface VivaldiCoord {
  vec: number[];
  error: number;
  adjustment: number;
  height: number;
}

/** A node's LAN coordinate in one network segment ("" outside Enterprise segments), as the catalog keeps it. */
export interface CoordinateEntry {
  node: string;
  segment: string;
  coord: VivaldiCoord;
}

/** ACL objects the servers keep (core/state/acl.ts). */
export type AclKind = "token" | "policy" | "role";

/** A change to tokens, policies or roles; `item` is the object in camelCase (core/state/acl.ts fields). */
export interface AclWriteArgs {
  kind: AclKind;
  op: "create" | "update" | "delete" | "clone";
  item?: Record<string, unknown>;
  /** delete and clone: the AccessorID or policy/role ID. */
  id?: string;
  datacenter?: string;
  token?: string;
}

/** A read of tokens, policies or roles. */
export interface AclReadArgs {
  kind: AclKind;
  /** get: by `id`; name: by `name` (policies, roles); self: the token of `query.token`; list: all, or those linking `policy` / `role`. */
  op: "get" | "name" | "self" | "list";
  id?: string;
  name?: string;
  policy?: string;
  role?: string;
  /** Token lists: false leaves out local tokens (what a secondary datacenter replicates); default true. */
  includeLocal?: boolean;
  query: QueryOptions;
}

/** What a token may do, for an agent to decide requests itself (cached for acl.token_ttl). */
export interface AclResolveReply {
  accessorId: string;
  /** Rule texts of every policy the token links (directly, through roles, from identities). */
  rules: string[];
  /** The servers' acl.default_policy is allow. */
  defaultAllow: boolean;
}

/** A token to resolve; `scope` is the datacenter whose view the rules are for (a secondary asking the primary). */
export interface AclResolveArgs {
  secret: string;
  datacenter?: string;
  /** Policies limited to other datacenters and node identities of others leave out; default: the answering server's. */
  scope?: string;
}

/** ACL replication in a secondary datacenter, as its leader runs it (consul structs.ACLReplicationStatus). */
export interface AclReplicationStatus {
  enabled: boolean;
  running: boolean;
  sourceDatacenter: string;
  /** "policies" (token replication off) or "tokens"; "" when not enabled. */
  replicationType: string;
  replicatedIndex: number;
  replicatedRoleIndex: number;
  replicatedTokenIndex: number;
  /** Wall-clock ms of the last successful round, of the last failed one; 0: never. */
  lastSuccessMs: number;
  lastErrorMs: number;
  lastErrorMessage: string;
}

/** Every RPC method with its argument and reply types. */
export interface RpcMethods {
  /** ACLs (consul agent/consul/acl_endpoint.go): bootstrap, token/policy/role reads and writes, token resolution. */
  "ACL.Bootstrap": { args: { datacenter?: string }; reply: Record<string, unknown> };
  "ACL.Write": { args: AclWriteArgs; reply: { item?: Record<string, unknown>; deleted?: boolean; index: number } };
  "ACL.Read": { args: AclReadArgs; reply: { items: Record<string, unknown>[]; meta: QueryMeta } };
  "ACL.Resolve": { args: AclResolveArgs; reply: AclResolveReply };
  "ACL.ReplicationStatus": { args: { query: QueryOptions }; reply: AclReplicationStatus };
  "KVS.Apply": { args: KvsApplyArgs; reply: { ok: boolean; index: number } };
  "KVS.Get": { args: { key: string; query: QueryOptions }; reply: { entries: DirEntry[]; meta: QueryMeta } };
  "KVS.List": { args: { prefix: string; query: QueryOptions }; reply: { entries: DirEntry[]; meta: QueryMeta } };
  "KVS.ListKeys": {
    args: { prefix: string; separator: string; query: QueryOptions };
    reply: { keys: string[]; meta: QueryMeta };
  };
  /** Read-only transactions may be served like reads (stale allowed). */
  /** `query` applies to read-only transactions (stale/consistent), as Consul's Txn.Read. */
  "Txn.Apply": { args: { ops: TxnOp[]; datacenter?: string; token?: string; query?: QueryOptions }; reply: TxnReply };
  /** "ip:port" of the leader's server RPC address, or "" when none is known. */
  "Status.Leader": { args: { datacenter?: string }; reply: string };
  "Status.Peers": { args: { datacenter?: string }; reply: string[] };
  "Catalog.Register": { args: CatalogRegisterArgs; reply: { index: number } };
  "Catalog.Deregister": { args: CatalogDeregisterArgs; reply: { index: number } };
  /** Known datacenters, the local one first. */
  "Catalog.ListDatacenters": { args: Record<string, never>; reply: string[] };
  "Catalog.ListNodes": { args: CatalogQueryArgs; reply: { nodes: Node[]; meta: QueryMeta } };
  /** Service name → union of its instances' tags; with `withInstanceCounts`, also name → instance count (the web UI's list). */
  "Catalog.ListServices": { args: CatalogQueryArgs & { withInstanceCounts?: boolean }; reply: { services: Record<string, string[]>; instances?: Record<string, number>; meta: QueryMeta } };
  /** Instances of one service; `serviceTags` must all be present on an instance. */
  "Catalog.ServiceNodes": {
    args: CatalogQueryArgs & { serviceName: string; serviceTags?: string[] };
    reply: { serviceNodes: ServiceNode[]; meta: QueryMeta };
  };
  /** One node and its services; `nodeServices` is null when the node is unknown. */
  "Catalog.NodeServices": {
    args: CatalogQueryArgs & { node: string };
    reply: { nodeServices: { node: Node; services: NodeService[] } | null; meta: QueryMeta };
  };
  "Health.NodeChecks": { args: CatalogQueryArgs & { node: string }; reply: { checks: HealthCheck[]; meta: QueryMeta } };
  "Health.ServiceChecks": {
    args: CatalogQueryArgs & { serviceName: string };
    reply: { checks: HealthCheck[]; meta: QueryMeta };
  };
  /** `passingOnly`: drop instances with any warning or critical check. */
  "Health.ServiceNodes": {
    args: CatalogQueryArgs & { serviceName: string; serviceTags?: string[]; passingOnly?: boolean };
    reply: { nodes: CheckServiceNode[]; meta: QueryMeta };
  };
  "Health.ChecksInState": {
    args: CatalogQueryArgs & { state: CheckStatus | "any" };
    reply: { checks: HealthCheck[]; meta: QueryMeta };
  };
  /** Create answers the new session's ID; destroy answers the ID it was given. */
  "Session.Apply": { args: SessionApplyArgs; reply: { id: string; index: number } };
  "Session.Get": { args: CatalogQueryArgs & { sessionId: string }; reply: { sessions: Session[]; meta: QueryMeta } };
  "Session.List": { args: CatalogQueryArgs; reply: { sessions: Session[]; meta: QueryMeta } };
  "Session.NodeSessions": { args: CatalogQueryArgs & { node: string }; reply: { sessions: Session[]; meta: QueryMeta } };
  /** The whole state as a snapshot archive (core/server/snapshot_archive.ts); `allowStale` lets any server answer. */
  "Snapshot.Save": {
    /** Without `streamId`: start a save; with it: pull the chunk at `offset` from `server`'s stream (core/server/snapshot.ts). */
    args: { datacenter?: string; token?: string; allowStale?: boolean; streamId?: string; offset?: number; server?: string };
    /** `archive` is the chunk at `offset`; `done` once it is the last. */
    reply: { index: number; archive: Uint8Array; done?: boolean; offset?: number; streamId?: string; server?: string };
  };
  /** Replace the whole state with an archive's, through Raft's snapshot installation (hashicorp/raft Restore). */
  "Snapshot.Restore": {
    /**
     * The archive in chunks pushed in order (`offset`, `streamId` from the
     * first reply), the last with `done`; or whole, without `streamId`. A
     * chunk may come as its parts, end to end (the HTTP upload's pieces, not
     * joined: msgpack sends them as an array of bins).
     */
    args: { datacenter?: string; token?: string; archive: Uint8Array | Uint8Array[]; streamId?: string; offset?: number; done?: boolean; server?: string };
    /** `index` is set (non-zero) by the reply to the last chunk. */
    reply: { index: number; streamId?: string; server?: string; received?: number };
  };
  /** Reset the TTL timer (leader only); `sessions` is empty when the session does not exist. */
  "Session.Renew": {
    args: { sessionId: string; datacenter?: string; token?: string };
    reply: { sessions: Session[]; meta: QueryMeta };
  };
  /** Create answers the new query's ID; update and delete the ID they were given. */
  "PreparedQuery.Apply": { args: PreparedQueryApplyArgs; reply: { id: string; index: number } };
  /** `queries` is [query]; an unknown ID is a NotFoundError ("Query not found"). */
  "PreparedQuery.Get": { args: CatalogQueryArgs & { queryId: string }; reply: { queries: PreparedQuery[]; meta: QueryMeta } };
  "PreparedQuery.List": { args: CatalogQueryArgs; reply: { queries: PreparedQuery[]; meta: QueryMeta } };
  /** The query an ID or name resolves to, rendered when it is a template. */
  "PreparedQuery.Explain": { args: PreparedQueryExecuteArgs; reply: { query: PreparedQuery; meta: QueryMeta } };
  "PreparedQuery.Execute": { args: PreparedQueryExecuteArgs; reply: PreparedQueryExecuteReply };
  /** Run a query definition here, without failover: the other datacenter's half of a failover. */
  "PreparedQuery.ExecuteRemote": { args: PreparedQueryExecuteRemoteArgs; reply: PreparedQueryExecuteReply };
  /** Queue a node's coordinate on the leader; it reaches the catalog with the next batch (coordinate_update_period). */
  "Coordinate.Update": { args: { node: string; segment?: string; coord: VivaldiCoord; datacenter?: string; token?: string }; reply: Record<string, never> };
  /** Every node's coordinates in the catalog, by node name. */
  "Coordinate.ListNodes": { args: { query: QueryOptions }; reply: { coordinates: CoordinateEntry[]; meta: QueryMeta } };
  /** One node's coordinates (one per segment); empty when it has none. */
  "Coordinate.Node": { args: { node: string; query: QueryOptions }; reply: { coordinates: CoordinateEntry[]; meta: QueryMeta } };
}

export type RpcMethod = keyof RpcMethods;
export type RpcArgs<M extends RpcMethod> = RpcMethods[M]["args"];
export type RpcReply<M extends RpcMethod> = RpcMethods[M]["reply"];

/** Something that answers RPCs: the local server, or a forwarder to one. */
export interface Rpc {
  call<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal }): Promise<RpcReply<M>>;
}

/**
 * Operator methods outside the typed contract (consul Operator.Raft*,
 * Operator.Autopilot*, Operator.ServerHealth): a
 * server serves them by name (core/agent/server_node.ts) and callers send
 * them with `callRaw`, untyped; the HTTP layer shapes args and replies.
 */
export const operatorRaftMethods = {
  getConfiguration: "Operator.RaftGetConfiguration",
  removePeer: "Operator.RaftRemovePeer",
  transferLeader: "Operator.RaftTransferLeader",
  autopilotGetConfiguration: "Operator.AutopilotGetConfiguration",
  autopilotSetConfiguration: "Operator.AutopilotSetConfiguration",
  serverHealth: "Operator.ServerHealth",
} as const;

/** Calls a method by name with untyped args: how operator methods travel (core/rpc/forward.ts `RpcRouter` fits). */
export interface OperatorRaftRpc {
  callRaw(method: string, args: unknown, options?: { signal?: AbortSignal }): Promise<unknown>;
}

/**
 * What a handler gets beside its args: the caller's abort signal, and for a
 * write the request id it rides with (args.requestId, checked by the server).
 */
export interface HandlerOptions {
  signal?: AbortSignal;
  requestId?: RequestId;
  /** A call this server makes itself (leader duties): no ACL check. Never set from a peer's frame. */
  internal?: boolean;
}

/** One handler per method: what a server implements and a transport dispatches to. */
export type RpcHandlers = {
  [M in RpcMethod]: (args: RpcArgs<M>, options?: HandlerOptions) => Promise<RpcReply<M>>;
};

/**
 * Methods that change state through the Raft log. The first RPC router a
 * request meets gives each call of these a request id (`args.requestId`), so
 * the FSM applies it once however often it is sent.
 */
export const writeMethods: ReadonlySet<string> = new Set<RpcMethod>([
  "ACL.Bootstrap",
  "ACL.Write",
  "KVS.Apply",
  "Txn.Apply",
  "Catalog.Register",
  "Catalog.Deregister",
  "Session.Apply",
  "PreparedQuery.Apply",
  "Snapshot.Restore",
]);
