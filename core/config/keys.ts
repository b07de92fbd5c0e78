// Every key of Consul's agent configuration (agent/config/config.go,
// deprecated.go, the Enterprise fields, and service and check definitions),
// with what cairn does with it:
//   implemented: cairn does what the key says;
//   planned:     accepted, one startup warning: cairn does not do it yet;
//   ignored:     accepted, one startup warning: it has no effect in cairn by
//                design (service mesh, Enterprise, HCP, UI metrics, Consul's Go
//                internals).
// A key that is not here is an error, as in Consul. This one table drives
// decoding (_schema.ts), the warnings, `cairn config keys` and
// docs/configuration.md (kept in sync by keys_test.ts).

export type KeyStatus = "implemented" | "planned" | "ignored";

/** How an implemented value is decoded into the AgentConfig. */
export type DecodeKind =
  | "string"
  | "bool"
  | "uint"
  /** any whole number, negative too */
  | "int"
  /** any number, fractions and negatives too (rates) */
  | "number"
  | "port"
  | "duration"
  | "strings"
  | "stringMap"
  | "durationMap"
  | "logLevel"
  /** one service or check definition, appended to the list named by `to` */
  | "definition"
  /** a list of definitions */
  | "definitions"
  /** the `watches` list: each entry checked like Consul's watch.Parse, typed (WatchConfig) */
  | "watches"
  /** an object of named blocks kept as written (its consumer checks it: audit sinks) */
  | "blocks";

export interface KeySpec {
  /** Undefined: the status of the enclosing block. */
  readonly status?: KeyStatus;
  /** Why a planned or ignored key has no effect; for implemented keys, a remark. */
  readonly note?: string;
  readonly decode?: DecodeKind;
  /**
   * camelCase target inside the enclosing section; default: the key in
   * camelCase (+ "Ms" for durations). A leading "$" makes it absolute.
   */
  readonly to?: string;
  /** A block: the keys it may hold. A key without `keys` takes any value. */
  readonly keys?: KeyTable;
  /** Values that ask for what cairn does anyway: no warning for them. */
  readonly inert?: readonly (string | number | boolean)[];
  /** Consul deprecated this key in favour of another. */
  readonly replacedBy?: string;
  /** Other names Consul accepts for this key. */
  readonly aliases?: readonly string[];
  /** In a definition: a single block written here is a list of one. */
  readonly list?: boolean;
}

export type KeyTable = Readonly<Record<string, KeySpec>>;

// ---- why keys have no effect ----

const MESH = "the service mesh (Connect) is not part of cairn";
const ENTERPRISE = "a Consul Enterprise feature";
const CLOUD = "HCP (HashiCorp Cloud Platform) only";
const UI_DIR = "the UI is always the one built into the binary; serving another from a directory is not implemented yet";
const UI_METRICS = "cairn's web UI shows no metrics graphs and no dashboard links";
const GRPC = "cairn has no gRPC listener (it serves Envoy and peering in Consul)";
const PEERING = "cluster peering is not part of cairn";
const RAFT_STORE = "cairn has its own Raft log store";
const INTERNAL = "internal Consul tuning, not meant for users";
const STREAMING = "cairn answers blocking queries without Consul's streaming backend";
const SYSLOG = "syslog output is not implemented yet";
const SINKS = "metrics sinks other than Prometheus are not implemented yet";
const LIMITS = "this limit is not implemented yet";
const GOSSIP_TUNING = "gossip tuning is not configurable yet";
const CACHE = "agent-side caching is not implemented yet";
const CHECK_KIND = "cairn does not run Docker or OS service checks: the check is registered and stays critical";

function impl(decode?: DecodeKind, more: Omit<KeySpec, "status" | "decode"> = {}): KeySpec {
  return { status: "implemented", ...(decode ? { decode } : {}), ...more };
}

function planned(note: string, more: Omit<KeySpec, "status" | "note"> = {}): KeySpec {
  return { status: "planned", note, ...more };
}

function ignored(note: string, more: Omit<KeySpec, "status" | "note"> = {}): KeySpec {
  return { status: "ignored", note, ...more };
}

/** Keys that take the status of their block. */
function leaves(...names: string[]): Record<string, KeySpec> {
  return Object.fromEntries(names.map((n) => [n, {}]));
}

// ---- watches (consul api/watch watch.go, funcs.go; agent/agent.go makeWatchPlan) ----

