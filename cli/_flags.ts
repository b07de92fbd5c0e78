// Flag parsing with Go's `flag` package semantics, which is what Consul's
// commands use: single-dash long flags (`-http-addr=x`, `-http-addr x`; the
// `--name` form works too), booleans as `-recurse` or `-recurse=false`,
// parsing stops at the first positional argument or at `--`, and `-` alone is
// a positional (stdin). Errors read like Go's so scripts see Consul's text.
//
// cac/mri can't do this: they read `-abc` as three short flags, parse flags
// after positionals (so `kv put key -5` would lose its value) and coerce
// numeric strings. This parser is small and exact instead.
import { readFileSync } from "node:fs";
import { ApiClient, toUint64, type Uint64 } from "../core/api/mod.ts";
import { needsTlsFetch, readClientTls, tlsFetch, type ClientTlsMaterial, type ClientTlsOptions } from "../core/api/tls_fetch_node.ts";
import type { CliIo } from "./_io.ts";

export type FlagKind = "string" | "bool" | "int" | "uint" | "uint64" | "duration" | "list";

export interface FlagSpec {
  name: string;
  kind: FlagKind;
  usage: string;
  /** Shown in help as `-name=<value>`. */
  valueName?: string;
  /** Shown in help; bools default to false. */
  defaultText?: string;
  /** Help section; default "Command Options". */
  group?: string;
}

export class FlagError extends Error {}
/** `-h`, `-help` or `--help` was given. */
export class HelpRequested extends Error {}

export interface ParsedFlags {
  /** Last value of each flag given (lists: every value). */
  values: Map<string, string | boolean | number | bigint | string[]>;
  /** Every occurrence in order, for flags whose relative order matters (`-config-file`/`-config-dir`). */
  occurrences: { name: string; value: string }[];
  positionals: string[];
}

const NUMBER_LIKE = /^-(\d|\.\d)/;

/**
 * `-name[=v]` → `--name[=v]` for every argument up to `--`; `-`, `--`, and
 * negative numbers (`-5`, `-1.5`) are left alone. Used for display and by
 * callers that hand argv to another parser; parseFlags accepts both forms.
 */
export function normalizeArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  let done = false;
  for (const a of args) {
    if (done || a === "-" || a === "--" || !a.startsWith("-") || a.startsWith("--") || NUMBER_LIKE.test(a)) {
      if (a === "--") done = true;
      out.push(a);
      continue;
    }
    out.push(`-${a}`);
  }
  return out;
}

function parseBool(text: string): boolean | undefined {
  // Go's strconv.ParseBool.
  if (["1", "t", "T", "TRUE", "true", "True"].includes(text)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(text)) return false;
  return undefined;
}

export function parseFlags(args: readonly string[], specs: readonly FlagSpec[]): ParsedFlags {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const values = new Map<string, string | boolean | number | bigint | string[]>();
  const occurrences: { name: string; value: string }[] = [];
  const positionals: string[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      i++;
      break;
    }
    // `-` (stdin) and negative numbers are positionals, never flags.
    if (a === "-" || !a.startsWith("-") || NUMBER_LIKE.test(a)) break;
    let body = a.startsWith("--") ? a.slice(2) : a.slice(1);
    if (body === "" || body.startsWith("-") || body.startsWith("=")) throw new FlagError(`bad flag syntax: ${a}`);
    let value: string | undefined;
    const eq = body.indexOf("=");
    if (eq >= 0) {
      value = body.slice(eq + 1);
      body = body.slice(0, eq);
    }
    if (body === "h" || body === "help") throw new HelpRequested();
    const spec = byName.get(body);
    if (!spec) throw new FlagError(`flag provided but not defined: -${body}`);
    if (spec.kind === "bool") {
      let b = true;
      if (value !== undefined) {
        const parsed = parseBool(value);
        if (parsed === undefined) throw new FlagError(`invalid boolean value "${value}" for -${body}: parse error`);
        b = parsed;
      }
      values.set(spec.name, b);
      occurrences.push({ name: spec.name, value: String(b) });
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= args.length) throw new FlagError(`flag needs an argument: -${body}`);
      value = args[++i]!;
    }
    values.set(spec.name, convert(spec, value, values.get(spec.name)));
    occurrences.push({ name: spec.name, value });
  }
  positionals.push(...args.slice(i));
  return { values, occurrences, positionals };
}

function convert(spec: FlagSpec, value: string, prev: unknown): string | number | bigint | string[] {
  const invalid = () => new FlagError(`invalid value "${value}" for flag -${spec.name}: parse error`);
  switch (spec.kind) {
    case "string":
      return value;
    case "list":
      return [...(Array.isArray(prev) ? (prev as string[]) : []), value];
    case "int":
    case "uint": {
      const re = spec.kind === "uint" ? /^\+?\d+$/ : /^[+-]?\d+$/;
      if (!re.test(value.trim())) throw invalid();
      const n = Number(value);
      if (!Number.isSafeInteger(n)) throw invalid();
      return n;
    }
    case "uint64": {
      // Consul's -flags is a uint64: above 2^53 it is kept as a bigint, digit for digit.
      const n = toUint64(value);
      if (n === undefined) throw invalid();
      return n;
    }
    case "duration": {
      const ms = parseGoDuration(value);
      if (ms === undefined) throw invalid();
      return ms;
    }
    case "bool":
      throw invalid();
  }
}

