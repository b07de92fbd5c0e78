// Decoding service and check definitions, from the HTTP API body or a config
// file. Keys match case-insensitively and snake_case equals CamelCase
// (`enable_tag_override` = `EnableTagOverride`), as Consul's decodeBody and
// lib.TranslateKeys make them; map keys (Meta, Header) are kept as written.
// Durations are Go strings ("10s") or numbers of nanoseconds. Errors carry
// Consul's wording and become 400s.
import { parseDuration } from "../config/duration.ts";
import { BadRequestError } from "../errors.ts";
import {
  isHealthStatus,
  type CheckDefinition,
  type CheckKind,
  type CheckType,
  type LocalService,
  type ServiceDefinition,
} from "./types.ts";

type Raw = Record<string, unknown>;

function norm(key: string): string {
  return key.toLowerCase().replace(/[_-]/g, "");
}

function isObject(v: unknown): v is Raw {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The value of the first key that matches any of the names. */
function field(obj: Raw, ...names: string[]): unknown {
  const wanted = new Set(names.map(norm));
  for (const [k, v] of Object.entries(obj)) if (wanted.has(norm(k))) return v;
  return undefined;
}

function str(obj: Raw, what: string, ...names: string[]): string {
  const v = field(obj, ...names);
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new BadRequestError(`Request decode failed: ${what} must be a string`);
  return v;
}

function int(obj: Raw, what: string, ...names: string[]): number {
  const v = field(obj, ...names);
  if (v === undefined || v === null) return 0;
  const n = typeof v === "string" && /^-?\d+$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n)) throw new BadRequestError(`Request decode failed: ${what} must be an integer`);
  return n;
}

function bool(obj: Raw, what: string, ...names: string[]): boolean {
  const v = field(obj, ...names);
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") throw new BadRequestError(`Request decode failed: ${what} must be true or false`);
  return v;
}

function strList(obj: Raw, what: string, ...names: string[]): string[] {
  const v = field(obj, ...names);
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
    throw new BadRequestError(`Request decode failed: ${what} must be a list of strings`);
  }
  return [...(v as string[])];
}

function strMap(obj: Raw, what: string, ...names: string[]): Record<string, string> {
  const v = field(obj, ...names);
  if (v === undefined || v === null) return {};
  if (!isObject(v)) throw new BadRequestError(`Request decode failed: ${what} must be an object`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== "string") throw new BadRequestError(`Request decode failed: ${what}["${k}"] must be a string`);
    out[k] = x;
  }
  return out;
}

/** Go duration text, or a number of nanoseconds (Go's time.Duration in JSON). Result in ms. */
function duration(obj: Raw, what: string, ...names: string[]): number {
  const v = field(obj, ...names);
  if (v === undefined || v === null || v === "") return 0;
  if (typeof v === "number" && Number.isFinite(v)) return v / 1e6;
  if (typeof v === "string") {
    const ms = parseDuration(v);
    if (ms !== undefined) return ms;
    throw new BadRequestError(`Request decode failed: ${what}: time: invalid duration "${v}"`);
  }
  throw new BadRequestError(`Request decode failed: ${what} must be a duration such as "10s"`);
}

