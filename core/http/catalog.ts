// /v1/catalog/* (consul agent/catalog_endpoint.go): register, deregister,
// datacenters, nodes, services, service/<name>, node/<node>,
// node-services/<node>. Bodies are Consul's PascalCase JSON, read
// case-insensitively as Go's encoding/json does; answers are Consul's JSON.
import { BadRequestError } from "../errors.ts";
import { sortNear, type NearOptions } from "../gossip/near.ts";
import type {
  CatalogDeregisterArgs,
  CatalogRegisterArgs,
  HealthCheckDefinition,
  HealthCheckInput,
  NodeServiceInput,
  QueryMeta,
  Rpc,
} from "../rpc/mod.ts";
import { formatGoDurationMs, nodeServicesToJson, nodeToJson, serviceNodeToJson } from "../state/catalog_json.ts";
import { translateNodes, translateNodeServices, translateServiceNodes, withTranslateHeader, type WanTranslation } from "./translate.ts";
import { parseGoDuration, parseQueryOptions, parseWriteOptions, setMetaHeaders } from "./blocking.ts";
import { sharedListResponse } from "./encoded_cache.ts";
import { jsonResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

export type JsonObject = Record<string, unknown>;

// ---- decoding Consul request bodies ----

/** Parse a JSON body; empty body → undefined; bad JSON → 400 naming the problem. */
export function parseJsonBody(req: HttpRequest, what: string): unknown {
  if (req.body.length === 0) return undefined;
  const text = new TextDecoder().decode(req.body);
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new BadRequestError(`Request decode failed: ${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A field by name, case-insensitively (Go's encoding/json matching). */
export function field(obj: JsonObject, name: string): unknown {
  if (Object.hasOwn(obj, name)) return obj[name];
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) return obj[k];
  return undefined;
}

export function hasField(obj: JsonObject, name: string): boolean {
  const lower = name.toLowerCase();
  return Object.keys(obj).some((k) => k.toLowerCase() === lower);
}

function typeError(where: string, want: string, got: unknown): never {
  const kind = got === null ? "null" : Array.isArray(got) ? "array" : typeof got;
  throw new BadRequestError(`Request decode failed: ${where}: expected ${want}, got ${kind}`);
}

export function str(obj: JsonObject, name: string, where: string): string | undefined {
  const v = field(obj, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") typeError(`${where}.${name}`, "a string", v);
  return v;
}

function num(obj: JsonObject, name: string, where: string): number | undefined {
  const v = field(obj, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) typeError(`${where}.${name}`, "a number", v);
  return v;
}

function bool(obj: JsonObject, name: string, where: string): boolean | undefined {
  const v = field(obj, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") typeError(`${where}.${name}`, "a boolean", v);
  return v;
}

export function strList(obj: JsonObject, name: string, where: string): string[] | undefined {
  const v = field(obj, name);
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) typeError(`${where}.${name}`, "a list of strings", v);
  return v as string[];
}

function strMap(obj: JsonObject, name: string, where: string): Record<string, string> | undefined {
  const v = field(obj, name);
  if (v === undefined || v === null) return undefined;
  if (!isJsonObject(v) || !Object.values(v).every((x) => typeof x === "string")) typeError(`${where}.${name}`, "a map of strings", v);
  return { ...(v as Record<string, string>) };
}

function obj(o: JsonObject, name: string, where: string): JsonObject | undefined {
  const v = field(o, name);
  if (v === undefined || v === null) return undefined;
  if (!isJsonObject(v)) typeError(`${where}.${name}`, "an object", v);
  return v;
}

/** A duration as Consul reads it: Go text ("10s", "1.5m") or a number of nanoseconds. Returns ms. */
export function durationField(o: JsonObject, name: string, where: string): number | undefined {
  const v = field(o, name);
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v === "number" && Number.isFinite(v) && v >= 0) return v / 1e6;
  if (typeof v === "string") {
    const ms = parseGoDuration(v);
    if (ms !== undefined && ms >= 0) return ms;
    throw new BadRequestError(`Request decode failed: ${where}.${name}: invalid duration ${JSON.stringify(v)}`);
  }
  typeError(`${where}.${name}`, "a duration", v);
}

export function decodeService(o: JsonObject): NodeServiceInput {
  const w = "Service";
  const service = str(o, "Service", w) ?? "";
  const out: NodeServiceInput = { service };
  const id = str(o, "ID", w);
  if (id) out.id = id;
  const kind = str(o, "Kind", w);
  if (kind) out.kind = kind;
  const tags = strList(o, "Tags", w);
  if (tags) out.tags = tags;
  const address = str(o, "Address", w);
  if (address !== undefined) out.address = address;
  const meta = strMap(o, "Meta", w);
  if (meta) out.meta = meta;
  const port = num(o, "Port", w);
  if (port !== undefined) out.port = port;
  const eto = bool(o, "EnableTagOverride", w);
  if (eto !== undefined) out.enableTagOverride = eto;
  const weights = obj(o, "Weights", w);
  if (weights) out.weights = { passing: num(weights, "Passing", "Service.Weights") ?? 1, warning: num(weights, "Warning", "Service.Weights") ?? 1 };
  const tagged = obj(o, "TaggedAddresses", w);
  if (tagged) {
    out.taggedAddresses = {};
    for (const [k, v] of Object.entries(tagged)) {
      if (!isJsonObject(v)) typeError(`Service.TaggedAddresses.${k}`, "an object", v);
      out.taggedAddresses[k] = { address: str(v, "Address", `Service.TaggedAddresses.${k}`) ?? "", port: num(v, "Port", `Service.TaggedAddresses.${k}`) ?? 0 };
    }
  }
  return out;
}

function decodeDefinition(o: JsonObject | undefined, check: JsonObject): HealthCheckDefinition {
  const d: HealthCheckDefinition = {};
  const src = o ?? {};
  const w = "Check.Definition";
  const http = str(src, "HTTP", w) ?? str(check, "HTTP", "Check");
  if (http) d.http = http;
  const tcp = str(src, "TCP", w) ?? str(check, "TCP", "Check");
  if (tcp) d.tcp = tcp;
  const grpc = str(src, "GRPC", w) ?? str(check, "GRPC", "Check");
  if (grpc) d.grpc = grpc;
  const method = str(src, "Method", w);
  if (method) d.method = method;
  const body = str(src, "Body", w);
  if (body) d.body = body;
  const tlsServerName = str(src, "TLSServerName", w);
  if (tlsServerName) d.tlsServerName = tlsServerName;
  if (bool(src, "TLSSkipVerify", w)) d.tlsSkipVerify = true;
  if (bool(src, "GRPCUseTLS", w)) d.grpcUseTls = true;
  const header = field(src, "Header");
  if (isJsonObject(header)) {
    d.header = {};
    for (const [k, v] of Object.entries(header)) {
      if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) typeError(`${w}.Header.${k}`, "a list of strings", v);
      d.header[k] = v as string[];
    }
  }
  const interval = durationField(src, "Interval", w) ?? durationField(check, "Interval", "Check");
  if (interval) d.intervalMs = interval;
  const timeout = durationField(src, "Timeout", w) ?? durationField(check, "Timeout", "Check");
  if (timeout) d.timeoutMs = timeout;
  const dereg = durationField(src, "DeregisterCriticalServiceAfter", w);
  if (dereg) d.deregisterCriticalServiceAfterMs = dereg;
  return d;
}

export function decodeCheck(o: unknown, where = "Check"): HealthCheckInput {
  if (!isJsonObject(o)) typeError(where, "an object", o);
  const name = str(o, "Name", where) ?? "";
  const out: HealthCheckInput = { name };
  const checkId = str(o, "CheckID", where) ?? str(o, "ID", where);
  if (checkId) out.checkId = checkId;
  const node = str(o, "Node", where);
  if (node) out.node = node;
  const status = str(o, "Status", where);
  if (status) out.status = status as HealthCheckInput["status"];
  const notes = str(o, "Notes", where);
  if (notes !== undefined) out.notes = notes;
  const output = str(o, "Output", where);
  if (output !== undefined) out.output = output;
  const serviceId = str(o, "ServiceID", where);
  if (serviceId) out.serviceId = serviceId;
  const type = str(o, "Type", where);
  if (type) out.type = type;
  const def = decodeDefinition(obj(o, "Definition", where), o);
  out.definition = def;
  const interval = field(o, "Interval");
  out.interval = typeof interval === "string" ? interval : def.intervalMs ? formatGoDurationMs(def.intervalMs) : "";
  const timeout = field(o, "Timeout");
  out.timeout = typeof timeout === "string" ? timeout : def.timeoutMs ? formatGoDurationMs(def.timeoutMs) : "";
  return out;
}

/** A /v1/catalog/register body → Catalog.Register args. */
export function decodeRegister(body: unknown): CatalogRegisterArgs {
  if (!isJsonObject(body)) throw new BadRequestError("Request decode failed: the body must be a JSON object");
  const w = "RegisterRequest";
  const out: CatalogRegisterArgs = { node: str(body, "Node", w) ?? "", address: str(body, "Address", w) ?? "" };
  const id = str(body, "ID", w);
  if (id) out.id = id;
  const tagged = strMap(body, "TaggedAddresses", w);
  if (tagged) out.taggedAddresses = tagged;
  const meta = strMap(body, "NodeMeta", w);
  if (meta) out.nodeMeta = meta;
  const skip = bool(body, "SkipNodeUpdate", w);
  if (skip) out.skipNodeUpdate = true;
  const svc = obj(body, "Service", w);
  if (svc) out.service = decodeService(svc);
  const check = field(body, "Check");
  if (check !== undefined && check !== null) out.check = decodeCheck(check);
  const checks = field(body, "Checks");
  if (checks !== undefined && checks !== null) {
    if (!Array.isArray(checks)) typeError(`${w}.Checks`, "a list", checks);
    out.checks = checks.map((c, i) => decodeCheck(c, `Checks[${i}]`));
  }
  const dc = str(body, "Datacenter", w);
  if (dc) out.datacenter = dc;
  return out;
}

// ---- query helpers shared with health.ts / session.ts ----

/** `?node-meta=key:value` (repeatable) → map; undefined when absent. */
export function parseNodeMeta(req: HttpRequest): Record<string, string> | undefined {
  const all = req.query.getAll("node-meta");
  if (all.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const kv of all) {
    const at = kv.indexOf(":");
    if (at < 0) out[kv] = "";
    else out[kv.slice(0, at)] = kv.slice(at + 1);
  }
  return out;
}

/** Common list-read args: blocking options, `?filter`, `?node-meta`. */
export function listArgs(req: HttpRequest): { query: ReturnType<typeof parseQueryOptions>; filter?: string; nodeMetaFilters?: Record<string, string> } {
  const query = parseQueryOptions(req);
  const out: { query: ReturnType<typeof parseQueryOptions>; filter?: string; nodeMetaFilters?: Record<string, string> } = { query };
  if (query.filter !== undefined) out.filter = query.filter;
  const meta = parseNodeMeta(req);
  if (meta) out.nodeMetaFilters = meta;
  return out;
}

export function readResponse(req: HttpRequest, meta: QueryMeta, body: unknown, status = 200): HttpResponse {
  const headers = setMetaHeaders({}, meta);
  return jsonResponse(body, { headers, pretty: wantsPretty(req), status });
}

/** The path segment after a prefix route ("" when missing). */
export function pathTail(req: HttpRequest, prefix: string): string {
  return req.path.startsWith(prefix) ? req.path.slice(prefix.length) : "";
}

export function callOptions(req: HttpRequest): { signal?: AbortSignal } | undefined {
  return req.signal ? { signal: req.signal } : undefined;
}

// ---- handlers ----

type H = (req: HttpRequest) => Promise<HttpResponse>;

export function catalogRegisterHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const args = decodeRegister(parseJsonBody(req, "register"));
    // Consul answers 400 for these before any RPC.
    if (args.node === "") throw new BadRequestError("Must provide node");
    if (args.address === "" && !args.skipNodeUpdate) throw new BadRequestError("Must provide address");
    if (args.service && args.service.service === "") throw new BadRequestError("Must provide service name with ID");
    await options.rpc.call("Catalog.Register", { ...args, ...parseWriteOptions(req) }, callOptions(req));
    return jsonResponse(true);
  };
}

export function catalogDeregisterHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const body = parseJsonBody(req, "deregister");
    if (!isJsonObject(body)) throw new BadRequestError("Request decode failed: the body must be a JSON object");
    const w = "DeregisterRequest";
    const args: CatalogDeregisterArgs = { node: str(body, "Node", w) ?? "" };
    if (args.node === "") throw new BadRequestError("Must provide node");
    const serviceId = str(body, "ServiceID", w);
    if (serviceId) args.serviceId = serviceId;
    const checkId = str(body, "CheckID", w);
    if (checkId) args.checkId = checkId;
    await options.rpc.call("Catalog.Deregister", { ...args, ...parseWriteOptions(req) }, callOptions(req));
    return jsonResponse(true);
  };
}

export function catalogDatacentersHandler(options: { rpc: Rpc }): H {
  return async (req) => jsonResponse(await options.rpc.call("Catalog.ListDatacenters", {}, callOptions(req)), { pretty: wantsPretty(req) });
}

export function catalogNodesHandler(options: { rpc: Rpc; near?: NearOptions; translate?: WanTranslation }): H {
  return async (req) => {
    const args = listArgs(req);
    const reply = await options.rpc.call("Catalog.ListNodes", args, callOptions(req));
    const nodes = options.near ? sortNear(reply.nodes, (n) => n.node, args.query.near ?? "", options.near) : reply.nodes;
    return withTranslateHeader(options.translate, readResponse(req, reply.meta, translateNodes(req, options.translate, nodes).map(nodeToJson)));
  };
}

export function catalogServicesHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const reply = await options.rpc.call("Catalog.ListServices", listArgs(req), callOptions(req));
    return readResponse(req, reply.meta, reply.services);
  };
}

export const catalogServicePrefix = "/v1/catalog/service/";

export function catalogServiceHandler(options: { rpc: Rpc; near?: NearOptions; translate?: WanTranslation }): H {
  return async (req) => {
    const serviceName = pathTail(req, catalogServicePrefix);
    if (serviceName === "") throw new BadRequestError("Missing service name");
    const tags = req.query.getAll("tag");
    const args = listArgs(req);
    const reply = await options.rpc.call(
      "Catalog.ServiceNodes",
      { ...args, serviceName, ...(tags.length > 0 ? { serviceTags: tags } : {}) },
      callOptions(req),
    );
    const rows = options.near ? sortNear(reply.serviceNodes, (s) => s.node.node, args.query.near ?? "", options.near) : reply.serviceNodes;
    // A shared (frozen) answer left as it came is encoded once for every reader (encoded_cache.ts).
    return withTranslateHeader(options.translate, sharedListResponse(req, reply.meta, translateServiceNodes(req, options.translate, rows), serviceNodeToJson));
  };
}

export const catalogNodePrefix = "/v1/catalog/node/";
export const catalogNodeServicesPrefix = "/v1/catalog/node-services/";

export function catalogNodeHandler(options: { rpc: Rpc; asList: boolean; translate?: WanTranslation }): H {
  const prefix = options.asList ? catalogNodeServicesPrefix : catalogNodePrefix;
  return async (req) => {
    const node = pathTail(req, prefix);
    if (node === "") throw new BadRequestError("Missing node name");
    const reply = await options.rpc.call("Catalog.NodeServices", { ...listArgs(req), node }, callOptions(req));
    if (options.asList && !reply.nodeServices) {
      const headers = setMetaHeaders({}, reply.meta);
      return { status: 404, headers: { ...headers, "Content-Type": "text/plain; charset=utf-8" }, body: `Node "${node}" not found` };
    }
    return withTranslateHeader(options.translate, readResponse(req, reply.meta, nodeServicesToJson(translateNodeServices(req, options.translate, reply.nodeServices), options.asList)));
  };
}