// The same grammar as core/config's parseDuration; kept local so flag
// parsing does not depend on the config package's internals.
function parseGoDuration(text: string): number | undefined {
  const m = /^([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|ms|s|m|h))+|0)$/.exec(text.trim());
  if (!m) return undefined;
  if (m[2] === "0") return 0;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  for (const p of m[2]!.matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|ms|s|m|h)/g)) total += Number(p[1]) * unit[p[2]!]!;
  return m[1] === "-" ? -total : total;
}

/** Typed accessors over ParsedFlags. */
export function str(p: ParsedFlags, name: string, fallback = ""): string {
  const v = p.values.get(name);
  return typeof v === "string" ? v : fallback;
}
export function bool(p: ParsedFlags, name: string): boolean {
  return p.values.get(name) === true;
}
export function num(p: ParsedFlags, name: string): number | undefined {
  const v = p.values.get(name);
  return typeof v === "number" ? v : undefined;
}
export function uint64(p: ParsedFlags, name: string): Uint64 | undefined {
  const v = p.values.get(name);
  return typeof v === "number" || typeof v === "bigint" ? v : undefined;
}
export function list(p: ParsedFlags, name: string): string[] {
  const v = p.values.get(name);
  return Array.isArray(v) ? v : [];
}

// ---- shared HTTP flags (consul command/flags/http.go) ----

const HTTP_GROUP = "HTTP API Options";

export const httpClientFlags: readonly FlagSpec[] = [
  {
    name: "http-addr",
    kind: "string",
    valueName: "address",
    group: HTTP_GROUP,
    usage:
      "The `address` and port of the agent HTTP server. This can also be specified via the CONSUL_HTTP_ADDR (or CAIRN_HTTP_ADDR) environment variable. The default value is http://127.0.0.1:8500.",
  },
  {
    name: "ca-file",
    kind: "string",
    valueName: "value",
    group: HTTP_GROUP,
    usage: "Path to a CA file to use for TLS when communicating with Consul. This can also be specified via the CONSUL_CACERT environment variable.",
  },
  {
    name: "ca-path",
    kind: "string",
    valueName: "value",
    group: HTTP_GROUP,
    usage: "Path to a directory of CA certificates to use for TLS when communicating with Consul. This can also be specified via the CONSUL_CAPATH environment variable.",
  },
  {
    name: "client-cert",
    kind: "string",
    valueName: "value",
    group: HTTP_GROUP,
    usage: "Path to a client cert file to use for TLS when 'verify_incoming' is enabled. This can also be specified via the CONSUL_CLIENT_CERT environment variable.",
  },
  {
    name: "client-key",
    kind: "string",
    valueName: "value",
    group: HTTP_GROUP,
    usage: "Path to a client key file to use for TLS when 'verify_incoming' is enabled. This can also be specified via the CONSUL_CLIENT_KEY environment variable.",
  },
  {
    name: "tls-server-name",
    kind: "string",
    valueName: "value",
    group: HTTP_GROUP,
    usage: "The server name to use as the SNI host when connecting via TLS. This can also be specified via the CONSUL_TLS_SERVER_NAME environment variable.",
  },
  {
    name: "token",
    kind: "string",
    valueName: "value",
    group: HTTP_GROUP,
    usage:
      "ACL token to use in the request. This can also be specified via the CONSUL_HTTP_TOKEN (or CAIRN_HTTP_TOKEN) environment variable. If unspecified, the query will default to the token of the agent.",
  },
  {
    name: "token-file",
    kind: "string",
    valueName: "value",
    group: HTTP_GROUP,
    usage:
      "File containing the ACL token to use in the request instead of one specified via the -token argument or CONSUL_HTTP_TOKEN environment variable. This can also be specified via the CONSUL_HTTP_TOKEN_FILE environment variable.",
  },
];

export const httpServerFlags: readonly FlagSpec[] = [
  {
    name: "datacenter",
    kind: "string",
    valueName: "name",
    group: HTTP_GROUP,
    usage: "Name of the datacenter to query. If unspecified, this will default to the datacenter of the queried agent.",
  },
  {
    name: "stale",
    kind: "bool",
    group: HTTP_GROUP,
    usage:
      "Permit any Consul server (non-leader) to respond to this request. This allows for lower latency and higher throughput, but can result in stale data. This option has no effect on non-read operations. The default value is false.",
  },
];

