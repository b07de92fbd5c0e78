// `cairn agent`: flags → AgentConfig (files from -config-file/-config-dir in
// the order given, flags on top), validation, then the agent runtime.
import { consulTags } from "../core/pool/mod.ts";
import { runAgent } from "../core/agent/mod.ts";
import { configFormats, keyRows, validateConfig } from "../core/config/mod.ts";
import type { AgentConfig, ConfigFormat, ConfigLayer } from "../core/config/mod.ts";
import { loadConfig } from "../core/config/load_node.ts";
import type { ConfigPath } from "../core/config/load_node.ts";
import { errorMessage } from "../core/errors.ts";
import { warmUpGossip } from "../core/gossip/warmup.ts";
import { parseLogLevel } from "../core/log/mod.ts";
import { parseCommandFlags } from "./_command.ts";
import { clientV8 } from "./agent_v8.ts";
import { bool, formatHelp, list, num, str } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";

const flags: readonly FlagSpec[] = [
  { name: "advertise", kind: "string", valueName: "addr", usage: "Sets the advertise address to use." },
  { name: "advertise-wan", kind: "string", valueName: "addr", usage: "Sets address to advertise on WAN instead of -advertise address." },
  { name: "alt-domain", kind: "string", valueName: "domain", usage: "Alternate domain to use for DNS interface." },
  { name: "bind", kind: "string", valueName: "addr", usage: "Sets the bind address for cluster communication." },
  { name: "bootstrap", kind: "bool", usage: "Sets server to bootstrap mode." },
  { name: "bootstrap-expect", kind: "uint", valueName: "int", usage: "Sets server to expect bootstrap mode." },
  { name: "client", kind: "string", valueName: "addr", usage: "Sets the address to bind for client access. This includes RPC, DNS and HTTP. A space-separated list binds each." },
  {
    name: "config-dir",
    kind: "list",
    valueName: "dir",
    usage:
      "Path to a directory to read configuration files from. Files ending in .hcl, .json, .yaml or .yml are read in lexical order; other files are skipped with a warning. Can be specified multiple times.",
  },
  {
    name: "config-file",
    kind: "list",
    valueName: "file",
    usage: "Path to an HCL, JSON or YAML file to read configuration from. Can be specified multiple times; later files override earlier ones.",
  },
  {
    name: "config-format",
    kind: "string",
    valueName: "string",
    usage: "Config files are in this format irrespective of their extension. Must be 'hcl', 'json' or 'yaml'.",
  },
  { name: "data-dir", kind: "string", valueName: "path", usage: "Path to a data directory to store agent state." },
  { name: "datacenter", kind: "string", valueName: "name", usage: "Datacenter of the agent." },
  { name: "dev", kind: "bool", usage: "Starts the agent in development mode: one in-memory server on loopback." },
  { name: "disable-host-node-id", kind: "bool", usage: "Accepted for compatibility; ignored." },
  { name: "disable-keyring-file", kind: "bool", usage: "Disables the backing up of the keyring to a file." },
  { name: "dns-port", kind: "int", valueName: "int", usage: "DNS port to use." },
  { name: "domain", kind: "string", valueName: "domain", usage: "Domain to use for DNS interface." },
  { name: "enable-local-script-checks", kind: "bool", usage: "Enables health check scripts from configuration file." },
  { name: "enable-script-checks", kind: "bool", usage: "Enables health check scripts." },
  { name: "encrypt", kind: "string", valueName: "key", usage: "Provides the gossip encryption key." },
  { name: "http-port", kind: "int", valueName: "int", usage: "Sets the HTTP API port to listen on." },
  { name: "https-port", kind: "int", valueName: "int", usage: "Sets the HTTPS API port to listen on (needs a certificate in the tls config)." },
  { name: "hcl", kind: "list", valueName: "string", usage: "HCL configuration fragment. This HCL fragment is appended to the configuration and allows to specify the full range of options of a config file on the command line. This option can be specified multiple times." },
  { name: "join", kind: "list", valueName: "address", usage: "Address of an agent to join at start time. Can be specified multiple times." },
  { name: "join-wan", kind: "list", valueName: "address", usage: "Address of an agent to join -wan at start time. Can be specified multiple times." },
  { name: "log-file", kind: "string", valueName: "path", usage: "Path to the file the logs get written to. A path ending in / is a directory holding consul.log." },
  { name: "log-json", kind: "bool", usage: "Output logs in JSON format." },
  { name: "log-level", kind: "string", valueName: "level", usage: "Log level of the agent (trace, debug, info, warn, err)." },
  { name: "log-rotate-bytes", kind: "uint", valueName: "int", usage: "Maximum number of bytes that should be written to a log file." },
  { name: "log-rotate-duration", kind: "duration", valueName: "duration", usage: "Time after which log rotation needs to be performed." },
  { name: "log-rotate-max-files", kind: "int", valueName: "int", usage: "Maximum number of log file archives to keep (0 keeps all, -1 none)." },
  { name: "node", kind: "string", valueName: "name", usage: "Name of this node. Must be unique in the cluster." },
  { name: "node-id", kind: "string", valueName: "id", usage: "A unique ID for this node across space and time. Defaults to a randomly-generated ID that persists in the data-dir." },
  { name: "node-meta", kind: "list", valueName: "key:value", usage: "An arbitrary metadata key/value pair for this node, of the format `key:value`. Can be specified multiple times." },
  { name: "pid-file", kind: "string", valueName: "path", usage: "Path to file to store agent PID." },
  { name: "recursor", kind: "list", valueName: "address", usage: "Address of an upstream DNS server. Can be specified multiple times." },
  { name: "rejoin", kind: "bool", usage: "Ignores a previous leave and attempts to rejoin the cluster." },
  { name: "retry-interval", kind: "duration", valueName: "duration", usage: "Time to wait between join attempts." },
  { name: "retry-interval-wan", kind: "duration", valueName: "duration", usage: "Time to wait between join -wan attempts." },
  { name: "retry-join", kind: "list", valueName: "address", usage: "Address of an agent to join at start time with retries enabled. Can be specified multiple times." },
  { name: "retry-join-wan", kind: "list", valueName: "address", usage: "Address of an agent to join -wan at start time with retries enabled. Can be specified multiple times." },
  { name: "retry-max", kind: "uint", valueName: "int", usage: "Maximum number of join attempts. Defaults to 0, which will retry indefinitely." },
  { name: "retry-max-wan", kind: "uint", valueName: "int", usage: "Maximum number of join -wan attempts. Defaults to 0, which will retry indefinitely." },
  { name: "serf-lan-allowed-cidrs", kind: "list", valueName: "cidr", usage: "Networks to allow Serf LAN gossip from (e.g. 10.0.0.0/8). Can be specified multiple times." },
  { name: "serf-wan-allowed-cidrs", kind: "list", valueName: "cidr", usage: "Networks to allow Serf WAN gossip from. Can be specified multiple times." },
  { name: "serf-lan-bind", kind: "string", valueName: "addr", usage: "Address to bind Serf LAN listeners to." },
  { name: "serf-wan-bind", kind: "string", valueName: "addr", usage: "Address to bind Serf WAN listeners to." },
  { name: "serf-lan-port", kind: "int", valueName: "int", usage: "Sets the Serf LAN port to listen on." },
  { name: "serf-wan-port", kind: "int", valueName: "int", usage: "Sets the Serf WAN port to listen on." },
  { name: "server", kind: "bool", usage: "Switches agent to server mode." },
  { name: "server-port", kind: "int", valueName: "int", usage: "Sets the server port to listen on." },
  { name: "ui", kind: "bool", usage: "Enables the built-in web UI server (at ui_config.content_path, default /ui/)." },
];