export const WATCH_KEYS: KeyTable = {
  type: impl(undefined, { note: "key, keyprefix, services, nodes, service, checks or event" }),
  datacenter: impl(),
  token: impl(),
  stale: impl(),
  key: impl(undefined, { note: "type key" }),
  prefix: impl(undefined, { note: "type keyprefix" }),
  service: impl(undefined, { note: "types service and checks" }),
  tag: impl(undefined, { note: "types service and checks (with state)" }),
  passingonly: impl(undefined, { note: "type service" }),
  state: impl(undefined, { note: "type checks" }),
  name: impl(undefined, { note: "type event" }),
  handler_type: impl(undefined, { note: "script (default) or http" }),
  args: impl(undefined, { note: "the script handler's command, run without a shell; the data as JSON on stdin, CONSUL_INDEX set" }),
  handler: impl(undefined, { note: "a command line run through the shell (deprecated by Consul)", replacedBy: "args" }),
  http_handler_config: impl(undefined, {
    keys: {
      path: impl(undefined, { note: "the URL the http handler calls" }),
      method: impl(undefined, { note: "default POST" }),
      header: impl(undefined, { note: "name → list of values" }),
      timeout: impl(undefined, { note: "default 10s" }),
      tls_skip_verify: impl(),
    },
  }),
};

// ---- service and check definitions (matched like Consul's decoding: any case, `_` optional) ----

export const CHECK_KEYS: KeyTable = {
  id: impl(undefined, { aliases: ["check_id"] }),
  name: impl(),
  notes: impl(),
  service_id: impl(),
  token: impl("string", { note: "the ACL token its catalog syncs carry; default: acl.tokens.config_file_service_registration, then the default token" }),
  status: impl(),
  args: impl(undefined, { aliases: ["scriptargs"] }),
  http: impl(),
  header: impl(),
  method: impl(),
  body: impl(),
  disable_redirects: impl(),
  output_max_size: impl(),
  tcp: impl(),
  tcp_use_tls: planned("TCP checks over TLS are not implemented yet"),
  udp: impl(),
  interval: impl(),
  docker_container_id: ignored(CHECK_KIND),
  shell: ignored(CHECK_KIND),
  grpc: impl(),
  grpc_use_tls: impl(),
  tls_server_name: impl(),
  tls_skip_verify: impl(),
  alias_node: impl(),
  alias_service: impl(),
  timeout: impl(),
  ttl: impl(),
  h2ping: impl(),
  h2ping_use_tls: impl(),
  os_service: ignored(CHECK_KIND),
  success_before_passing: impl(),
  failures_before_warning: impl(),
  failures_before_critical: impl(),
  deregister_critical_service_after: impl(),
  namespace: ignored(ENTERPRISE),
  partition: ignored(ENTERPRISE),
};

export const SERVICE_KEYS: KeyTable = {
  kind: impl(),
  id: impl(),
  name: impl(),
  tags: impl(),
  address: impl(),
  tagged_addresses: impl(),
  meta: impl(),
  port: impl(),
  socket_path: ignored(MESH),
  check: impl(undefined, { keys: CHECK_KEYS, note: "one check of the service (check keys)" }),
  checks: impl(undefined, { keys: CHECK_KEYS, list: true, note: "checks of the service (check keys)" }),
  token: impl("string", { note: "the ACL token its catalog syncs carry; default: acl.tokens.config_file_service_registration, then the default token" }),
  weights: impl(undefined, { keys: { passing: {}, warning: {} } }),
  enable_tag_override: impl(),
  proxy: ignored(MESH),
  connect: ignored(MESH),
  locality: ignored(MESH),
  namespace: ignored(ENTERPRISE),
  partition: ignored(ENTERPRISE),
};

// ---- the agent ----

/** One tls stanza (consul TLSProtocolConfig). */
function tlsProtocolKeys(stanza: "defaults" | "internal_rpc" | "https"): KeyTable {
  return {
    ca_file: impl("string"),
    ca_path: impl("string"),
    cert_file: impl("string"),
    key_file: impl("string"),
    tls_min_version: impl("string", { note: "TLSv1_0, TLSv1_1, TLSv1_2 (default) or TLSv1_3" }),
    tls_cipher_suites: impl("string", { note: "Go's names, comma-separated (TLS 1.2 and below)" }),
    verify_incoming: impl("bool"),
    verify_outgoing: impl("bool", stanza === "https" ? { note: "no effect on HTTPS (the agent makes no HTTPS calls)" } : {}),
    verify_server_hostname: impl("bool", { note: "tls.internal_rpc only" }),
    use_auto_cert: ignored(GRPC),
  };
}


