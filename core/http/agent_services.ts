// The agent's local service and check endpoints (consul agent/agent_endpoint.go):
// /v1/agent/services, /v1/agent/service/..., /v1/agent/checks,
// /v1/agent/check/..., /v1/agent/maintenance, /v1/agent/health/service/...,
// /v1/agent/reload. They read and change the agent's local state, not the
// catalog; each write waits for the anti-entropy push (failures there are
// logged and retried, the write itself succeeded), as Consul's syncChanges.
import type { Clock } from "../clock/mod.ts";
import { formatDuration } from "../config/duration.ts";
import { BadRequestError, NotFoundError, PermissionDeniedError } from "../errors.ts";
import { compileFilter, type Filter } from "../filter/mod.ts";
import {
  aggregateStatus,
  decodeCheckDefinition,
  decodeServiceDefinition,
  isHealthStatus,
  type CheckType,
  type HealthStatus,
  type LocalCheck,
  type LocalService,
} from "../service_defs/mod.ts";
import type { LocalAgentBackend } from "./backends.ts";
import { permissionDeniedReason } from "../acl/authorizer.ts";
import type { RequestAcl } from "./router.ts";
import { parseQueryOptions, parseToken } from "./blocking.ts";
import { jsonResponse, textResponse, wantsPretty, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

export interface AgentServicesDeps {
  local: LocalAgentBackend;
  datacenter: string;
  /** Re-read the config files and apply them (`cairn reload`); absent: 500. */
  reload?: () => Promise<void>;
  /** For `?hash=` blocking on /v1/agent/service/<id>; without one those requests answer at once. */
  clock?: Clock;
  /** This agent's node name (node checks need node:write on it). */
  nodeName?: string;
}

const ok = (): HttpResponse => ({ status: 200, headers: {}, body: "" });

// ---- ACLs on this agent's own services and checks (consul agent/acl.go vetServiceRegister, vetCheckRegister, filterServices) ----

function deny(acl: RequestAcl, resource: "service" | "node", name: string): never {
  throw new PermissionDeniedError(permissionDeniedReason(acl.accessorId, resource, "write", name));
}

/** service:write on the service named `name` (the request's token, when ACLs are on). */
function vetService(req: HttpRequest, name: string): void {
  if (req.acl && !req.acl.allowed("service", "write", name)) deny(req.acl, "service", name);
}

/** A check of a service needs service:write on that service; a node check node:write on this agent's node. */
function vetCheck(req: HttpRequest, local: LocalAgentBackend, serviceId: string, nodeName: string): void {
  if (!req.acl) return;
  if (serviceId) {
    const s = local.state.service(serviceId);
    vetService(req, s?.service ?? serviceId);
  } else if (!req.acl.allowed("node", "write", nodeName)) deny(req.acl, "node", nodeName);
}

/** An existing check by ID, vetted as vetCheck does. */
function vetCheckId(req: HttpRequest, local: LocalAgentBackend, checkId: string, nodeName: string): void {
  if (!req.acl) return;
  const c = local.state.checks().find((x) => x.checkId === checkId);
  vetCheck(req, local, c?.serviceId ?? "", nodeName);
}

/** consul api.AgentService as /v1/agent/services shows it. */
export function agentServiceJson(s: LocalService, datacenter: string, options: { contentHash?: boolean } = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (s.kind) out.Kind = s.kind;
  out.ID = s.id;
  out.Service = s.service;
  out.Tags = s.tags;
  out.Meta = s.meta;
  out.Port = s.port;
  out.Address = s.address;
  if (Object.keys(s.taggedAddresses).length > 0) {
    out.TaggedAddresses = Object.fromEntries(Object.entries(s.taggedAddresses).map(([k, v]) => [k, { Address: v.address, Port: v.port }]));
  }
  out.Weights = { Passing: s.weights.passing, Warning: s.weights.warning };
  out.EnableTagOverride = s.enableTagOverride;
  if (options.contentHash) out.ContentHash = contentHash(s);
  out.Datacenter = datacenter;
  return out;
}

/** A stable 16-hex-digit hash of a service (FNV-1a 64), for `ContentHash`. */
export function contentHash(s: LocalService): string {
  const text = JSON.stringify([s.kind, s.id, s.service, s.tags, Object.entries(s.meta).sort(), s.port, s.address,
    Object.entries(s.taggedAddresses).sort(), s.weights.passing, s.weights.warning, s.enableTagOverride]);
  let h = 0xcbf29ce484222325n;
  const mask = 0xffffffffffffffffn;
  for (const b of new TextEncoder().encode(text)) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & mask;
  }
  return h.toString(16).padStart(16, "0");
}

