// The file schema: Consul's snake_case keys, what type each holds and where
// it lands in AgentConfig. decodeLayer() turns a parsed JSON/YAML object into
// a ConfigLayer, or throws ConfigError naming the file and key path.
import { ConfigError } from "../errors.ts";
import { parseLogLevel } from "../log/mod.ts";
import { parseDuration } from "./duration.ts";
import type { ConfigLayer } from "./types.ts";

type Kind =
  | "string"
  | "bool"
  | "uint"
  | "port"
  | "duration"
  | "strings"
  | "stringMap"
  | "durationMap"
  | "logLevel"
  /** one raw object, appended to the list named by `to` */
  | "rawOne"
  /** a list of raw objects */
  | "rawList"
  /** accepted and ignored */
  | "ignore";

interface Leaf {
  kind: Kind;
  /** camelCase target; default: the key in camelCase (+ "Ms" for durations). */
  to?: string;
}
interface Section {
  section: Schema;
  to?: string;
}
type Schema = Record<string, Kind | Leaf | Section>;

const SCHEMA: Schema = {
  node_name: "string",
  node_id: "string",
  datacenter: "string",
  data_dir: "string",
  server: "bool",
  bootstrap: "bool",
  bootstrap_expect: "uint",
  bind_addr: "string",
  client_addr: "string",
  advertise_addr: "string",
  advertise_addr_wan: "string",
  addresses: { section: { http: "string", dns: "string", https: "ignore", grpc: "ignore", grpc_tls: "ignore" } },
  ports: {
    section: {
      http: "port",
      dns: "port",
      serf_lan: "port",
      serf_wan: "port",
      server: "port",
      https: "ignore",
      grpc: "ignore",
      grpc_tls: "ignore",
    },
  },
  start_join: "strings",
  start_join_wan: "strings",
  retry_join: "strings",
  retry_join_wan: "strings",
  retry_interval: "duration",
  retry_interval_wan: "duration",
  retry_max: "uint",
  retry_max_wan: "uint",
  rejoin_after_leave: "bool",
  encrypt: "string",
  encrypt_verify_incoming: "ignore",
  encrypt_verify_outgoing: "ignore",
  log_level: "logLevel",
  log_json: "bool",
  leave_on_terminate: "bool",
  skip_leave_on_interrupt: "bool",
  performance: {
    section: {
      raft_multiplier: "uint",
      leave_drain_time: "ignore",
      rpc_hold_timeout: { kind: "duration", to: "$limits.rpcHoldTimeoutMs" },
    },
  },
  raft_snapshot_threshold: "uint",
  raft_snapshot_interval: "duration",
  raft_trailing_logs: "uint",
  domain: "string",
  alt_domain: "string",
  recursors: "strings",
  dns_config: {
    section: {
      node_ttl: "duration",
      service_ttl: { kind: "durationMap", to: "serviceTtlMs" },
      allow_stale: "bool",
      max_stale: "duration",
      only_passing: "bool",
      enable_truncate: "bool",
      udp_answer_limit: "uint",
      a_record_limit: "uint",
      recursor_timeout: "duration",
      soa: { section: { refresh: "uint", retry: "uint", expire: "uint", min: "uint" } },
      disable_compression: "ignore",
      enable_additional_node_meta_txt: "ignore",
      use_cache: "ignore",
      cache_max_age: "ignore",
    },
  },
  limits: {
    section: {
      rpc_hold_timeout: "duration",
      kv_max_value_size: { kind: "uint", to: "kvMaxValueSizeBytes" },
      txn_max_req_len: { kind: "uint", to: "txnMaxReqLenBytes" },
      http_max_conns_per_client: "ignore",
      rpc_max_conns_per_client: "ignore",
      rpc_rate: "ignore",
      rpc_max_burst: "ignore",
      rpc_handshake_timeout: "ignore",
    },
  },
  enable_script_checks: "bool",
  enable_local_script_checks: "bool",
  reconnect_timeout: "duration",
  reconnect_timeout_wan: "duration",
  node_meta: "stringMap",
  pid_file: "string",
  service: { kind: "rawOne", to: "services" },
  services: "rawList",
  check: { kind: "rawOne", to: "checks" },
  checks: "rawList",
  disable_update_check: "ignore",
  disable_anonymous_signature: "ignore",
  disable_host_node_id: "ignore",
  disable_keyring_file: "ignore",
  enable_debug: "ignore",
  ui: "ignore",
  ui_config: "ignore",
  telemetry: {
    section: {
      prometheus_retention_time: "duration",
      disable_hostname: "bool",
      // Sinks cairn does not ship (statsd, dogstatsd, circonus, …) are accepted and ignored.
      statsd_address: "ignore",
      statsite_address: "ignore",
      dogstatsd_addr: "ignore",
      dogstatsd_tags: "ignore",
      metrics_prefix: "ignore",
      filter_default: "ignore",
      prefix_filter: "ignore",
      enable_host_metrics: "ignore",
      disable_compat_1_9: "ignore",
    },
  },
  raft_protocol: "ignore",
  server_name: "ignore",
  log_file: "ignore",
  log_rotate_duration: "ignore",
  log_rotate_max_files: "ignore",
  enable_syslog: "ignore",
};

