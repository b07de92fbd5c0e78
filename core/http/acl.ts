// /v1/acl/* (consul agent/acl_endpoint.go): bootstrap, tokens (self, read,
// create, update, delete, clone, list), policies and roles (by ID and by
// name), in Consul's JSON. The servers decide who may do what (ACL.Write
// needs acl:write, ACL.Read acl:read); with ACLs off every route answers
// 401 "ACL support disabled". Also `PUT /v1/agent/token/:type`.
import { isoTimestamp } from "../clock/utc_text.ts";
import { parseDuration } from "../config/duration.ts";
import { AclDisabledError, AclNotFoundError, BadRequestError } from "../errors.ts";
import type { AclKind, Rpc } from "../rpc/methods.ts";
import { parseQueryOptions, parseWriteOptions } from "./blocking.ts";
import { field, isJsonObject, readResponse } from "./catalog.ts";
import { HttpError } from "./http_error.ts";
import { jsonResponse, wantsPretty, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

function links(v: unknown): { ID: string; Name: string }[] {
  return Array.isArray(v) ? v.map((l: { id: string; name: string }) => ({ ID: l.id, Name: l.name })) : [];
}

/** Service identities as Consul writes them (tokens and roles alike): Datacenters only when some are named. */
function serviceIdentitiesJson(si: readonly { serviceName: string; datacenters?: string[] }[]): Record<string, unknown>[] {
  return si.map((s) => (s.datacenters?.length ? { ServiceName: s.serviceName, Datacenters: s.datacenters } : { ServiceName: s.serviceName }));
}

/** Service identities of a token or role body (the servers check them). */
function serviceIdentitiesIn(si: readonly unknown[]): unknown[] {
  return si.map((s) => (isJsonObject(s) ? { serviceName: field(s, "ServiceName"), datacenters: field(s, "Datacenters") ?? undefined } : s));
}

/** A token as Consul's api.ACLToken. */
export function tokenJson(t: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    AccessorID: t.accessorId,
    SecretID: t.secretId,
    Description: t.description,
  };
  const policies = links(t.policies);
  if (policies.length) out.Policies = policies;
  const roles = links(t.roles);
  if (roles.length) out.Roles = roles;
  const si = Array.isArray(t.serviceIdentities) ? t.serviceIdentities : [];
  if (si.length) out.ServiceIdentities = serviceIdentitiesJson(si);
  const ni = Array.isArray(t.nodeIdentities) ? t.nodeIdentities : [];
  if (ni.length) out.NodeIdentities = ni.map((n: { nodeName: string; datacenter: string }) => ({ NodeName: n.nodeName, Datacenter: n.datacenter }));
  out.Local = t.local === true;
  if (typeof t.expirationTimeMs === "number" && t.expirationTimeMs > 0) out.ExpirationTime = isoTimestamp(t.expirationTimeMs);
  out.CreateTime = isoTimestamp(typeof t.createTimeMs === "number" ? t.createTimeMs : 0);
  out.CreateIndex = t.createIndex;
  out.ModifyIndex = t.modifyIndex;
  return out;
}

/** A policy as Consul's api.ACLPolicy (the list form leaves out Rules). */
export function policyJson(p: Record<string, unknown>, withRules = true): Record<string, unknown> {
  const out: Record<string, unknown> = { ID: p.id, Name: p.name, Description: p.description };
  if (withRules) out.Rules = p.rules;
  if (Array.isArray(p.datacenters) && p.datacenters.length) out.Datacenters = p.datacenters;
  out.CreateIndex = p.createIndex;
  out.ModifyIndex = p.modifyIndex;
  return out;
}

export function roleJson(r: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ID: r.id, Name: r.name, Description: r.description };
  const policies = links(r.policies);
  if (policies.length) out.Policies = policies;
  const si = Array.isArray(r.serviceIdentities) ? r.serviceIdentities : [];
  if (si.length) out.ServiceIdentities = serviceIdentitiesJson(si);
  const ni = Array.isArray(r.nodeIdentities) ? r.nodeIdentities : [];
  if (ni.length) out.NodeIdentities = ni.map((n: { nodeName: string; datacenter: string }) => ({ NodeName: n.nodeName, Datacenter: n.datacenter }));
  out.CreateIndex = r.createIndex;
  out.ModifyIndex = r.modifyIndex;
  return out;
}

