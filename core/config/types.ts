// The agent's configuration, after defaults, files and flags are merged.
// Field names are camelCase; the file keys are Consul's snake_case
// (`node_name` → `nodeName`). Durations are milliseconds (`retryIntervalMs`).
import type { LogLevel } from "../log/mod.ts";

export interface PortsConfig {
  /** HTTP API; -1 disables it. Default 8500. */
  http: number;
  /** DNS (UDP and TCP); -1 disables it. Default 8600. */
  dns: number;
  /** LAN gossip (UDP and TCP). Default 8301. */
  serfLan: number;
  /** WAN gossip, servers only. Default 8302. */
  serfWan: number;
  /** Server RPC (TCP). Default 8300. */
  server: number;
  /** HTTPS API; -1 (the default) disables it. 8501 by convention. */
  https: number;
}

/** One `tls` stanza (consul TLSProtocolConfig); unset fields take `tls.defaults`' value. */
export interface TlsProtocolConfig {
  caFile?: string;
  caPath?: string;
  certFile?: string;
  keyFile?: string;
  verifyIncoming?: boolean;
  verifyOutgoing?: boolean;
  /** internal_rpc only: a server's certificate must be valid for server.<datacenter>.<domain>. */
  verifyServerHostname?: boolean;
  /** TLSv1_0 … TLSv1_3 (default TLSv1_2). */
  tlsMinVersion?: string;
  /** Go cipher suite names, comma-separated. */
  tlsCipherSuites?: string;
}

export interface TlsConfig {
  defaults: TlsProtocolConfig;
  internalRpc: TlsProtocolConfig;
  https: TlsProtocolConfig;
}

export interface SoaConfig {
  refresh: number;
  retry: number;
  expire: number;
  min: number;
}

export interface DnsConfig {
  nodeTtlMs: number;
  /** Service name (or `*`) → TTL. */
  serviceTtlMs: Record<string, number>;
  allowStale: boolean;
  maxStaleMs: number;
  onlyPassing: boolean;
  enableTruncate: boolean;
  udpAnswerLimit: number;
  aRecordLimit: number;
  recursorTimeoutMs: number;
  /** Order in which recursors are asked: "sequential" (as listed) or "random" (shuffled per query). */
  recursorStrategy: "sequential" | "random";
  /** Write names uncompressed (RFC 1035 4.1.4 compression is on by default, as in Consul). */
  disableCompression: boolean;
  /** Node meta TXT records in the additional section (SRV and node A answers). */
  enableAdditionalNodeMetaTxt: boolean;
  soa: SoaConfig;
}

export interface LimitsConfig {
  /** How long a request waits for a leader (or a server) before failing. */
  rpcHoldTimeoutMs: number;
  kvMaxValueSizeBytes: number;
  txnMaxReqLenBytes: number;
  /** Concurrent HTTP connections one client IP may hold; more are answered 429. 0 = no limit. */
  httpMaxConnsPerClient: number;
  /** An HTTPS client must finish its TLS handshake within this (Consul default 5 s). */
  httpsHandshakeTimeoutMs: number;
  /** A server RPC connection must name its protocol, and finish a TLS handshake, within this (Consul default 5 s). */
  rpcHandshakeTimeoutMs: number;
  /** RPCs per second this agent sends to servers (token bucket); negative = no limit (Consul default -1). */
  rpcRate: number;
  /** That bucket's size (Consul default 1000). */
  rpcMaxBurst: number;
  /** A server's global read/write limits (Consul 1.16+ request_limits); rates negative = no limit. */
  requestLimits: { mode: string; readRate: number; writeRate: number };
}

export interface PerformanceConfig {
  /** Scales Raft timing; 1 is fastest (dev), 5 the production default. */
  raftMultiplier: number;
}

/** `acl {}` (Consul's ACL system, 1.4+). */
export interface AclAgentConfig {
  enabled: boolean;
  defaultPolicy: string;
  /** allow, deny, extend-cache, async-cache. */
  downPolicy: string;
  enableKeyListPolicy: boolean;
  enableTokenPersistence: boolean;
  tokenTtlMs: number;
  policyTtlMs: number;
  roleTtlMs: number;
  /** acl.enable_token_replication: servers of a secondary datacenter replicate global tokens too and may keep local ones. */
  enableTokenReplication: boolean;
  tokens: { initialManagement: string; default: string; agent: string; dns: string; replication: string; agentRecovery: string; configFileServiceRegistration: string };
}

/** `audit {}`: the audit log (Consul Enterprise's shape; `sink` as written, checked by core/agent/audit_node.ts). */
export interface AuditAgentConfig {
  enabled: boolean;
  sink: Record<string, unknown>;
}

/** `autopilot {}`: the configuration a leader stores when the cluster has none yet (Consul's autopilot defaults). */
export interface AutopilotAgentConfig {
  cleanupDeadServers: boolean;
  lastContactThresholdMs: number;
  maxTrailingLogs: number;
  minQuorum: number;
  serverStabilizationTimeMs: number;
}