function camel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return `a string ("${v}")`;
  return `${typeof v === "number" ? "a number" : typeof v} (${String(v)})`;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

interface Ctx {
  file: string;
}

function fail(ctx: Ctx, path: string, expected: string, got: unknown): never {
  throw new ConfigError(`Invalid value for "${path}" in "${ctx.file}": expected ${expected}, got ${typeName(got)}`, {
    file: ctx.file,
    field: path,
  });
}

function decodeLeaf(ctx: Ctx, path: string, kind: Kind, v: unknown): unknown {
  switch (kind) {
    case "string":
      if (typeof v !== "string") fail(ctx, path, "a string", v);
      return v;
    case "bool":
      if (typeof v !== "boolean") fail(ctx, path, "true or false", v);
      return v;
    case "uint":
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) fail(ctx, path, "a whole number ≥ 0", v);
      return v;
    case "port":
      if (typeof v !== "number" || !Number.isSafeInteger(v)) fail(ctx, path, "a port number", v);
      return v;
    case "duration": {
      if (typeof v !== "string") fail(ctx, path, 'a duration such as "10s" or "1m30s"', v);
      const ms = parseDuration(v);
      if (ms === undefined) fail(ctx, path, 'a duration such as "10s" or "1m30s"', v);
      return ms;
    }
    case "logLevel": {
      if (typeof v !== "string") fail(ctx, path, "a log level (trace, debug, info, warn, err)", v);
      const level = parseLogLevel(v);
      if (!level) fail(ctx, path, "a log level (trace, debug, info, warn, err)", v);
      return level;
    }
    case "strings": {
      const list = typeof v === "string" ? [v] : v;
      if (!Array.isArray(list)) fail(ctx, path, "a list of strings", v);
      list.forEach((item, i) => {
        if (typeof item !== "string") fail(ctx, `${path}[${i}]`, "a string", item);
      });
      return [...(list as string[])];
    }
    case "stringMap": {
      if (!isPlainObject(v)) fail(ctx, path, "an object of strings", v);
      const out: Record<string, string> = {};
      for (const [k, item] of Object.entries(v)) {
        if (typeof item !== "string") fail(ctx, `${path}.${k}`, "a string", item);
        out[k] = item;
      }
      return out;
    }
    case "durationMap": {
      if (!isPlainObject(v)) fail(ctx, path, "an object of durations", v);
      const out: Record<string, number> = {};
      for (const [k, item] of Object.entries(v)) out[k] = decodeLeaf(ctx, `${path}.${k}`, "duration", item) as number;
      return out;
    }
    case "rawOne":
      if (!isPlainObject(v)) fail(ctx, path, "an object", v);
      return [v];
    case "rawList": {
      const list = isPlainObject(v) ? [v] : v;
      if (!Array.isArray(list)) fail(ctx, path, "a list of objects", v);
      list.forEach((item, i) => {
        if (!isPlainObject(item)) fail(ctx, `${path}[${i}]`, "an object", item);
      });
      return [...(list as unknown[])];
    }
    case "ignore":
      return undefined;
  }
}

function setPath(root: Record<string, unknown>, dotted: string, value: unknown, append: boolean): void {
  const parts = dotted.split(".");
  let obj = root;
  for (const p of parts.slice(0, -1)) {
    if (!isPlainObject(obj[p])) obj[p] = {};
    obj = obj[p] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1]!;
  const prev = obj[last];
  obj[last] = append && Array.isArray(prev) && Array.isArray(value) ? [...prev, ...value] : value;
}

function decodeObject(ctx: Ctx, schema: Schema, obj: Record<string, unknown>, prefix: string, target: string, out: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(obj)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const spec = Object.hasOwn(schema, key) ? schema[key] : undefined;
    if (spec === undefined) {
      throw new ConfigError(`Unknown configuration key "${path}" in "${ctx.file}"`, { file: ctx.file, field: path });
    }
    if (typeof spec === "object" && "section" in spec) {
      if (!isPlainObject(value)) fail(ctx, path, "an object", value);
      const to = spec.to ?? camel(key);
      decodeObject(ctx, spec.section, value, path, target ? `${target}.${to}` : to, out);
      continue;
    }
    const leaf: Leaf = typeof spec === "string" ? { kind: spec } : spec;
    const decoded = decodeLeaf(ctx, path, leaf.kind, value);
    if (decoded === undefined) continue;
    let to = leaf.to ?? camel(key) + (leaf.kind === "duration" ? "Ms" : "");
    if (to.startsWith("$")) to = to.slice(1);
    else if (target) to = `${target}.${to}`;
    setPath(out, to, decoded, leaf.kind === "rawOne" || leaf.kind === "rawList");
  }
}

/** Decode one parsed file into a layer; throws ConfigError on unknown keys or wrong types. */
export function decodeLayer(parsed: unknown, file: string): ConfigLayer {
  const ctx = { file };
  if (parsed === null || parsed === undefined) return {};
  if (!isPlainObject(parsed)) {
    throw new ConfigError(`Invalid configuration in "${file}": expected an object at the top level, got ${typeName(parsed)}`, { file });
  }
  const out: Record<string, unknown> = {};
  decodeObject(ctx, SCHEMA, parsed, "", "", out);
  return out as ConfigLayer;
}
