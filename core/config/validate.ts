// Cross-field checks on a merged config (Consul's builder.Validate). Returns
// every problem, so an operator can fix them all at once.
import { ConfigError } from "../errors.ts";
import { validateTls } from "./tls.ts";
import type { AgentConfig } from "./types.ts";

const DC_NAME = /^[a-z0-9_-]+$/i;
const NODE_META_KEY = /^[a-zA-Z0-9_-]+$/;

function isPort(p: number, allowDisabled: boolean): boolean {
  return Number.isInteger(p) && ((p >= 0 && p <= 65535) || (allowDisabled && p === -1));
}

/** Problems found, empty when the config is usable. */
export function validateConfig(c: AgentConfig): ConfigError[] {
  const errors: ConfigError[] = [];
  const bad = (field: string, message: string) => errors.push(new ConfigError(message, { field }));

  if (!c.dev && c.dataDir === "") bad("data_dir", "data_dir is required: set -data-dir or \"data_dir\" (or use -dev)");
  if (c.datacenter === "" || !DC_NAME.test(c.datacenter)) {
    bad("datacenter", `Invalid datacenter "${c.datacenter}": use letters, digits, "-" and "_"`);
  }
  if (c.primaryDatacenter !== "" && !DC_NAME.test(c.primaryDatacenter)) {
    bad("primary_datacenter", `Invalid primary_datacenter "${c.primaryDatacenter}": use letters, digits, "-" and "_"`);
  }
  if (c.dev && !c.server) bad("server", "-dev runs a one-node server: it cannot be combined with server = false");
  if (c.bootstrapExpect > 0 && !c.server) bad("bootstrap_expect", "bootstrap_expect requires server mode: set -server");
  if (c.bootstrap && !c.server) bad("bootstrap", "bootstrap requires server mode: set -server");
  if (c.bootstrap && c.bootstrapExpect > 0) bad("bootstrap_expect", "bootstrap and bootstrap_expect are mutually exclusive");
  if (c.dev && c.bootstrapExpect > 1) bad("bootstrap_expect", "bootstrap_expect must be 0 or 1 in dev mode");
  for (const [name, port, allowDisabled] of [
    ["ports.http", c.ports.http, true],
    ["ports.dns", c.ports.dns, true],
    ["ports.serf_lan", c.ports.serfLan, false],
    ["ports.serf_wan", c.ports.serfWan, false],
    ["ports.server", c.ports.server, false],
    ["ports.https", c.ports.https, true],
  ] as const) {
    if (!isPort(port, allowDisabled)) {
      bad(name, `Invalid ${name} ${port}: expected 0 to 65535${allowDisabled ? " (or -1 to disable)" : ""}`);
    }
  }
  if (c.performance.raftMultiplier < 1 || c.performance.raftMultiplier > 10) {
    bad("performance.raft_multiplier", `Invalid performance.raft_multiplier ${c.performance.raftMultiplier}: expected 1 to 10`);
  }
  if (c.raftSnapshotThreshold < 1) {
    bad("raft_snapshot_threshold", `Invalid raft_snapshot_threshold ${c.raftSnapshotThreshold}: expected at least 1 (Consul's default is 16384)`);
  }
  if (c.raftSnapshotIntervalMs <= 0) bad("raft_snapshot_interval", "raft_snapshot_interval must be positive");
  if (c.checkOutputMaxSize < 1) {
    bad("check_output_max_size", "check_output_max_size must be positive, to discard check output use the discard_check_output flag");
  }
  if (!["disabled", "permissive", "enforcing", ""].includes(c.limits.requestLimits.mode)) {
    bad("limits.request_limits.mode", `Invalid limits.request_limits.mode "${c.limits.requestLimits.mode}": expected "disabled", "permissive" or "enforcing"`);
  }
  if (c.encrypt !== "") {
    const len = base64Length(c.encrypt);
    if (len === undefined || ![16, 24, 32].includes(len)) {
      bad("encrypt", "Invalid encrypt key: expected base64 of 16, 24 or 32 bytes (for example from `openssl rand -base64 32`)");
    }
  }
  for (const key of Object.keys(c.nodeMeta)) {
    if (!NODE_META_KEY.test(key) || key.length > 128) bad(`node_meta.${key}`, `Invalid node_meta key "${key}"`);
  }
  if (c.retryIntervalMs <= 0) bad("retry_interval", "retry_interval must be positive");
  // Consul's builder: acl.default_policy and acl.down_policy take these values only.
  if (c.acl && !["allow", "deny"].includes(c.acl.defaultPolicy)) {
    bad("acl.default_policy", `Invalid acl.default_policy "${c.acl.defaultPolicy}": expected "allow" or "deny"`);
  }
  if (c.acl && !["allow", "deny", "extend-cache", "async-cache"].includes(c.acl.downPolicy)) {
    bad("acl.down_policy", `Invalid acl.down_policy "${c.acl.downPolicy}": expected "allow", "deny", "extend-cache" or "async-cache"`);
  }
  // Consul's UIPathBuilder: "ui", "/ui" and "ui/" all mean "/ui/".
  const uiPath = `/${c.uiConfig.contentPath.replace(/^\/+|\/+$/g, "")}/`;
  if (uiPath === "//" || uiPath.startsWith("/v1/") || /[?#\s]/.test(uiPath)) {
    bad("ui_config.content_path", `Invalid ui_config.content_path "${c.uiConfig.contentPath}": a path such as "/ui/" (not "/" and not under "/v1/")`);
  }
  // Consul: "The value must be >= 8 hours"; advertise_reconnect_timeout is a client's (builder.go Validate).
  for (const [key, ms] of [["reconnect_timeout", c.reconnectTimeoutMs], ["reconnect_timeout_wan", c.reconnectTimeoutWanMs]] as const) {
    if (ms < 8 * 3_600_000) bad(key, `${key} must be >= 8h0m0s`);
  }
  if (c.server && c.advertiseReconnectTimeoutMs !== 0) bad("advertise_reconnect_timeout", "advertise_reconnect_timeout can only be used on a client");
  for (const [key, list] of [["serf_lan_allowed_cidrs", c.serfLanAllowedCidrs], ["serf_wan_allowed_cidrs", c.serfWanAllowedCidrs]] as const) {
    for (const cidr of list) if (!isCidr(cidr)) bad(key, `Invalid CIDR range "${cidr}" in ${key}: expected an address and prefix such as 10.0.0.0/8`);
  }
  if (c.dnsConfig.recursorStrategy !== "sequential" && c.dnsConfig.recursorStrategy !== "random") {
    bad("dns_config.recursor_strategy", `Invalid dns_config.recursor_strategy "${String(c.dnsConfig.recursorStrategy)}": use "sequential" or "random"`);
  }
  if (c.dnsConfig.udpAnswerLimit < 0) bad("dns_config.udp_answer_limit", "dns_config.udp_answer_limit must be ≥ 0");
  if (c.domain === "." || c.domain === "") bad("domain", "domain must not be empty");
  if (c.altDomain !== "" && c.altDomain === c.domain) bad("alt_domain", "alt_domain must differ from domain");
  errors.push(...validateTls(c));
  return errors;
}

/** Go's net.ParseCIDR accepts it: an IPv4 or IPv6 address, "/", a prefix length. */
export function isCidr(text: string): boolean {
  const parts = text.trim().split("/");
  if (parts.length !== 2 || !/^\d{1,3}$/.test(parts[1]!)) return false;
  const [addr, prefixText] = parts as [string, string];
  const prefix = Number(prefixText);
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(addr);
  if (v4) return v4.slice(1).every((o) => Number(o) <= 255) && prefix <= 32;
  if (!/^[0-9a-fA-F:]+$/.test(addr) || !addr.includes(":") || addr.split("::").length > 2) return false;
  const groups = addr.split(":").filter((g) => g !== "");
  if (groups.some((g) => g.length > 4)) return false;
  return (addr.includes("::") ? groups.length <= 7 : groups.length === 8) && prefix <= 128;
}

function base64Length(text: string): number | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return undefined;
  const pad = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return (text.length / 4) * 3 - pad;
}
