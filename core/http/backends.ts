// What the HTTP API needs from the rest of the agent, declared here (the
// consumer owns the interface, as Consul's HTTPHandlers reaches its agent
// through a few narrow methods). core/agent/agent.ts hands over its parts,
// which fit structurally; core/http imports nothing from core/agent.
import type { Clock } from "../clock/mod.ts";
import type { Coordinate } from "../gossip/coordinate.ts";
import type { FanoutSink, Logger, RecentSink } from "../log/mod.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { OperatorRaftRpc, Rpc } from "../rpc/mod.ts";
import type { CheckDefinition, DefinitionSource, HealthStatus, LocalCheck, LocalService, ServiceDefinition } from "../service_defs/mod.ts";
import type { AgentInfo } from "./agent.ts";
import type { AgentDebugBackend } from "./agent_debug.ts";
import type { AuditSink, RouteAuthorizer } from "./router.ts";
import type { AgentTokens } from "./acl.ts";
import type { QueryTimes } from "../server/blocking.ts";
import type { UiBackend } from "./ui.ts";

/** Everything createRoutes wires into the /v1 table. */
export interface HttpBackends {
  /** The servers' RPC (forwarded to the leader or another datacenter by the router behind it). */
  rpc: Rpc;
  /** /v1/agent/self. */
  agent: AgentInfo;
  /** /v1/agent/service*, check*, maintenance, health/service: the agent's own services and checks. */
  local: LocalAgentBackend;
  /** /v1/agent/members, join, leave, force-leave, /v1/coordinate/*, /v1/operator/keyring, `?near`. */
  gossip: GossipBackend;
  /** /v1/event/*. */
  events: UserEventsBackend;
  /** /v1/operator/raft/*: a server's own RPC router, `-dev`'s in-process endpoints, or a client's RPC to a server. */
  operator: OperatorRaftRpc;
  /** /v1/agent/monitor. */
  monitor: MonitorBackend;
  /** consul.api.http timings of every route, and /v1/agent/metrics. */
  metrics: Metrics;
  /** telemetry.prometheus_retention_time > 0: /v1/agent/metrics?format=prometheus answers (415 otherwise). */
  prometheus: boolean;
  /** Timers for the agent endpoints' `?hash=` blocking. */
  clock: Clock;
  /** PUT /v1/agent/reload: re-read the config files and apply them; absent: 500. */
  reload?: () => Promise<void>;
  /** Called after a graceful leave through the API (the agent then shuts down, as Consul's does). */
  onLeave?: () => void;
  /** KV value limit (Consul kv_max_value_size), default 512 KiB. */
  kvMaxValueBytes?: number;
  /** /v1/txn body limit (Consul limits.txn_max_req_len), default 512 KiB. */
  txnMaxRequestBytes?: number;
  /** translate_wan_addrs: catalog and health answers for another datacenter show its wan addresses. */
  translateWanAddrs?: boolean;
  /** disable_coordinates: /v1/coordinate/* answer 401 "Coordinate support disabled" (Consul checkCoordinateDisabled). */
  disableCoordinates?: boolean;
  /** Blocking waits (Consul default_query_time, max_query_time), default 5 and 10 minutes. */
  queryTimes?: QueryTimes;
  /** Consul discovery_max_stale: catalog and health reads are stale by default, up to this age. */
  discoveryMaxStaleMs?: number;
  /** /v1/agent/host and /v1/agent/debug/* (core/agent/debug_node.ts); absent: they answer 500. */
  debug?: AgentDebugBackend;
  /** ui_config.enabled: the web UI at its content path, and "/" redirecting there (ui.ts). */
  ui?: UiBackend;
  /** Decides every route's authorization rule before its handler; default: allow all (no ACLs). */
  authorizer?: RouteAuthorizer;
  /** `acl {}` at this agent: /v1/acl/* (401 when off), the agent's tokens, the default policy header. */
  acl?: { enabled: boolean; defaultPolicy: string; tokens?: AgentTokens; defaultToken?: () => string };
  /** `audit {}`: one entry per answered request. */
  audit?: AuditSink;
  logger?: Logger;
}

// ---------------------------------------------------------------------------
// The local agent (core/local/local_agent.ts LocalAgent fits)

/** Read side of the agent's local state. */
export interface LocalStateView {
  services(): LocalService[];
  service(id: string): LocalService | undefined;
  servicesByName(name: string): LocalService[];
  checks(): LocalCheck[];
  /** The service's checks, plus the node's when `includeNode`. */
  checksForService(serviceId: string, includeNode: boolean): LocalCheck[];
  /** Subscribe to every change; returns the unsubscribe function. */
  onChange(fn: () => void): () => void;
}