function help(): string {
  const rows = keyRows();
  const all = [...rows.agent, ...rows.service, ...rows.check];
  const count = (status: string) => all.filter((r) => r.status === status).length;
  return `
Usage: cairn agent [options]

  Starts the cairn agent and runs until an interrupt is received. The
  agent represents a single node in a cluster.

  Configuration comes from defaults, then -dev, then every -config-file and
  -config-dir in the order given, then the flags below, then every -hcl
  fragment, each overriding what came before.

  Config files are Consul's: HCL, JSON (or YAML), Consul's key names. Of the
  ${all.length} keys Consul's agent accepts, cairn implements ${count("implemented")}; ${count("planned")} are
  planned and ${count("ignored")} have no effect by design (service mesh, Enterprise, HCP,
  UI metrics). Those are accepted with one warning each at startup; a key Consul
  does not know is an error. List them all with "cairn config keys".
`;
}

/** Flags that map to config fields, as a layer over the files (only what was given). */
function flagLayer(p: ParsedFlags): ConfigLayer | string {
  const layer: ConfigLayer = {};
  const has = (n: string) => p.values.has(n);
  const setStr = (n: string, apply: (v: string) => void) => has(n) && apply(str(p, n));
  const setBool = (n: string, apply: (v: boolean) => void) => has(n) && apply(bool(p, n));
  const setNum = (n: string, apply: (v: number) => void) => {
    const v = num(p, n);
    if (v !== undefined) apply(v);
  };
  setBool("dev", (v) => (layer.dev = v));
  setBool("server", (v) => (layer.server = v));
  setBool("bootstrap", (v) => (layer.bootstrap = v));
  setNum("bootstrap-expect", (v) => (layer.bootstrapExpect = v));
  setStr("data-dir", (v) => (layer.dataDir = v));
  setStr("node", (v) => (layer.nodeName = v));
  setStr("node-id", (v) => (layer.nodeId = v));
  setStr("datacenter", (v) => (layer.datacenter = v));
  setStr("bind", (v) => (layer.bindAddr = v));
  setStr("advertise", (v) => (layer.advertiseAddr = v));
  setStr("serf-lan-bind", (v) => (layer.serfLanBindAddr = v));
  setStr("serf-wan-bind", (v) => (layer.serfWanBindAddr = v));
  if (has("serf-lan-allowed-cidrs")) layer.serfLanAllowedCidrs = list(p, "serf-lan-allowed-cidrs");
  if (has("serf-wan-allowed-cidrs")) layer.serfWanAllowedCidrs = list(p, "serf-wan-allowed-cidrs");
  setStr("advertise-wan", (v) => (layer.advertiseAddrWan = v));
  setStr("client", (v) => (layer.clientAddr = v));
  const ports: NonNullable<ConfigLayer["ports"]> = {};
  setNum("http-port", (v) => (ports.http = v));
  setNum("https-port", (v) => (ports.https = v));
  setNum("dns-port", (v) => (ports.dns = v));
  setNum("serf-lan-port", (v) => (ports.serfLan = v));
  setNum("serf-wan-port", (v) => (ports.serfWan = v));
  setNum("server-port", (v) => (ports.server = v));
  if (Object.keys(ports).length) layer.ports = ports;
  if (has("join")) layer.startJoin = list(p, "join");
  if (has("join-wan")) layer.startJoinWan = list(p, "join-wan");
  if (has("retry-join")) layer.retryJoin = list(p, "retry-join");
  if (has("retry-join-wan")) layer.retryJoinWan = list(p, "retry-join-wan");
  setNum("retry-interval", (v) => (layer.retryIntervalMs = v));
  setNum("retry-interval-wan", (v) => (layer.retryIntervalWanMs = v));
  setNum("retry-max", (v) => (layer.retryMax = v));
  setNum("retry-max-wan", (v) => (layer.retryMaxWan = v));
  setStr("encrypt", (v) => (layer.encrypt = v));
  setBool("disable-keyring-file", (v) => (layer.disableKeyringFile = v));
  setBool("rejoin", (v) => (layer.rejoinAfterLeave = v));
  setBool("ui", (v) => (layer.uiConfig = { enabled: v }));
  if (has("log-level")) {
    const level = parseLogLevel(str(p, "log-level"));
    if (!level) return `Invalid log level "${str(p, "log-level")}": use trace, debug, info, warn or err`;
    layer.logLevel = level;
  }
  setBool("log-json", (v) => (layer.logJson = v));
  setStr("log-file", (v) => (layer.logFile = v));
  setNum("log-rotate-bytes", (v) => (layer.logRotateBytes = v));
  setNum("log-rotate-duration", (v) => (layer.logRotateDurationMs = v));
  setNum("log-rotate-max-files", (v) => (layer.logRotateMaxFiles = v));
  setStr("domain", (v) => (layer.domain = v));
  setStr("alt-domain", (v) => (layer.altDomain = v));
  if (has("recursor")) layer.recursors = list(p, "recursor");
  setBool("enable-script-checks", (v) => (layer.enableScriptChecks = v));
  setBool("enable-local-script-checks", (v) => (layer.enableLocalScriptChecks = v));
  setStr("pid-file", (v) => (layer.pidFile = v));
  if (has("node-meta")) {
    const meta: Record<string, string> = {};
    for (const kv of list(p, "node-meta")) {
      const i = kv.indexOf(":");
      if (i <= 0) return `Invalid -node-meta "${kv}": expected key:value`;
      meta[kv.slice(0, i)] = kv.slice(i + 1);
    }
    layer.nodeMeta = meta;
  }
  return layer;
}