const GOSSIP_KEYS: KeyTable = leaves("gossip_nodes", "gossip_interval", "probe_interval", "probe_timeout", "suspicion_mult", "retransmit_mult");

export const AGENT_KEYS: KeyTable = {
  acl: impl(undefined, {
    note: "tokens, policies and roles through Raft; every endpoint checks the request's token (see README \"ACLs\")",
    keys: {
      enabled: impl("bool"),
      enable_token_replication: impl("bool", { note: "servers of a secondary datacenter replicate the primary's global tokens too (policies and roles always), and may hold local tokens" }),
      policy_ttl: impl("duration", { note: "agents keep a token's resolved rules (policies included) for token_ttl" }),
      role_ttl: impl("duration", { note: "agents keep a token's resolved rules (roles included) for token_ttl" }),
      token_ttl: impl("duration", { note: "how long an agent keeps a resolved token before asking the servers again" }),
      down_policy: impl("string", { note: "allow, deny, extend-cache (default) or async-cache (as extend-cache)" }),
      default_policy: impl("string", { note: "allow (default) or deny" }),
      enable_key_list_policy: impl("bool"),
      enable_token_persistence: impl("bool", { note: "tokens set with `PUT /v1/agent/token` are kept in <data-dir>/acl-tokens.json" }),
      tokens: {
        keys: {
          initial_management: impl("string"),
          default: impl("string"),
          agent: impl("string", { note: "the token of the agent's own catalog syncs" }),
          replication: impl("string", { note: "the token servers of a secondary datacenter replicate with (acl:write in the primary)" }),
          agent_recovery: impl("string", { to: "agentRecovery", note: "answered by this agent alone: agent:write on itself and node:read, for its own endpoints when the servers cannot be reached" }),
          dns: impl("string", { note: "the token of DNS lookups (answers are filtered by it); default: the default token" }),
          config_file_service_registration: impl("string", { to: "configFileServiceRegistration", note: "the token of services and checks from config files that name none of their own; default: the default token" }),
          master: impl("string", { to: "initialManagement", replacedBy: "acl.tokens.initial_management" }),
          agent_master: impl("string", { to: "agentRecovery", replacedBy: "acl.tokens.agent_recovery" }),
          managed_service_provider: ignored(ENTERPRISE),
        },
      },
      msp_disable_bootstrap: ignored(ENTERPRISE),
    },
  }),
  acl_agent_master_token: impl("string", { to: "$acl.tokens.agentRecovery", replacedBy: "acl.tokens.agent_recovery" }),
  acl_agent_token: impl("string", { to: "$acl.tokens.agent", replacedBy: "acl.tokens.agent" }),
  acl_datacenter: impl("string", { replacedBy: "primary_datacenter", note: "also turns ACLs on, as in Consul" }),
  acl_default_policy: impl("string", { to: "$acl.defaultPolicy", replacedBy: "acl.default_policy" }),
  acl_down_policy: impl("string", { to: "$acl.downPolicy", replacedBy: "acl.down_policy" }),
  acl_enable_key_list_policy: impl("bool", { to: "$acl.enableKeyListPolicy", replacedBy: "acl.enable_key_list_policy" }),
  acl_enforce_version_8: ignored("removed from Consul; it has no effect there either"),
  acl_master_token: impl("string", { to: "$acl.tokens.initialManagement", replacedBy: "acl.tokens.initial_management" }),
  acl_replication_token: impl("string", { to: "aclReplicationToken", replacedBy: "acl.tokens.replication", note: "also turns token replication on, as in Consul" }),
  acl_token: impl("string", { to: "$acl.tokens.default", replacedBy: "acl.tokens.default" }),
  acl_ttl: impl("duration", { to: "$acl.tokenTtlMs", replacedBy: "acl.token_ttl" }),
  addresses: impl(undefined, {
    keys: {
      http: impl("string"),
      dns: impl("string"),
      https: impl("string"),
      grpc: ignored(GRPC),
      grpc_tls: ignored(GRPC),
    },
  }),
  advertise_addr: impl("string"),
  advertise_addr_ipv4: planned("separate IPv4 and IPv6 advertise addresses are not implemented yet"),
  advertise_addr_ipv6: planned("separate IPv4 and IPv6 advertise addresses are not implemented yet"),
  advertise_addr_wan: impl("string"),
  advertise_addr_wan_ipv4: planned("separate IPv4 and IPv6 advertise addresses are not implemented yet"),
  advertise_addr_wan_ipv6: planned("separate IPv4 and IPv6 advertise addresses are not implemented yet"),
  advertise_reconnect_timeout: impl("duration", { note: "clients only; advertised as the rc_tm tag" }),
  alt_domain: impl("string"),
  audit: impl(undefined, {
    note: "an Enterprise feature in Consul, open in cairn: one JSON line per HTTP request (see README \"ACLs\")",
    keys: {
      enabled: impl("bool"),
      sink: impl("blocks", { note: 'sink "name" { type = "file", format = "json", path, rotate_bytes, rotate_duration, rotate_max_files }' }),
    },
  }),
  auto_config: ignored("auto-config hands out TLS material from the service mesh CA, which cairn does not have", {
    keys: {
      enabled: { inert: [false] },
      ...leaves("intro_token", "intro_token_file", "server_addresses", "dns_sans", "ip_sans"),
      authorization: {
        keys: {
          enabled: { inert: [false] },
          static: {
            keys: leaves(
              "claim_assertions",
              "allow_reuse",
              "jwt_supported_algs",
              "bound_audiences",
              "claim_mappings",
              "list_claim_mappings",
              "oidc_discovery_url",
              "oidc_discovery_ca_cert",
              "jwks_url",
              "jwks_ca_cert",
              "jwt_validation_pub_keys",
              "bound_issuer",
              "expiration_leeway",
              "not_before_leeway",
              "clock_skew_leeway",
            ),
          },
        },
      },
    },
  }),
  auto_encrypt: ignored("auto-encrypt hands out certificates from the service mesh CA, which cairn does not have", {
    keys: { tls: { inert: [false] }, dns_san: {}, ip_san: {}, allow_tls: { inert: [false] } },
  }),
  auto_reload_config: planned("reloading when config files change is not implemented yet; send SIGHUP or run `cairn reload`", { inert: [false] }),
  autopilot: impl(undefined, {
    note: "the initial autopilot configuration; once a leader has stored it, `operator autopilot set-config` changes it",
    keys: {
      cleanup_dead_servers: impl("bool"),
      last_contact_threshold: impl("duration"),
      max_trailing_logs: impl("uint"),
      min_quorum: impl("uint"),
      server_stabilization_time: impl("duration"),
      disable_upgrade_migration: ignored(ENTERPRISE),
      redundancy_zone_tag: ignored(ENTERPRISE),
      upgrade_version_tag: ignored(ENTERPRISE),
    },
  }),
  bind_addr: impl("string"),
  bootstrap: impl("bool"),
  bootstrap_expect: impl("uint"),
  ca_file: impl("string", { to: "$tls.defaults.caFile", replacedBy: "tls.defaults.ca_file" }),
  ca_path: impl("string", { to: "$tls.defaults.caPath", replacedBy: "tls.defaults.ca_path" }),
  cache: planned(CACHE, { keys: leaves("entry_fetch_max_burst", "entry_fetch_rate") }),
  cert_file: impl("string", { to: "$tls.defaults.certFile", replacedBy: "tls.defaults.cert_file" }),
  check: impl("definition", { to: "checks", keys: CHECK_KEYS, note: "one check definition (check keys)" }),
  check_output_max_size: impl("uint", { note: "a check's own output_max_size may only lower it" }),
  check_update_interval: impl("duration"),
  checks: impl("definitions", { keys: CHECK_KEYS, note: "a list of check definitions (check keys)" }),
  client_addr: impl("string"),
  cloud: ignored(CLOUD, { keys: leaves("resource_id", "client_id", "client_secret", "hostname", "auth_url", "scada_address", "management_token") }),
  config_entries: ignored(MESH, { keys: leaves("bootstrap") }),
  connect: ignored(MESH, {
    keys: {
      enabled: { inert: [false] },
      ...leaves("ca_provider", "ca_config", "enable_mesh_gateway_wan_federation", "test_ca_leaf_root_change_spread"),
    },
  }),
  data_dir: impl("string"),
  datacenter: impl("string"),
  default_query_time: impl("duration"),
  disable_anonymous_signature: impl(undefined, { note: "cairn never sends an update check or signature" }),
  disable_coordinates: impl("bool", { note: "no Vivaldi coordinates in gossip and none sent to the servers; /v1/coordinate/* answers 401, as Consul's" }),
  disable_host_node_id: ignored("cairn always uses a random node ID, never one derived from the host", { inert: [true] }),
  disable_http_unprintable_char_filter: planned("the HTTP unprintable-character filter switch is not implemented yet", { inert: [false] }),
  disable_keyring_file: impl("bool"),
  disable_remote_exec: planned("remote exec (`consul exec`) is not implemented; it is always off", { inert: [true] }),
  disable_update_check: impl(undefined, { note: "cairn never checks for updates" }),
  discard_check_output: impl("bool"),
  discovery_max_stale: impl("duration", { note: "catalog and health reads without ?stale/?consistent/?leader read stale up to this age" }),
  dns_config: impl(undefined, {
    keys: {
      allow_stale: impl("bool"),
      a_record_limit: impl("uint"),
      cache_max_age: planned(CACHE),
      disable_compression: impl("bool", { note: "names are compressed (RFC 1035 4.1.4) unless true" }),
      enable_additional_node_meta_txt: impl("bool"),
      enable_truncate: impl("bool"),
      max_stale: impl("duration"),
      node_ttl: impl("duration"),
      only_passing: impl("bool"),
      prefer_namespace: ignored(ENTERPRISE),
      recursor_strategy: impl("string", { note: "sequential (default) or random" }),
      recursor_timeout: impl("duration"),
      service_ttl: impl("durationMap", { to: "serviceTtlMs" }),
      soa: impl(undefined, {
        keys: {
          refresh: impl("uint"),
          retry: impl("uint"),
          expire: impl("uint"),
          min_ttl: impl("uint", { to: "min" }),
          min: impl("uint", { note: "cairn's earlier name for min_ttl" }),
        },
      }),
      udp_answer_limit: impl("uint"),
      use_cache: planned(CACHE, { inert: [false] }),
    },
  }),
  domain: impl("string"),
  enable_acl_replication: impl("bool", { to: "enableAclReplication", replacedBy: "acl.enable_token_replication" }),
  enable_agent_tls_for_checks: impl("bool"),
  enable_central_service_config: ignored(MESH, { inert: [false] }),
  enable_debug: impl("bool", { note: "the agent's CPU profile and heap snapshot endpoints (/v1/agent/debug/profile, /v1/agent/debug/heap) for cairn debug; on in -dev" }),
  enable_local_script_checks: impl("bool"),
  enable_script_checks: impl("bool"),
  enable_syslog: planned(SYSLOG, { inert: [false] }),
  encrypt: impl("string"),
  encrypt_verify_incoming: impl("bool"),
  encrypt_verify_outgoing: impl("bool"),
  gossip_lan: planned(GOSSIP_TUNING, { keys: GOSSIP_KEYS }),
  gossip_wan: planned(GOSSIP_TUNING, { keys: GOSSIP_KEYS }),
  http_config: planned("HTTP API options are not implemented yet", {
    keys: {
      ...leaves("block_endpoints", "allow_write_http_from", "response_headers", "max_header_bytes"),
      use_cache: planned(CACHE, { inert: [false] }),
    },
  }),
  key_file: impl("string", { to: "$tls.defaults.keyFile", replacedBy: "tls.defaults.key_file" }),
  leave_on_terminate: impl("bool"),
  license_path: ignored(ENTERPRISE),
  limits: impl(undefined, {
    keys: {
      http_max_conns_per_client: impl("uint", { note: "0 = no limit" }),
      https_handshake_timeout: impl("duration"),
      kv_max_value_size: impl("uint", { to: "kvMaxValueSizeBytes" }),
      request_limits: impl(undefined, {
        note: "a server's global read and write limits (Consul 1.16+); burst 10 × the rate",
        keys: {
          mode: impl("string", { note: "disabled (default), permissive (count and log) or enforcing (refuse: 429, or 503 for a write the leader refuses)" }),
          read_rate: impl("number", { note: "reads per second; negative = no limit (default -1)" }),
          write_rate: impl("number", { note: "writes per second; negative = no limit (default -1)" }),
        },
      }),
      rpc_client_timeout: planned(LIMITS),
      rpc_handshake_timeout: impl("duration"),
      rpc_hold_timeout: impl("duration"),
      rpc_max_burst: impl("uint", { note: "default 1000" }),
      rpc_max_conns_per_client: planned(LIMITS),
      rpc_rate: impl("number", { note: "RPCs per second this agent sends to servers; negative = no limit (default -1); over it: 429 RPC rate limit exceeded" }),
      txn_max_req_len: impl("uint", { to: "txnMaxReqLenBytes" }),
    },
  }),
  locality: ignored(MESH, { keys: leaves("region", "zone") }),
  log_file: impl("string"),
  log_json: impl("bool"),
  log_level: impl("logLevel"),
  log_rotate_bytes: impl("uint"),
  log_rotate_duration: impl("duration"),
  log_rotate_max_files: impl("int"),
  log_sublevels: planned("per-subsystem log levels are not implemented yet"),
  max_query_time: impl("duration"),
  node_id: impl("string"),
  node_meta: impl("stringMap"),
  node_name: impl("string"),
  partition: ignored(ENTERPRISE),
  peering: ignored(PEERING, { keys: { enabled: { inert: [false] }, test_allow_peer_registrations: {} } }),
  performance: impl(undefined, {
    keys: {
      leave_drain_time: planned("leave_drain_time is not configurable yet"),
      raft_multiplier: impl("uint"),
      rpc_hold_timeout: impl("duration", { to: "$limits.rpcHoldTimeoutMs" }),
    },
  }),
  pid_file: impl("string"),
  ports: impl(undefined, {
    keys: {
      dns: impl("port"),
      http: impl("port"),
      https: impl("port"),
      serf_lan: impl("port"),
      serf_wan: impl("port"),
      server: impl("port"),
      grpc: ignored(GRPC, { inert: [-1] }),
      grpc_tls: ignored(GRPC, { inert: [-1] }),
      ...Object.fromEntries(
        ["proxy_min_port", "proxy_max_port", "sidecar_min_port", "sidecar_max_port", "expose_min_port", "expose_max_port"].map((k) => [k, ignored(MESH)]),
      ),
    },
  }),
  primary_datacenter: impl("string", { note: "the datacenter whose ACLs are authoritative: servers of the others replicate policies and roles (tokens with acl.enable_token_replication) from it and resolve other tokens against it" }),
  primary_gateways: ignored(MESH),
  primary_gateways_interval: ignored(MESH),
  protocol: ignored("cairn speaks one version of Consul's RPC protocol"),
  raft_boltdb: ignored(RAFT_STORE, { keys: leaves("no_freelist_sync"), replacedBy: "raft_logstore.boltdb" }),
  raft_logstore: ignored(RAFT_STORE, {
    keys: {
      ...leaves("backend", "disable_log_cache"),
      verification: { keys: leaves("enabled", "interval") },
      boltdb: { keys: leaves("no_freelist_sync") },
      wal: { keys: leaves("segment_size_mb") },
    },
  }),
  raft_protocol: ignored("cairn always speaks Raft protocol version 3", { inert: [3] }),
  raft_snapshot_interval: impl("duration"),
  raft_snapshot_threshold: impl("uint"),
  raft_trailing_logs: impl("uint"),
  read_replica: ignored(ENTERPRISE, { aliases: ["non_voting_server"], inert: [false] }),
  reconnect_timeout: impl("duration", { note: "at least 8h" }),
  reconnect_timeout_wan: impl("duration", { note: "at least 8h" }),
  recursors: impl("strings"),
  rejoin_after_leave: impl("bool"),
  reporting: ignored(ENTERPRISE, { keys: { license: { keys: { enabled: { inert: [false] } } } } }),
  retry_interval: impl("duration"),
  retry_interval_wan: impl("duration"),
  retry_join: impl("strings"),
  retry_join_wan: impl("strings"),
  retry_max: impl("uint"),
  retry_max_wan: impl("uint"),
  rpc: ignored(STREAMING, { keys: { enable_streaming: {} } }),
  segment: ignored(ENTERPRISE),
  segments: ignored(ENTERPRISE),
  serf_lan: impl("string", { to: "serfLanBindAddr" }),
  serf_lan_allowed_cidrs: impl("strings", { to: "serfLanAllowedCidrs", note: "gossip from other networks is dropped and counted" }),
  serf_wan: impl("string", { to: "serfWanBindAddr" }),
  serf_wan_allowed_cidrs: impl("strings", { to: "serfWanAllowedCidrs", note: "gossip from other networks is dropped and counted" }),
  server: impl("bool"),
  server_name: planned("overriding the name in this agent's TLS certificate (server_name) is not implemented yet"),
  server_rejoin_age_max: planned("refusing to rejoin after a long absence is not implemented yet"),
  service: impl("definition", { to: "services", keys: SERVICE_KEYS, note: "one service definition (service keys)" }),
  services: impl("definitions", { keys: SERVICE_KEYS, note: "a list of service definitions (service keys)" }),
  session_ttl_min: planned("session_ttl_min is not configurable yet"),
  skip_leave_on_interrupt: impl("bool"),
  snapshot_agent: ignored(ENTERPRISE),
  start_join: impl("strings", { note: "an alias of retry_join since Consul 1.15 (logged as deprecated)" }),
  start_join_wan: impl("strings", { note: "an alias of retry_join_wan since Consul 1.15 (logged as deprecated)" }),
  syslog_facility: planned(SYSLOG),
  tagged_addresses: planned("extra node tagged addresses are not implemented yet"),
  telemetry: impl(undefined, {
    keys: {
      ...Object.fromEntries(
        [
          "circonus_api_app",
          "circonus_api_token",
          "circonus_api_url",
          "circonus_broker_id",
          "circonus_broker_select_tag",
          "circonus_check_display_name",
          "circonus_check_force_metric_activation",
          "circonus_check_id",
          "circonus_check_instance_id",
          "circonus_check_search_tag",
          "circonus_check_tags",
          "circonus_submission_interval",
          "circonus_submission_url",
          "dogstatsd_addr",
          "dogstatsd_tags",
          "statsd_address",
          "statsite_address",
        ].map((k) => [k, planned(SINKS)]),
      ),
      disable_compat_1_9: ignored("a compatibility switch for metric names of Consul 1.9"),
      disable_hostname: impl("bool"),
      enable_host_metrics: planned("host metrics are not implemented yet", { inert: [false] }),
      filter_default: planned("metric filters are not implemented yet", { inert: [true] }),
      metrics_prefix: planned('metric names always start with "consul"', { inert: ["consul"] }),
      prefix_filter: planned("metric filters are not implemented yet"),
      prometheus_retention_time: impl("duration"),
      retry_failed_connection: planned(SINKS),
    },
  }),
  tls: impl(undefined, {
    keys: {
      defaults: impl(undefined, { keys: tlsProtocolKeys("defaults") }),
      internal_rpc: impl(undefined, { keys: tlsProtocolKeys("internal_rpc") }),
      https: impl(undefined, { keys: tlsProtocolKeys("https") }),
      grpc: ignored(GRPC, { keys: tlsProtocolKeys("defaults") }),
    },
  }),
  tls_cipher_suites: impl("string", { to: "$tls.defaults.tlsCipherSuites", replacedBy: "tls.defaults.tls_cipher_suites" }),
  tls_min_version: impl("string", { to: "$tls.defaults.tlsMinVersion", replacedBy: "tls.defaults.tls_min_version" }),
  tls_prefer_server_cipher_suites: ignored("Go's TLS library no longer honours it; Consul ignores it too"),
  translate_wan_addrs: impl("bool", { note: "DNS, catalog and health answers for another datacenter use its nodes' and services' `wan` tagged addresses (X-Consul-Translate-Addresses)" }),
  ui: impl("bool", { to: "$uiConfig.enabled", replacedBy: "ui_config.enabled" }),
  ui_config: impl(undefined, {
    keys: {
      enabled: impl("bool", { note: "serve the built-in web UI (inside the binary) at content_path; -ui and -dev turn it on" }),
      content_path: impl("string", { note: 'where the UI is served, default "/ui/"; "/" redirects there' }),
      dir: planned(UI_DIR),
      ...Object.fromEntries(["metrics_provider", "metrics_provider_files", "metrics_provider_options_json", "dashboard_url_templates"].map((k) => [k, ignored(UI_METRICS)])),
      metrics_proxy: ignored(UI_METRICS, { keys: leaves("base_url", "add_headers", "path_allowlist") }),
    },
  }),
  ui_content_path: impl("string", { to: "$uiConfig.contentPath", replacedBy: "ui_config.content_path" }),
  ui_dir: planned(UI_DIR, { replacedBy: "ui_config.dir" }),
  unix_sockets: planned("HTTP over a Unix socket is not implemented yet", { keys: leaves("group", "mode", "user") }),
  use_streaming_backend: ignored(STREAMING),
  verify_incoming: impl("bool", { to: "$tls.defaults.verifyIncoming", replacedBy: "tls.defaults.verify_incoming" }),
  verify_incoming_https: impl("bool", { to: "$tls.https.verifyIncoming", replacedBy: "tls.https.verify_incoming" }),
  verify_incoming_rpc: impl("bool", { to: "$tls.internalRpc.verifyIncoming", replacedBy: "tls.internal_rpc.verify_incoming" }),
  verify_outgoing: impl("bool", { to: "$tls.defaults.verifyOutgoing", replacedBy: "tls.defaults.verify_outgoing" }),
  verify_server_hostname: impl("bool", { to: "$tls.internalRpc.verifyServerHostname", replacedBy: "tls.internal_rpc.verify_server_hostname" }),
  watches: impl("watches", { keys: WATCH_KEYS, note: "run a handler (script or HTTP) when a view changes; reloaded with the config" }),
  xds: ignored(MESH, { keys: leaves("update_max_per_second") }),
  // Not meant for users, but Consul reads them from files (tests tune Raft through `consul`).
  ae_interval: ignored(INTERNAL),
  build_date: ignored(INTERNAL),
  check_deregister_interval_min: ignored(INTERNAL),
  check_reap_interval: ignored(INTERNAL),
  consul: impl(undefined, {
    note: "internal Consul tuning; only the coordinate batching is read",
    keys: {
      coordinate: impl(undefined, {
        to: "$coordinate",
        keys: {
          update_batch_size: impl("uint"),
          update_max_batches: impl("uint"),
          update_period: impl("duration"),
        },
      }),
      raft: ignored(INTERNAL, { keys: leaves("election_timeout", "heartbeat_timeout", "leader_lease_timeout") }),
      server: ignored(INTERNAL, { keys: leaves("health_interval") }),
    },
  }),
  license_poll_base_time: ignored(ENTERPRISE),
  license_poll_max_time: ignored(ENTERPRISE),
  license_update_base_time: ignored(ENTERPRISE),
  license_update_max_time: ignored(ENTERPRISE),
  revision: ignored(INTERNAL),
  segment_limit: ignored(ENTERPRISE),
  segment_name_limit: ignored(ENTERPRISE),
  sync_coordinate_interval_min: impl("duration", { to: "$coordinate.syncIntervalMinMs", note: "how often at least an agent sends its coordinate to the servers" }),
  sync_coordinate_rate_target: impl("uint", { to: "$coordinate.syncRateTarget", note: "coordinate updates a second the whole pool aims at" }),
  version: ignored(INTERNAL),
  version_metadata: ignored(INTERNAL),
  version_prerelease: ignored(INTERNAL),
};