export interface TelemetryConfig {
  /** How long Prometheus gauges are kept; 0 turns `/v1/agent/metrics?format=prometheus` off (Consul's default). */
  prometheusRetentionTimeMs: number;
  /** Leave the host name out of gauge names. */
  disableHostname: boolean;
}

export interface AddressesConfig {
  /** Overrides `clientAddr` for the HTTP listener. */
  http?: string;
  /** Overrides `clientAddr` for the DNS listener. */
  dns?: string;
  /** Overrides `clientAddr` for the HTTPS listener. */
  https?: string;
}

/** `ui_config`: the web UI built into the binary (core/http/ui.ts). */
export interface UiConfig {
  /** Serve it (-ui; on in -dev). */
  enabled: boolean;
  /** Where: starts and ends with "/" after loading, default "/ui/". */
  contentPath: string;
}

export interface AgentConfig {
  nodeName: string;
  /** UUID; empty means read or create `<dataDir>/node-id`. */
  nodeId: string;
  datacenter: string;
  /**
   * `primary_datacenter`: whose ACLs are authoritative; "" = this one. Servers
   * of another datacenter replicate ACLs from it (core/server/acl_replication.ts).
   */
  primaryDatacenter: string;
  /** `acl_datacenter` (deprecated): primary_datacenter when that is not set, and ACLs on; folded in by buildConfig. */
  aclDatacenter: string;
  /** `acl_replication_token` (deprecated): acl.tokens.replication when that is not set, and token replication on; folded in by buildConfig. */
  aclReplicationToken: string;
  /** `enable_acl_replication` (deprecated): acl.enable_token_replication when that is not set; folded in by buildConfig. */
  enableAclReplication: boolean;
  /** Empty only in dev mode (everything in memory). */
  dataDir: string;
  dev: boolean;
  server: boolean;
  bootstrap: boolean;
  bootstrapExpect: number;
  bindAddr: string;
  /** `serf_lan`: bind address of LAN gossip; empty = bindAddr. */
  serfLanBindAddr: string;
  /** `serf_wan`: bind address of WAN gossip; empty = bindAddr. */
  serfWanBindAddr: string;
  /** `serf_lan_allowed_cidrs`: LAN gossip only from these networks; empty = from anywhere. */
  serfLanAllowedCidrs: string[];
  /** `serf_wan_allowed_cidrs`: WAN gossip only from these networks; empty = from anywhere. */
  serfWanAllowedCidrs: string[];
  clientAddr: string;
  /** Empty: the agent picks the bind address (or a private IP when bound to 0.0.0.0). */
  advertiseAddr: string;
  advertiseAddrWan: string;
  addresses: AddressesConfig;
  ports: PortsConfig;
  /** `tls { defaults, internal_rpc, https }` and the older top-level keys folded into it. */
  tls: TlsConfig;
  /** HTTP checks use the agent's TLS certificate and CA (enable_agent_tls_for_checks). */
  enableAgentTlsForChecks: boolean;
  startJoin: string[];
  startJoinWan: string[];
  retryJoin: string[];
  retryJoinWan: string[];
  retryIntervalMs: number;
  retryIntervalWanMs: number;
  /** 0 = retry forever. */
  retryMax: number;
  retryMaxWan: number;
  rejoinAfterLeave: boolean;
  /** Base64 gossip key; empty = no encryption. */
  encrypt: string;
  /** With a key: refuse plaintext gossip. False while rolling encryption onto a live pool. */
  encryptVerifyIncoming: boolean;
  /** With a key: encrypt what we send. False while rolling encryption onto a live pool. */
  encryptVerifyOutgoing: boolean;
  /** Keep the gossip keyring out of `<dataDir>/serf/` (the key comes from `encrypt` on every start). */
  disableKeyringFile: boolean;
  /** `translate_wan_addrs`: DNS answers for another datacenter use the `wan` tagged addresses. */
  translateWanAddrs: boolean;
  logLevel: LogLevel;
  logJson: boolean;
  /** `log_file`: also write the log here (a path ending in `/` is a directory holding consul.log); empty = no file. */
  logFile: string;
  /** Rotate the log file once it holds this many bytes; 0 = no size limit. */
  logRotateBytes: number;
  /** Rotate the log file after this long; 0 = Consul's default, 24 h. */
  logRotateDurationMs: number;
  /** Rotated log files to keep: 0 = all, -1 = none. */
  logRotateMaxFiles: number;
  leaveOnTerminate: boolean;
  skipLeaveOnInterrupt: boolean;
  performance: PerformanceConfig;
  autopilot: AutopilotAgentConfig;
  acl: AclAgentConfig;
  audit: AuditAgentConfig;
  /** Take a Raft snapshot once this many entries were applied since the last one (Consul raft_snapshot_threshold). Default 16,384. */
  raftSnapshotThreshold: number;
  /**
   * Consul's raft_snapshot_interval: a server checks the threshold after a
   * random wait between this and twice this (hashicorp/raft), again and
   * again. Default 30 s.
   */
  raftSnapshotIntervalMs: number;
  /** Raft entries kept behind a snapshot for slow followers (Consul raft_trailing_logs). Default 10,240. */
  raftTrailingLogs: number;
  /** Network coordinates: how often agents send theirs, how servers batch them (Consul's internal tuning keys). */
  coordinate: CoordinateConfig;
  /** disable_coordinates: no Vivaldi coordinates (gossip, catalog, /v1/coordinate answers 401). */
  disableCoordinates: boolean;
  /** `ui_config` (and the older `ui`, `ui_content_path`): the built-in web UI. */
  uiConfig: UiConfig;
  /** Always ends with a dot: `consul.`. */
  domain: string;
  altDomain: string;
  recursors: string[];
  dnsConfig: DnsConfig;
  limits: LimitsConfig;
  telemetry: TelemetryConfig;
  /** Blocking wait when a query gives no `?wait` (Consul default_query_time). */
  defaultQueryTimeMs: number;
  /** Longest blocking wait (Consul max_query_time). */
  maxQueryTimeMs: number;
  /** Catalog and health reads without a consistency parameter are stale reads up to this age (0: off). */
  discoveryMaxStaleMs: number;
  /** Check output is cut to this many bytes (a check's own output_max_size may only lower it). */
  checkOutputMaxSize: number;
  /** Checks report no output at all. */
  discardCheckOutput: boolean;
  /** A check whose output changed but not its status is synced at most this often; 0 syncs every change. */
  checkUpdateIntervalMs: number;
  /** enable_debug: the agent serves a CPU profile and a heap snapshot of itself (true in -dev, as Consul's DevSource). */
  enableDebug: boolean;
  enableScriptChecks: boolean;
  enableLocalScriptChecks: boolean;
  reconnectTimeoutMs: number;
  reconnectTimeoutWanMs: number;
  /** `advertise_reconnect_timeout` (clients): the reconnect timeout others should use for us, as the `rc_tm` tag; 0 = none. */
  advertiseReconnectTimeoutMs: number;
  nodeMeta: Record<string, string>;
  pidFile: string;
  /** Service definitions exactly as written (`service` and `services`), for the catalog layer. */
  services: Record<string, unknown>[];
  /** Check definitions exactly as written (`check` and `checks`). */
  checks: Record<string, unknown>[];
  /** The `watches` list, checked and typed (core/watch/agent_watches.ts runs them). */
  watches: WatchConfig[];
  /** Files that contributed, in the order they were applied. */
  configFiles: string[];
  /** Logged once at startup: planned and ignored keys (one per key), skipped files. */
  warnings: ConfigWarning[];
}