/** Check fields shared by service-embedded and standalone checks (consul CheckType). */
function decodeCheckType(raw: Raw): CheckType {
  const args = strList(raw, "Args", "Args", "ScriptArgs");
  if (field(raw, "Script") !== undefined) {
    throw new BadRequestError(`Invalid check: "script" is no longer supported, use "args" with the command and its arguments as a list`);
  }
  const http = str(raw, "HTTP", "HTTP");
  const tcp = str(raw, "TCP", "TCP");
  const udp = str(raw, "UDP", "UDP");
  const h2ping = str(raw, "H2PING", "H2PING");
  const grpc = str(raw, "GRPC", "GRPC");
  const dockerContainerId = str(raw, "DockerContainerID", "DockerContainerID");
  const osService = str(raw, "OSService", "OSService");
  const aliasNode = str(raw, "AliasNode", "AliasNode");
  const aliasService = str(raw, "AliasService", "AliasService");
  const ttlMs = duration(raw, "TTL", "TTL");
  const intervalMs = duration(raw, "Interval", "Interval");
  const headerRaw = field(raw, "Header");
  const header: Record<string, string[]> = {};
  if (headerRaw !== undefined && headerRaw !== null) {
    if (!isObject(headerRaw)) throw new BadRequestError("Request decode failed: Header must be an object of lists");
    for (const [k, v] of Object.entries(headerRaw)) {
      if (typeof v === "string") header[k] = [v];
      else if (Array.isArray(v) && v.every((x) => typeof x === "string")) header[k] = [...(v as string[])];
      else throw new BadRequestError(`Request decode failed: Header["${k}"] must be a list of strings`);
    }
  }
  // The order of consul's agent.addCheck: a Docker check also has args.
  let kind: CheckKind;
  if (http !== "") kind = "http";
  else if (tcp !== "") kind = "tcp";
  else if (udp !== "") kind = "udp";
  else if (grpc !== "") kind = "grpc";
  else if (dockerContainerId !== "") kind = "docker";
  else if (args.length > 0) kind = "script";
  else if (aliasService !== "" || aliasNode !== "") kind = "alias";
  else if (h2ping !== "") kind = "h2ping";
  else if (osService !== "") kind = "os_service";
  else kind = "ttl";
  const useTls = (name: string): boolean => {
    const v = field(raw, name);
    if (v === undefined || v === null) return name === "H2PingUseTLS";
    if (typeof v !== "boolean") throw new BadRequestError(`Request decode failed: ${name} must be true or false`);
    return v;
  };
  const failuresBeforeCritical = int(raw, "FailuresBeforeCritical", "FailuresBeforeCritical");
  const t: CheckType = {
    kind,
    intervalMs,
    timeoutMs: duration(raw, "Timeout", "Timeout"),
    ttlMs,
    http,
    method: str(raw, "Method", "Method"),
    header,
    body: str(raw, "Body", "Body"),
    tlsSkipVerify: bool(raw, "TLSSkipVerify", "TLSSkipVerify"),
    tlsServerName: str(raw, "TLSServerName", "TLSServerName"),
    disableRedirects: bool(raw, "DisableRedirects", "DisableRedirects"),
    tcp,
    ...(udp ? { udp } : {}),
    ...(h2ping ? { h2ping, h2pingUseTls: useTls("H2PingUseTLS") } : {}),
    ...(grpc ? { grpc, grpcUseTls: useTls("GRPCUseTLS") } : {}),
    ...(dockerContainerId ? { dockerContainerId } : {}),
    ...(osService ? { osService } : {}),
    args,
    aliasNode,
    aliasService,
    deregisterCriticalServiceAfterMs: duration(raw, "DeregisterCriticalServiceAfter", "DeregisterCriticalServiceAfter"),
    successBeforePassing: int(raw, "SuccessBeforePassing", "SuccessBeforePassing"),
    failuresBeforeWarning: int(raw, "FailuresBeforeWarning", "FailuresBeforeWarning") || failuresBeforeCritical,
    failuresBeforeCritical,
    outputMaxSize: int(raw, "OutputMaxSize", "OutputMaxSize"),
  };
  validateCheckType(t);
  return t;
}