// ---- the table as rows (help, docs) ----

export interface KeyRow {
  /** Dotted path: `dns_config.soa.min_ttl`. */
  path: string;
  status: KeyStatus;
  /** Why it has no effect, or a remark; "" for most implemented keys. */
  note: string;
  replacedBy?: string;
  aliases?: readonly string[];
}

function rowsOf(table: KeyTable, prefix: string, parent: { status: KeyStatus; note: string }, out: KeyRow[]): void {
  for (const [name, spec] of Object.entries(table)) {
    const path = prefix ? `${prefix}.${name}` : name;
    const status = spec.status ?? parent.status;
    const note = spec.note ?? (spec.status ? "" : parent.note);
    const isDefinition = spec.keys === SERVICE_KEYS || spec.keys === CHECK_KEYS;
    if (spec.keys && !isDefinition) {
      rowsOf(spec.keys, path, { status, note }, out);
      continue;
    }
    out.push({ path, status, note, ...(spec.replacedBy ? { replacedBy: spec.replacedBy } : {}), ...(spec.aliases ? { aliases: spec.aliases } : {}) });
  }
}

/**
 * Every key as a row, leaves only (a block is listed through its keys).
 * Service and check definitions are listed once each, under `service` and
 * `check` (`services`, `checks` and the checks of a service take the same keys).
 */
export function keyRows(): { agent: KeyRow[]; service: KeyRow[]; check: KeyRow[] } {
  const agent: KeyRow[] = [];
  rowsOf(AGENT_KEYS, "", { status: "implemented", note: "" }, agent);
  const service: KeyRow[] = [];
  rowsOf(SERVICE_KEYS, "service", { status: "implemented", note: "" }, service);
  const check: KeyRow[] = [];
  rowsOf(CHECK_KEYS, "check", { status: "implemented", note: "" }, check);
  return { agent, service, check };
}