function definitionJson(t: CheckType | undefined): Record<string, unknown> {
  if (!t) return {};
  const d: Record<string, unknown> = {};
  if (t.http) {
    d.HTTP = t.http;
    if (t.tlsServerName) d.TLSServerName = t.tlsServerName;
    if (t.tlsSkipVerify) d.TLSSkipVerify = true;
    if (Object.keys(t.header).length > 0) d.Header = t.header;
    if (t.method) d.Method = t.method;
    if (t.body) d.Body = t.body;
    if (t.disableRedirects) d.DisableRedirects = true;
  }
  if (t.tcp) d.TCP = t.tcp;
  if (t.udp) d.UDP = t.udp;
  if (t.h2ping) {
    d.H2PING = t.h2ping;
    d.H2PingUseTLS = t.h2pingUseTls ?? true;
  }
  if (t.grpc) {
    d.GRPC = t.grpc;
    d.GRPCUseTLS = t.grpcUseTls ?? false;
  }
  if (t.dockerContainerId) d.DockerContainerID = t.dockerContainerId;
  if (t.osService) d.OSService = t.osService;
  if (t.intervalMs > 0) d.Interval = formatDuration(t.intervalMs);
  if (t.outputMaxSize > 0) d.OutputMaxSize = t.outputMaxSize;
  if (t.timeoutMs > 0) d.Timeout = formatDuration(t.timeoutMs);
  if (t.deregisterCriticalServiceAfterMs > 0) d.DeregisterCriticalServiceAfter = formatDuration(t.deregisterCriticalServiceAfterMs);
  if (t.args.length > 0) d.ScriptArgs = t.args;
  if (t.aliasNode) d.AliasNode = t.aliasNode;
  if (t.aliasService) d.AliasService = t.aliasService;
  if (t.ttlMs > 0) d.TTL = formatDuration(t.ttlMs);
  return d;
}

/** consul structs.HealthCheck as /v1/agent/checks shows it. */
export function agentCheckJson(c: LocalCheck): Record<string, unknown> {
  const t = c.checkType;
  return {
    Node: c.node,
    CheckID: c.checkId,
    Name: c.name,
    Status: c.status,
    Notes: c.notes,
    Output: c.output,
    ServiceID: c.serviceId,
    ServiceName: c.serviceName,
    ServiceTags: c.serviceTags,
    Type: c.type,
    Interval: t && t.intervalMs > 0 ? formatDuration(t.intervalMs) : "",
    Timeout: t && t.timeoutMs > 0 ? formatDuration(t.timeoutMs) : "",
    ExposedPort: 0,
    Definition: definitionJson(t),
    CreateIndex: 0,
    ModifyIndex: 0,
  };
}