/**
 * `sync_coordinate_interval_min`, `sync_coordinate_rate_target` (agents) and
 * `consul { coordinate { update_period, update_batch_size, update_max_batches } }`
 * (servers), with Consul's defaults.
 */
export interface CoordinateConfig {
  /** An agent sends its coordinate at least this far apart (default 15 s) … */
  syncIntervalMinMs: number;
  /** … and the pool sends at most about this many a second in all (default 64): the interval grows with the member count. */
  syncRateTarget: number;
  /** The leader applies the updates it has every this often (default 5 s). */
  updatePeriodMs: number;
  /** Updates in one Raft command (default 128). */
  updateBatchSize: number;
  /** Commands a period; the rest are dropped (default 5). */
  updateMaxBatches: number;
}

export type WatchType = "key" | "keyprefix" | "services" | "nodes" | "service" | "checks" | "event";

/** What a watch looks at (Consul's watch parameters, typed; core/watch runs them). */
export interface WatchParams {
  type: WatchType;
  datacenter?: string;
  token?: string;
  stale?: boolean;
  key?: string;
  prefix?: string;
  service?: string;
  tag?: string[];
  passingonly?: boolean;
  state?: string;
  name?: string;
}

/** One entry of `watches`: what to watch plus its handler. */
export interface WatchConfig extends WatchParams {
  handlerType: "script" | "http";
  /** Script handler: the command, run without a shell. */
  args?: string[];
  /** Script handler, deprecated form: a command line for the shell. */
  handler?: string;
  httpHandlerConfig?: WatchHttpHandlerConfig;
}

export interface WatchHttpHandlerConfig {
  path: string;
  /** Default POST. */
  method: string;
  header: Record<string, string[]>;
  /** Default 10 s. */
  timeoutMs: number;
  tlsSkipVerify: boolean;
}

/** A key that was accepted but has no effect, a key Consul renamed, or a file that was skipped. */
export interface ConfigWarning {
  /** The key's path in the key table (core/config/keys.ts); absent for other warnings. */
  key?: string;
  /** "implemented": a deprecated spelling that works. */
  status?: "implemented" | "planned" | "ignored";
  /** Where the key was set. */
  sources: { file: string; line?: number }[];
  message: string;
}

type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends unknown[] ? T[K] : T[K] extends object ? DeepPartial<T[K]> : T[K];
};

/** One source of settings (a file, the flags): only what it sets. */
export type ConfigLayer = DeepPartial<AgentConfig>;