/** consul structs.CheckType.Validate, with its wording. */
function validateCheckType(t: CheckType): void {
  const intervalCheck = t.kind !== "ttl" && t.kind !== "alias";
  const bad = (m: string): never => {
    throw new BadRequestError(`Invalid check: ${m}`);
  };
  if (t.intervalMs > 0 && t.ttlMs > 0) bad("Interval and TTL cannot both be specified");
  if (intervalCheck && t.intervalMs <= 0) bad("Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or GRPC checks");
  if (t.kind === "alias" && t.ttlMs > 0) bad("TTL must be not be set for Alias checks");
  if (t.kind === "ttl" && t.ttlMs <= 0) bad("TTL must be > 0 for TTL checks");
  if (t.outputMaxSize < 0) bad("MaxOutputMaxSize must be positive");
  if (t.successBeforePassing < 0 || t.failuresBeforeCritical < 0 || t.failuresBeforeWarning < 0) {
    bad("SuccessBeforePassing, FailuresBeforeWarning and FailuresBeforeCritical must not be negative");
  }
  if (t.kind === "http" && !/^https?:\/\//i.test(t.http)) bad(`HTTP must be an http:// or https:// URL: "${t.http}"`);
  if (t.kind === "tcp" && !/^.+:\d+$/.test(t.tcp)) bad(`TCP must be host:port: "${t.tcp}"`);
  if (t.kind === "udp" && !/^.+:\d+$/.test(t.udp ?? "")) bad(`UDP must be host:port: "${t.udp}"`);
  if (t.kind === "h2ping" && !/^.+:\d+$/.test(t.h2ping ?? "")) bad(`H2PING must be host:port: "${t.h2ping}"`);
  if (t.kind === "grpc" && !/^[^/]+:\d+(\/.*)?$/.test(t.grpc ?? "")) bad(`GRPC must be host:port or host:port/service: "${t.grpc}"`);
  if (t.kind === "docker" && t.args.length === 0) bad("Docker checks need args");
}

function decodeStatus(raw: Raw, message: string): CheckDefinition["status"] {
  const status = str(raw, "Status", "Status");
  if (status === "") return undefined;
  if (!isHealthStatus(status)) throw new BadRequestError(message);
  return status;
}

/** A standalone check (PUT /v1/agent/check/register, `check`/`checks` in config). */
export function decodeCheckDefinition(raw: unknown): CheckDefinition {
  if (!isObject(raw)) throw new BadRequestError("Request decode failed: expected a JSON object");
  const name = str(raw, "Name", "Name");
  if (name === "") throw new BadRequestError("Missing check name");
  const status = decodeStatus(raw, "Bad check status");
  return {
    id: str(raw, "ID", "ID", "CheckID"),
    name,
    notes: str(raw, "Notes", "Notes"),
    serviceId: str(raw, "ServiceID", "ServiceID"),
    status,
    checkType: decodeCheckType(raw),
    token: str(raw, "Token", "Token"),
  };
}

function decodeServiceCheck(raw: unknown): CheckDefinition {
  if (!isObject(raw)) throw new BadRequestError("Request decode failed: a check must be a JSON object");
  const status = decodeStatus(raw, "Status for checks must 'passing', 'warning', 'critical'");
  return {
    id: str(raw, "CheckID", "CheckID", "ID"),
    name: str(raw, "Name", "Name"),
    notes: str(raw, "Notes", "Notes"),
    serviceId: "",
    status,
    checkType: decodeCheckType(raw),
    token: "",
  };
}

function isEmptyCheck(raw: Raw): boolean {
  return Object.values(raw).every((v) => v === undefined || v === null || v === "" || v === 0 || v === false);
}

const META_KEY = /^[a-zA-Z0-9_-]+$/;

/** A service with its embedded `Check`/`Checks` (PUT /v1/agent/service/register, `service`/`services` in config). */
export function decodeServiceDefinition(raw: unknown): ServiceDefinition {
  if (!isObject(raw)) throw new BadRequestError("Request decode failed: expected a JSON object");
  const name = str(raw, "Name", "Name", "Service");
  if (name === "") throw new BadRequestError("Missing service name");
  const address = str(raw, "Address", "Address");
  if (address === "0.0.0.0" || address === "::" || address === "[::]") throw new BadRequestError("Invalid service address");
  const port = int(raw, "Port", "Port");
  if (port < 0 || port > 65535) throw new BadRequestError(`Validation failed: invalid port ${port}`);
  const meta = strMap(raw, "Meta", "Meta");
  for (const k of Object.keys(meta)) {
    if (k.length > 128 || !META_KEY.test(k)) {
      throw new BadRequestError(`Invalid Service Meta: Key contains invalid characters: "${k}"`);
    }
    if (k.startsWith("consul-")) throw new BadRequestError(`Invalid Service Meta: Key prefix 'consul-' is reserved for internal use: "${k}"`);
  }
  const taggedAddresses: LocalService["taggedAddresses"] = {};
  const ta = field(raw, "TaggedAddresses");
  if (ta !== undefined && ta !== null) {
    if (!isObject(ta)) throw new BadRequestError("Request decode failed: TaggedAddresses must be an object");
    for (const [k, v] of Object.entries(ta)) {
      if (!isObject(v)) throw new BadRequestError(`Request decode failed: TaggedAddresses["${k}"] must be an object with Address and Port`);
      taggedAddresses[k] = { address: str(v, "Address", "Address"), port: int(v, "Port", "Port") };
    }
  }
  const weights = { passing: 1, warning: 1 };
  const w = field(raw, "Weights");
  if (isObject(w)) {
    weights.passing = int(w, "Weights.Passing", "Passing");
    weights.warning = int(w, "Weights.Warning", "Warning");
    if (weights.passing < 1) throw new BadRequestError("Invalid Weights: Passing must be greater than 0");
  }
  const service: LocalService = {
    kind: str(raw, "Kind", "Kind"),
    id: str(raw, "ID", "ID") || name,
    service: name,
    tags: strList(raw, "Tags", "Tags"),
    meta,
    address,
    port,
    taggedAddresses,
    weights,
    enableTagOverride: bool(raw, "EnableTagOverride", "EnableTagOverride"),
  };
  const checks: CheckDefinition[] = [];
  const one = field(raw, "Check");
  if (isObject(one) && !isEmptyCheck(one)) checks.push(decodeServiceCheck(one));
  else if (one !== undefined && one !== null && !isObject(one)) throw new BadRequestError("Request decode failed: Check must be an object");
  const many = field(raw, "Checks");
  if (many !== undefined && many !== null) {
    if (!Array.isArray(many)) throw new BadRequestError("Request decode failed: Checks must be a list");
    for (const c of many) if (!(isObject(c) && isEmptyCheck(c))) checks.push(decodeServiceCheck(c));
  }
  return { service, checks, token: str(raw, "Token", "Token") };
}

/**
 * A CheckType read back from disk, made whole: any missing or mistyped field
 * takes its default, so a damaged file cannot give a runner NaN timings.
 * Undefined when the kind is unknown.
 */
export function normalizeCheckType(raw: unknown): CheckType | undefined {
  if (!isObject(raw)) return undefined;
  const kinds: readonly CheckKind[] = ["ttl", "http", "tcp", "script", "alias"];
  if (!kinds.includes(raw.kind as CheckKind)) return undefined;
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : 0);
  const s = (v: unknown) => (typeof v === "string" ? v : "");
  const header: Record<string, string[]> = {};
  if (isObject(raw.header)) {
    for (const [k, v] of Object.entries(raw.header)) if (Array.isArray(v) && v.every((x) => typeof x === "string")) header[k] = v as string[];
  }
  const t: CheckType = {
    kind: raw.kind as CheckKind,
    intervalMs: n(raw.intervalMs),
    timeoutMs: n(raw.timeoutMs),
    ttlMs: n(raw.ttlMs),
    http: s(raw.http),
    method: s(raw.method),
    header,
    body: s(raw.body),
    tlsSkipVerify: raw.tlsSkipVerify === true,
    tlsServerName: s(raw.tlsServerName),
    disableRedirects: raw.disableRedirects === true,
    tcp: s(raw.tcp),
    args: Array.isArray(raw.args) ? raw.args.filter((x): x is string => typeof x === "string") : [],
    aliasNode: s(raw.aliasNode),
    aliasService: s(raw.aliasService),
    deregisterCriticalServiceAfterMs: n(raw.deregisterCriticalServiceAfterMs),
    successBeforePassing: n(raw.successBeforePassing),
    failuresBeforeWarning: n(raw.failuresBeforeWarning),
    failuresBeforeCritical: n(raw.failuresBeforeCritical),
    outputMaxSize: n(raw.outputMaxSize),
  };
  try {
    validateCheckType(t);
  } catch {
    return undefined;
  }
  return t;
}

/**
 * The checks of a service with their final IDs and names, as consul
 * agent.AddService assigns them: `service:<id>`, or `service:<id>:<n>` when
 * there are several; name `Service '<name>' check`.
 */
export function serviceCheckDefinitions(def: ServiceDefinition): CheckDefinition[] {
  const n = def.checks.length;
  return def.checks.map((c, i) => ({
    ...c,
    id: c.id || (n > 1 ? `service:${def.service.id}:${i + 1}` : `service:${def.service.id}`),
    name: c.name || `Service '${def.service.service}' check`,
    serviceId: def.service.id,
  }));
}