function decodeJsonBody(req: HttpRequest): unknown {
  const text = new TextDecoder().decode(req.body);
  if (text.trim() === "") throw new BadRequestError("Request decode failed: EOF");
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new BadRequestError(`Request decode failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Go's strconv.ParseBool. */
function parseGoBool(text: string): boolean | undefined {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(text)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(text)) return false;
  return undefined;
}

function parseEnable(req: HttpRequest): boolean {
  if (!req.query.has("enable")) throw new BadRequestError("Missing value for enable");
  const raw = req.query.get("enable") ?? "";
  const v = parseGoBool(raw);
  if (v === undefined) throw new BadRequestError(`Invalid value for enable: "${raw}"`);
  return v;
}

function wantsText(req: HttpRequest): boolean {
  const accept = req.headers["accept"];
  if (typeof accept === "string" && accept.startsWith("text/plain")) return true;
  const format = req.query.get("format");
  return format !== null && format !== "" ? format === "text" : false;
}

const statusCode: Record<string, number> = { passing: 200, warning: 429 };

/** Resolve when `changed()` holds (checked on every local state change), on timeout, or on abort. */
function waitForChange(local: LocalAgentBackend, clock: Clock, changed: () => boolean, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  if (changed() || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      unsubscribe();
      timer.cancel();
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const unsubscribe = local.state.onChange(() => {
      if (changed()) done();
    });
    const timer = clock.setTimer(timeoutMs, done);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** `?filter=` (go-bexpr syntax over the JSON fields); a bad expression is a 400. */
function filterOf(req: HttpRequest): Filter | undefined {
  const expression = req.query.get("filter");
  return expression !== null && expression.trim() !== "" ? compileFilter(expression) : undefined;
}

const after = (prefix: string, req: HttpRequest): string => req.path.slice(prefix.length);

/** GET /v1/agent/services */
export function agentServicesHandler(deps: AgentServicesDeps): Handler {
  const { local, datacenter } = deps;
  return async (req) => {
    const filter = filterOf(req);
    const out: Record<string, unknown> = {};
    let filtered = false;
    for (const s of local.state.services()) {
      if (req.acl && !req.acl.allowed("service", "read", s.service)) {
        filtered = true;
        continue;
      }
      const json = agentServiceJson(s, datacenter);
      if (!filter || filter.match(json)) out[s.id] = json;
    }
    return jsonResponse(out, { pretty: wantsPretty(req), headers: filtered ? { "X-Consul-Results-Filtered-By-ACLs": "true" } : {} });
  };
}

export const agentServicePrefix = "/v1/agent/service/";

/** GET /v1/agent/service/<id>, blocking on `?hash=` while the content is unchanged. */
export function agentServiceHandler(deps: AgentServicesDeps): Handler {
  const { local, datacenter } = deps;
  return async (req) => {
    const id = after(agentServicePrefix, req);
    const hash = req.query.get("hash");
    // Hash-based blocking (consul agent/service/<id>?hash=): wait while the content is unchanged.
    if (hash && deps.clock) {
      const { maxQueryTimeMs } = parseQueryOptions(req);
      await waitForChange(local, deps.clock, () => {
        const cur = local.state.service(id);
        return cur === undefined || contentHash(cur) !== hash;
      }, maxQueryTimeMs, req.signal);
    }
    const s = local.state.service(id);
    if (!s) throw new NotFoundError(`unknown service ID: ${id}`);
    const json = agentServiceJson(s, datacenter, { contentHash: true });
    return jsonResponse(json, { pretty: wantsPretty(req), headers: { "X-Consul-ContentHash": String(json.ContentHash) } });
  };
}

/** PUT /v1/agent/service/register[?replace-existing-checks] */
export function agentServiceRegisterHandler(deps: AgentServicesDeps): Handler {
  const { local } = deps;
  return async (req) => {
    const def = decodeServiceDefinition(decodeJsonBody(req));
    vetService(req, def.service.service);
    const flag = req.query.get("replace-existing-checks");
    const replace = req.query.has("replace-existing-checks") && (flag === "" || flag === "true");
    // The service syncs with the token it was registered with (consul AgentRegisterService).
    local.addService(def, { source: "remote", replaceExistingChecks: replace, token: parseToken(req) });
    await local.syncChanges();
    return ok();
  };
}

export const agentServiceDeregisterPrefix = "/v1/agent/service/deregister/";

/** PUT /v1/agent/service/deregister/<id> */
export function agentServiceDeregisterHandler(deps: AgentServicesDeps): Handler {
  const { local } = deps;
  return async (req) => {
    const id = after(agentServiceDeregisterPrefix, req);
    const existing = local.state.service(id);
    if (existing) vetService(req, existing.service);
    local.removeService(id);
    await local.syncChanges();
    return ok();
  };
}

export const agentServiceMaintenancePrefix = "/v1/agent/service/maintenance/";

/** PUT /v1/agent/service/maintenance/<id>?enable=&reason= */
export function agentServiceMaintenanceHandler(deps: AgentServicesDeps): Handler {
  const { local } = deps;
  return async (req) => {
    const id = after(agentServiceMaintenancePrefix, req);
    if (id === "") throw new BadRequestError("Missing service ID");
    const existing = local.state.service(id);
    if (existing) vetService(req, existing.service);
    const enable = parseEnable(req);
    if (enable) local.enableServiceMaintenance(id, req.query.get("reason") ?? "");
    else local.disableServiceMaintenance(id);
    await local.syncChanges();
    return ok();
  };
}

/** PUT /v1/agent/maintenance?enable=&reason= */
export function agentNodeMaintenanceHandler(deps: AgentServicesDeps): Handler {
  const { local } = deps;
  return async (req) => {
    const enable = parseEnable(req);
    if (enable) local.enableNodeMaintenance(req.query.get("reason") ?? "");
    else local.disableNodeMaintenance();
    await local.syncChanges();
    return ok();
  };
}

/** GET /v1/agent/checks */
export function agentChecksHandler(deps: AgentServicesDeps): Handler {
  const { local } = deps;
  return async (req) => {
    const filter = filterOf(req);
    const out: Record<string, unknown> = {};
    for (const c of local.state.checks()) {
      if (req.acl) {
        const svc = c.serviceId ? local.state.service(c.serviceId)?.service ?? c.serviceName : "";
        if (svc ? !req.acl.allowed("service", "read", svc) : !req.acl.allowed("node", "read", deps.nodeName ?? "")) continue;
      }
      const json = agentCheckJson(c);
      if (!filter || filter.match(json)) out[c.checkId] = json;
    }
    return jsonResponse(out, { pretty: wantsPretty(req) });
  };
}

/** PUT /v1/agent/check/register */
export function agentCheckRegisterHandler(deps: AgentServicesDeps): Handler {
  const { local } = deps;
  return async (req) => {
    const def = decodeCheckDefinition(decodeJsonBody(req));
    vetCheck(req, local, def.serviceId, deps.nodeName ?? "");
    local.addCheck(def, { source: "remote", token: parseToken(req) });
    await local.syncChanges();
    return ok();
  };
}

export const agentCheckDeregisterPrefix = "/v1/agent/check/deregister/";

/** PUT /v1/agent/check/deregister/<id> */
export function agentCheckDeregisterHandler(deps: AgentServicesDeps): Handler {
  const { local } = deps;
  return async (req) => {
    const id = after(agentCheckDeregisterPrefix, req);
    vetCheckId(req, local, id, deps.nodeName ?? "");
    local.removeCheck(id);
    await local.syncChanges();
    return ok();
  };
}

/** Where each TTL status is set: PUT /v1/agent/check/pass|warn|fail/<id>?note= */
export const agentCheckStatusPrefixes: Readonly<Record<HealthStatus, string>> = {
  passing: "/v1/agent/check/pass/",
  warning: "/v1/agent/check/warn/",
  critical: "/v1/agent/check/fail/",
};

async function updateTtl(local: LocalAgentBackend, id: string, status: HealthStatus, output: string): Promise<HttpResponse> {
  local.updateTtlCheck(id, status, output);
  await local.syncChanges();
  return ok();
}

/** PUT /v1/agent/check/pass/<id>, warn/<id>, fail/<id> */
export function agentCheckStatusHandler(deps: AgentServicesDeps, status: HealthStatus): Handler {
  const prefix = agentCheckStatusPrefixes[status];
  return async (req) => {
    const id = after(prefix, req);
    vetCheckId(req, deps.local, id, deps.nodeName ?? "");
    return await updateTtl(deps.local, id, status, req.query.get("note") ?? "");
  };
}

export const agentCheckUpdatePrefix = "/v1/agent/check/update/";

/** PUT /v1/agent/check/update/<id> with {"Status", "Output"} */
export function agentCheckUpdateHandler(deps: AgentServicesDeps): Handler {
  return async (req) => {
    const body = decodeJsonBody(req);
    const obj = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    let status: unknown;
    let output: unknown = "";
    for (const [k, v] of Object.entries(obj)) {
      if (k.toLowerCase() === "status") status = v;
      if (k.toLowerCase() === "output") output = v;
    }
    if (!isHealthStatus(status)) throw new BadRequestError(`Invalid check status: '${typeof status === "string" ? status : ""}'`);
    if (typeof output !== "string") throw new BadRequestError("Request decode failed: Output must be a string");
    const id = after(agentCheckUpdatePrefix, req);
    vetCheckId(req, deps.local, id, deps.nodeName ?? "");
    return await updateTtl(deps.local, id, status, output);
  };
}

function serviceHealth(deps: AgentServicesDeps, s: LocalService) {
  const checks = deps.local.state.checksForService(s.id, true);
  const status = aggregateStatus(checks);
  return { code: statusCode[status] ?? 503, status, json: { AggregatedStatus: status, Service: agentServiceJson(s, deps.datacenter), Checks: checks.map(agentCheckJson) } };
}

export const agentHealthServiceIdPrefix = "/v1/agent/health/service/id/";

/** GET /v1/agent/health/service/id/<id>: 200 passing, 429 warning, 503 critical, 404 unknown. */
export function agentHealthServiceByIdHandler(deps: AgentServicesDeps): Handler {
  const { local } = deps;
  return async (req) => {
    const id = after(agentHealthServiceIdPrefix, req);
    if (id === "") throw new BadRequestError("Missing serviceID");
    const s = local.state.service(id);
    if (!s) {
      const reason = `ServiceId ${id} not found`;
      if (wantsText(req)) return textResponse(404, reason);
      return jsonResponse({ AggregatedStatus: "critical", Service: null, Checks: null }, { status: 404, pretty: wantsPretty(req) });
    }
    const h = serviceHealth(deps, s);
    if (wantsText(req)) return textResponse(h.code, h.status);
    return jsonResponse(h.json, { status: h.code, pretty: wantsPretty(req) });
  };
}

export const agentHealthServiceNamePrefix = "/v1/agent/health/service/name/";

/** GET /v1/agent/health/service/name/<name>: every instance, the worst status wins. */
export function agentHealthServiceByNameHandler(deps: AgentServicesDeps): Handler {
  const { local } = deps;
  return async (req) => {
    const name = after(agentHealthServiceNamePrefix, req);
    if (name === "") throw new BadRequestError("Missing service Name");
    let code = 404;
    let status = `ServiceName ${name} Not Found`;
    const result: unknown[] = [];
    for (const s of local.state.servicesByName(name)) {
      const h = serviceHealth(deps, s);
      result.push(h.json);
      // The worst wins: passing 200 < warning 429 < critical/maintenance 503.
      if (code === 404 || code < h.code) {
        code = h.code;
        status = h.status;
      }
    }
    if (wantsText(req)) return textResponse(code, status);
    return jsonResponse(result, { status: code, pretty: wantsPretty(req) });
  };
}

/** PUT /v1/agent/reload */
export function agentReloadHandler(deps: AgentServicesDeps): Handler {
  return async () => {
    if (!deps.reload) throw new Error("Reload is not available on this agent");
    await deps.reload();
    return ok();
  };
}