/** The agent's own services and checks. Refusals are CairnErrors (BadRequestError for bad definitions). */
export interface LocalAgentBackend {
  readonly state: LocalStateView;
  addService(def: ServiceDefinition, options?: { source?: DefinitionSource; replaceExistingChecks?: boolean; token?: string }): void;
  removeService(id: string): void;
  addCheck(def: CheckDefinition, options?: { source?: DefinitionSource; token?: string }): void;
  removeCheck(id: string): void;
  updateTtlCheck(id: string, status: HealthStatus, output: string): void;
  enableServiceMaintenance(serviceId: string, reason: string): void;
  disableServiceMaintenance(serviceId: string): void;
  enableNodeMaintenance(reason: string): void;
  disableNodeMaintenance(): void;
  /** Push pending changes to the catalog (Consul's syncChanges); failures are logged and retried, not thrown. */
  syncChanges(): Promise<void>;
}

// ---------------------------------------------------------------------------
// Gossip (core/pool/ AgentGossip fits)

export type PoolMemberStatus = "alive" | "leaving" | "left" | "failed";

/** A gossip pool member as /v1/agent/members shows it (Serf's Member). */
export interface PoolMember {
  /** Node name (WAN pool: `<node>.<dc>`). */
  readonly name: string;
  readonly addr: string;
  readonly port: number;
  /** Consul's Serf tags: role, dc, id, vsn, build, segment, … */
  readonly tags: Readonly<Record<string, string>>;
  readonly status: PoolMemberStatus;
  readonly protocolMin: number;
  readonly protocolMax: number;
  readonly protocolCur: number;
  readonly delegateMin: number;
  readonly delegateMax: number;
  readonly delegateCur: number;
}

export interface GossipPoolBackend {
  readonly name: "lan" | "wan";
  members(): PoolMember[];
  /** Join through "host[:port]" addresses; resolves when every attempt has finished. */
  join(addrs: string[]): Promise<{ joined: number; errors: string[] }>;
  /** Mark a failed member left (`prune`: erase it at once). Rejects when the node is unknown. */
  forceLeave(node: string, options?: { prune?: boolean }): Promise<void>;
  /** Last known Vivaldi coordinate of every member that has one. */
  coordinates(): Array<{ node: string; coord: Coordinate }>;
  /** Transport counters and member counts (Consul's Stats.serf_lan / serf_wan). */
  stats(): Record<string, number | string>;
}

/** One pool's answer to a keyring operation (Consul's `KeyringResponse`). */
export interface KeyringPoolResponse {
  readonly wan: boolean;
  readonly datacenter: string;
  readonly segment: string;
  /** base64 key → number of nodes that have it installed (list only). */
  readonly keys: Record<string, number>;
  /** base64 key → number of nodes using it as primary (list only). */
  readonly primaryKeys: Record<string, number>;
  readonly numNodes: number;
  /** node name → error message from that node. */
  readonly messages: Record<string, string>;
  /** Set when some nodes failed. */
  readonly error?: string;
}

/** Keyring operations over every pool; a malformed key is a BadRequestError. */
export interface KeyringBackend {
  list(options?: { localOnly?: boolean }): Promise<KeyringPoolResponse[]>;
  install(key: string): Promise<KeyringPoolResponse[]>;
  use(key: string): Promise<KeyringPoolResponse[]>;
  remove(key: string): Promise<KeyringPoolResponse[]>;
}

export interface GossipBackend {
  readonly lan: GossipPoolBackend;
  /** Servers only. */
  readonly wan?: GossipPoolBackend;
  readonly keyring: KeyringBackend;
  /** Leave every pool gracefully. */
  leave(): Promise<void>;
}

// ---------------------------------------------------------------------------
// User events (core/pool/user_events.ts UserEventStore fits)

/** Consul's UserEvent. */
export interface UserEvent {
  id: string;
  name: string;
  payload: Uint8Array | null;
  nodeFilter: string;
  serviceFilter: string;
  tagFilter: string;
  version: number;
  lTime: number;
}

export interface UserEventsBackend {
  /** Fire into the LAN pool; a bad name or filter is a BadRequestError. */
  fire(params: { name: string; payload: Uint8Array | null; nodeFilter?: string; serviceFilter?: string; tagFilter?: string }): UserEvent;
  /** Fire into another datacenter's LAN pool, through a server there (`?dc`). */
  fireIn(datacenter: string, params: { name: string; payload: Uint8Array | null; nodeFilter?: string; serviceFilter?: string; tagFilter?: string }): Promise<UserEvent>;
  /** The events this agent kept, oldest first. */
  list(): UserEvent[];
  /** Wait until `changed()` holds after a new event, at most timeoutMs (or until abort). */
  waitUntil(changed: () => boolean, timeoutMs: number, signal?: AbortSignal): Promise<void>;
}

// ---------------------------------------------------------------------------
// Log stream

/** The agent's log fan-out (a monitor adds a follower at its own level) and its recent records. */
export interface MonitorBackend {
  sink: Pick<FanoutSink, "add" | "delete">;
  recent: Pick<RecentSink, "records">;
}