/** Everything loadConfig needs, taken from the arguments once and reused on reload. */
type LoadOptions = Parameters<typeof loadConfig>[0];

function loadOptionsFromArgs(args: string[], io: CliIo): LoadOptions | number {
  const p = parseCommandFlags(agentCommand, args, flags, io);
  if (typeof p === "number") return p;
  if (p.positionals.length > 0) {
    io.stderr(`==> Unexpected extra arguments: ${p.positionals.join(" ")}\n`);
    return 1;
  }
  const layer = flagLayer(p);
  if (typeof layer === "string") {
    io.stderr(`==> ${layer}\n`);
    return 1;
  }
  let format: ConfigFormat | undefined;
  if (p.values.has("config-format")) {
    const f = str(p, "config-format");
    if (!configFormats.includes(f as ConfigFormat)) {
      io.stderr(`==> Invalid -config-format "${f}": must be 'hcl', 'json' or 'yaml'\n`);
      return 1;
    }
    format = f as ConfigFormat;
  }
  const paths: ConfigPath[] = p.occurrences
    .filter((o) => o.name === "config-file" || o.name === "config-dir")
    .map((o) => ({ kind: o.name === "config-dir" ? "dir" : "file", path: o.value }));
  return { paths, flags: layer, dev: bool(p, "dev"), hcl: list(p, "hcl"), format };
}