function parseBody(req: HttpRequest): Record<string, unknown> {
  const text = new TextDecoder().decode(req.body);
  if (text.trim() === "") return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new BadRequestError(`Request decode failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isJsonObject(v)) throw new BadRequestError("Request decode failed: expected a JSON object");
  return v;
}

function linksIn(v: unknown): { id?: string; name?: string }[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new BadRequestError("Request decode failed: expected a list of links");
  return v.map((l) => {
    if (!isJsonObject(l)) throw new BadRequestError("Request decode failed: expected a link object");
    const id = field(l, "ID");
    const name = field(l, "Name");
    return { ...(typeof id === "string" && id ? { id } : {}), ...(typeof name === "string" && name ? { name } : {}) };
  });
}

/** The body's fields that are set, each under the servers' name (`[item name, JSON name]`). */
function fieldsOf(b: Record<string, unknown>, names: readonly (readonly [string, string])[]): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  for (const [k, f] of names) {
    const v = field(b, f);
    if (v !== undefined && v !== null) item[k] = v;
  }
  return item;
}

/** A token body (api.ACLToken) into the servers' camelCase item. */
function tokenItem(b: Record<string, unknown>): Record<string, unknown> {
  const item = fieldsOf(b, [["accessorId", "AccessorID"], ["secretId", "SecretID"], ["description", "Description"], ["local", "Local"]]);
  const policies = linksIn(field(b, "Policies"));
  if (policies) item.policies = policies;
  const roles = linksIn(field(b, "Roles"));
  if (roles) item.roles = roles;
  const si = field(b, "ServiceIdentities");
  if (Array.isArray(si)) item.serviceIdentities = serviceIdentitiesIn(si);
  const ni = field(b, "NodeIdentities");
  if (Array.isArray(ni)) item.nodeIdentities = ni.map((n) => (isJsonObject(n) ? { nodeName: field(n, "NodeName"), datacenter: field(n, "Datacenter") } : n));
  const ttl = field(b, "ExpirationTTL");
  if (ttl !== undefined && ttl !== null && ttl !== "" && ttl !== 0) {
    const ms = typeof ttl === "number" ? ttl / 1e6 : typeof ttl === "string" ? parseDuration(ttl) : undefined;
    if (ms === undefined || ms < 0) throw new BadRequestError(`Invalid ExpirationTTL ${JSON.stringify(ttl)}`);
    item.expirationTtlMs = ms;
  }
  const exp = field(b, "ExpirationTime");
  if (typeof exp === "string" && exp !== "") {
    const ms = Date.parse(exp);
    if (Number.isNaN(ms)) throw new BadRequestError(`Invalid ExpirationTime ${JSON.stringify(exp)}`);
    item.expirationTimeMs = ms;
  }
  return item;
}

function policyItem(b: Record<string, unknown>): Record<string, unknown> {
  return fieldsOf(b, [["id", "ID"], ["name", "Name"], ["description", "Description"], ["rules", "Rules"], ["datacenters", "Datacenters"]]);
}

function roleItem(b: Record<string, unknown>): Record<string, unknown> {
  const item = fieldsOf(b, [["id", "ID"], ["name", "Name"], ["description", "Description"]]);
  const p = linksIn(field(b, "Policies"));
  if (p) item.policies = p;
  const si = field(b, "ServiceIdentities");
  if (Array.isArray(si)) item.serviceIdentities = serviceIdentitiesIn(si);
  const ni = field(b, "NodeIdentities");
  if (Array.isArray(ni)) item.nodeIdentities = ni.map((n) => (isJsonObject(n) ? { nodeName: field(n, "NodeName"), datacenter: field(n, "Datacenter") } : n));
  return item;
}

const render: Record<AclKind, (x: Record<string, unknown>) => Record<string, unknown>> = { token: tokenJson, policy: policyJson, role: roleJson };

export interface AclHttpDeps {
  rpc: Rpc;
  /** ACLs are on at this agent (off: every route answers 401). */
  enabled: boolean;
}

function guard(deps: AclHttpDeps, h: Handler): Handler {
  return async (req) => {
    if (!deps.enabled) throw new AclDisabledError();
    return await h(req);
  };
}

export function aclBootstrapHandler(deps: AclHttpDeps): Handler {
  return guard(deps, async (req) => {
    const t = await deps.rpc.call("ACL.Bootstrap", { ...parseWriteOptions(req) });
    return jsonResponse(tokenJson(t), { pretty: wantsPretty(req) });
  });
}

async function readOne(deps: AclHttpDeps, req: HttpRequest, kind: AclKind, op: "get" | "name" | "self", key: string): Promise<HttpResponse> {
  const query = parseQueryOptions(req);
  const r = await deps.rpc.call("ACL.Read", { kind, op, ...(op === "name" ? { name: key } : { id: key }), query });
  const item = r.items[0];
  if (!item) throw new AclNotFoundError();
  return readResponse(req, r.meta, render[kind](item));
}

/** `/v1/acl/token` (PUT create), `/v1/acl/policy`, `/v1/acl/role`. */
export function aclCreateHandler(deps: AclHttpDeps, kind: AclKind): Handler {
  return guard(deps, async (req) => {
    const b = parseBody(req);
    const item = kind === "token" ? tokenItem(b) : kind === "policy" ? policyItem(b) : roleItem(b);
    const r = await deps.rpc.call("ACL.Write", { kind, op: "create", item, ...parseWriteOptions(req) });
    return jsonResponse(render[kind](r.item!), { pretty: wantsPretty(req) });
  });
}

/** `/v1/acl/token/<id>` (GET, PUT, DELETE), `/self`, `/<id>/clone`; likewise policy and role, with `/name/<name>`. */
export function aclItemHandler(deps: AclHttpDeps, kind: AclKind): Handler {
  const prefix = `/v1/acl/${kind}/`;
  return guard(deps, async (req) => {
    const rest = req.path.slice(prefix.length);
    if (kind === "token" && rest === "self" && req.method === "GET") return await readOne(deps, req, kind, "self", "");
    if (kind !== "token" && rest.startsWith("name/") && req.method === "GET") return await readOne(deps, req, kind, "name", rest.slice(5));
    if (kind === "token" && rest.endsWith("/clone") && req.method === "PUT") {
      const id = rest.slice(0, -"/clone".length);
      const b = parseBody(req);
      const description = field(b, "Description");
      const r = await deps.rpc.call("ACL.Write", { kind, op: "clone", id, item: typeof description === "string" ? { description } : {}, ...parseWriteOptions(req) });
      return jsonResponse(tokenJson(r.item!), { pretty: wantsPretty(req) });
    }
    if (rest === "" || rest.includes("/")) throw new BadRequestError(`Missing ${kind} ID`);
    if (req.method === "GET") return await readOne(deps, req, kind, "get", rest);
    if (req.method === "DELETE") {
      await deps.rpc.call("ACL.Write", { kind, op: "delete", id: rest, ...parseWriteOptions(req) });
      return jsonResponse(true);
    }
    const b = parseBody(req);
    const item = kind === "token" ? tokenItem(b) : kind === "policy" ? policyItem(b) : roleItem(b);
    const idField = kind === "token" ? "accessorId" : "id";
    if (item[idField] !== undefined && item[idField] !== "" && item[idField] !== rest) {
      throw new BadRequestError(`${kind === "token" ? "Token AccessorID" : kind === "policy" ? "Policy ID" : "Role ID"} in URL and payload do not match`);
    }
    item[idField] = rest;
    const r = await deps.rpc.call("ACL.Write", { kind, op: "update", item, ...parseWriteOptions(req) });
    return jsonResponse(render[kind](r.item!), { pretty: wantsPretty(req) });
  });
}

/** `/v1/acl/tokens` (?policy, ?role), `/v1/acl/policies`, `/v1/acl/roles` (?policy). */
export function aclListHandler(deps: AclHttpDeps, kind: AclKind): Handler {
  return guard(deps, async (req) => {
    const query = parseQueryOptions(req);
    const policy = req.query.get("policy") ?? undefined;
    const role = req.query.get("role") ?? undefined;
    const r = await deps.rpc.call("ACL.Read", { kind, op: "list", ...(policy ? { policy } : {}), ...(role ? { role } : {}), query });
    const items = r.items.map((x) => (kind === "policy" ? policyJson(x, false) : kind === "token" ? { ...tokenJson(x), Legacy: false } : roleJson(x)));
    return readResponse(req, r.meta, items);
  });
}

/** What `PUT /v1/agent/token/:type` changes (the agent keeps it, and persists it with enable_token_persistence). */
export interface AgentTokens {
  set(type: string, token: string): Promise<void>;
}

const agentTokenTypes = new Set(["default", "agent", "agent_recovery", "replication", "config_file_service_registration", "dns", "acl_token", "acl_agent_token", "acl_agent_master_token", "agent_master", "acl_replication_token"]);

export function agentTokenHandler(deps: { enabled: boolean; tokens: AgentTokens | undefined }): Handler {
  return async (req) => {
    if (!deps.enabled || !deps.tokens) throw new AclDisabledError();
    const type = req.path.slice("/v1/agent/token/".length);
    if (!agentTokenTypes.has(type)) throw new HttpError(404, `Token "${type}" is unknown`);
    const b = parseBody(req);
    const token = field(b, "Token");
    if (typeof token !== "string") throw new BadRequestError("Request decode failed: Token must be a string");
    await deps.tokens.set(type, token);
    return { status: 200, headers: {}, body: "" };
  };
}

/**
 * `GET /v1/acl/replication` (consul ACL.ReplicationStatus): what the leader
 * of this datacenter (or `?dc=`) reports of its replication from the
 * primary; the primary itself reports it is not enabled.
 */
export function aclReplicationHandler(deps: AclHttpDeps): Handler {
  return guard(deps, async (req) => {
    const query = parseQueryOptions(req);
    const r = await deps.rpc.call("ACL.ReplicationStatus", { query });
    const zero = "0001-01-01T00:00:00Z";
    // Consul rounds these to the second, and Go writes a whole second without a fraction.
    const time = (ms: number) => (ms > 0 ? isoTimestamp(Math.round(ms / 1000) * 1000).replace(".000Z", "Z") : zero);
    return jsonResponse({
      Enabled: r.enabled,
      Running: r.running,
      SourceDatacenter: r.sourceDatacenter,
      ReplicationType: r.replicationType,
      ReplicatedIndex: r.replicatedIndex,
      ReplicatedRoleIndex: r.replicatedRoleIndex,
      ReplicatedTokenIndex: r.replicatedTokenIndex,
      LastSuccess: time(r.lastSuccessMs),
      LastError: time(r.lastErrorMs),
      LastErrorMessage: r.lastErrorMessage,
    }, { pretty: wantsPretty(req) });
  });
}