export const httpFlags: readonly FlagSpec[] = [...httpClientFlags, ...httpServerFlags];

function env(io: CliIo, ...names: string[]): string {
  for (const n of names) {
    const v = io.env[n];
    if (v) return v;
  }
  return "";
}

/** An ApiClient from -http-addr/-token/-datacenter, falling back to CAIRN_* then CONSUL_* env. */
export function apiClientFromFlags(p: ParsedFlags, io: CliIo): ApiClient {
  const tls = clientTlsFromFlags(p, io);
  const fetch = io.fetch ?? (needsTlsFetch(tls) ? tlsFetch(tls) : undefined);
  return clientFromFlags(p, io, fetch);
}

/**
 * The same client and the TLS settings (their files read, so a missing one
 * is reported here as for any command), for a command that reads its
 * answer off a connection of its own (core/api/http_get_node.ts: snapshot
 * save).
 */
export function apiTransportFromFlags(p: ParsedFlags, io: CliIo): { client: ApiClient; tls: ClientTlsOptions; tlsMaterial: ClientTlsMaterial } {
  const tls = clientTlsFromFlags(p, io);
  const tlsMaterial = readClientTls(tls);
  return { client: clientFromFlags(p, io, io.fetch), tls, tlsMaterial };
}

function clientTlsFromFlags(p: ParsedFlags, io: CliIo): ClientTlsOptions {
  const tls: ClientTlsOptions = {
    caFile: str(p, "ca-file") || env(io, "CONSUL_CACERT"),
    caPath: str(p, "ca-path") || env(io, "CONSUL_CAPATH"),
    certFile: str(p, "client-cert") || env(io, "CONSUL_CLIENT_CERT"),
    keyFile: str(p, "client-key") || env(io, "CONSUL_CLIENT_KEY"),
    serverName: str(p, "tls-server-name") || env(io, "CONSUL_TLS_SERVER_NAME"),
    verify: parseBool(env(io, "CAIRN_HTTP_SSL_VERIFY", "CONSUL_HTTP_SSL_VERIFY")) !== false,
  };
  if ((tls.certFile === "") !== (tls.keyFile === "")) throw new FlagError("-client-cert and -client-key must be given together");
  return tls;
}

function clientFromFlags(p: ParsedFlags, io: CliIo, fetch: typeof globalThis.fetch | undefined): ApiClient {
  const address = str(p, "http-addr") || env(io, "CAIRN_HTTP_ADDR", "CONSUL_HTTP_ADDR") || "127.0.0.1:8500";
  // Consul's order: -token, -token-file, CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE.
  const tokenFile = str(p, "token-file");
  const envTokenFile = env(io, "CAIRN_HTTP_TOKEN_FILE", "CONSUL_HTTP_TOKEN_FILE");
  const token = str(p, "token") || (tokenFile ? readTokenFile(tokenFile) : "") || env(io, "CAIRN_HTTP_TOKEN", "CONSUL_HTTP_TOKEN") || (envTokenFile ? readTokenFile(envTokenFile) : "");
  const ssl = parseBool(env(io, "CAIRN_HTTP_SSL", "CONSUL_HTTP_SSL")) === true;
  return new ApiClient({ address, token, datacenter: str(p, "datacenter"), useTls: ssl, fetch });
}

/** Help text: Consul's layout (usage, then each flag group). */
export function formatHelp(text: string, specs: readonly FlagSpec[]): string {
  const groups = new Map<string, FlagSpec[]>();
  for (const s of specs) {
    const g = s.group ?? "Command Options";
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g)!.push(s);
  }
  const sections = [text.trim()];
  for (const [group, flags] of groups) {
    const entries = [...flags]
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((f) => {
        const head = f.kind === "bool" ? `-${f.name}` : `-${f.name}=<${f.valueName ?? "value"}>`;
        let usage = f.usage.replace(/`/g, "");
        if (f.kind === "bool" && !/default value/.test(usage)) usage += ` The default value is ${f.defaultText ?? "false"}.`;
        else if (f.defaultText !== undefined && !/default value/.test(usage)) usage += ` The default value is ${f.defaultText}.`;
        return `  ${head}\n${wrap(usage, 5, 80)}`;
      });
    sections.push(`${group}\n\n${entries.join("\n\n")}`);
  }
  return `${sections.join("\n\n")}\n`;
}

function wrap(text: string, indent: number, width: number): string {
  const pad = " ".repeat(indent);
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line && pad.length + line.length + 1 + word.length > width) {
      lines.push(pad + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(pad + line);
  return lines.join("\n");
}

/** The token in a -token-file (trimmed, as Consul's); a file that cannot be read is a flag error. */
function readTokenFile(path: string): string {
  try {
    return readFileSync(path, "utf8").trim();
  } catch (err) {
    throw new FlagError(`Error loading token file: ${err instanceof Error ? err.message : String(err)}`);
  }
}