function loadAndValidate(options: LoadOptions, io: CliIo): AgentConfig | number {
  let config: AgentConfig;
  try {
    config = loadConfig(options);
  } catch (err) {
    io.stderr(`==> ${errorMessage(err)}\n`);
    return 1;
  }
  const problems = validateConfig(config);
  if (problems.length) {
    for (const e of problems) io.stderr(`==> ${e.message}\n`);
    return 1;
  }
  return config;
}

/**
 * Build and validate the agent's config from its arguments. Returns the
 * config, or an exit code after printing the reason (`==> …`) or the help.
 */
export function agentConfigFromArgs(args: string[], io: CliIo): AgentConfig | number {
  const options = loadOptionsFromArgs(args, io);
  if (typeof options === "number") return options;
  return loadAndValidate(options, io);
}

/** A repeating timer that does not keep the process alive. */
function unrefInterval(ms: number, fn: () => void): { cancel(): void } {
  const t = setInterval(fn, ms);
  (t as { unref?: () => void }).unref?.();
  return { cancel: () => clearInterval(t) };
}

function unrefTimeout(ms: number, fn: () => void): { cancel(): void } {
  const t = setTimeout(fn, ms);
  (t as { unref?: () => void }).unref?.();
  return { cancel: () => clearTimeout(t) };
}

export const agentCommand: Command = {
  name: "agent",
  synopsis: "Runs a cairn agent",
  help: () => formatHelp(help(), flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const options = loadOptionsFromArgs(args, io);
    if (typeof options === "number") return options;
    const config = loadAndValidate(options, io);
    if (typeof config === "number") return config;
    // SIGHUP and `cairn reload` read the same files, directories and -hcl fragments again (new files too, as Consul does).
    const reloadConfig = () => loadConfig(options);
    const v8 = io.v8 ? clientV8(config, { ...io.v8, nowMs: () => performance.now(), every: unrefInterval, after: unrefTimeout }) : undefined;
    try {
      // A client warms its gossip paths before it joins anything (see core/gossip/warmup.ts);
      // servers tier up to optimised code early anyway (agent_v8.ts).
      if (!config.server) warmUpGossip({ tags: consulTags(config, { nodeId: "00000000-0000-4000-8000-000000000000", pool: "lan" }) });
      return await runAgent(config, { stdout: io.stdout, stderr: io.stderr }, { reloadConfig, onStarted: () => v8?.started(), onSnapshotWrite: v8 ? () => v8.bulkWriting() : undefined });
    } finally {
      v8?.stop();
    }
  },
};
