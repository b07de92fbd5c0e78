// /v1/session/* (consul agent/session_endpoint.go): create, destroy/<id>,
// renew/<id>, info/<id>, node/<node>, list. Create fills Consul's defaults:
// Node = this agent's node, LockDelay 15s, Behavior "release", NodeChecks
// ["serfHealth"] (unless the body names Checks, NodeChecks or ServiceChecks).
import { BadRequestError } from "../errors.ts";
import type { Rpc, SessionInput } from "../rpc/mod.ts";
import { sessionToJson } from "../state/catalog_json.ts";
import { parseGoDuration, parseWriteOptions } from "./blocking.ts";
import { callOptions, field, hasField, isJsonObject, listArgs, parseJsonBody, pathTail, readResponse, str, strList } from "./catalog.ts";
import { HttpError } from "./http_error.ts";
import { jsonResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

type H = (req: HttpRequest) => Promise<HttpResponse>;

/** Consul's default session lock delay. */
export const defaultSessionLockDelayMs = 15_000;
/** Consul's health check ID for gossip liveness, the default session check. */
export const serfCheckId = "serfHealth";

/**
 * LockDelay as Consul reads it (structs FixupLockDelay): Go text ("15s") or a
 * number: below 1000 it means seconds, otherwise nanoseconds. Returns ms.
 */
export function parseLockDelay(v: unknown): number {
  if (typeof v === "number" && Number.isFinite(v) && v >= 0) return v < 1000 ? v * 1000 : v / 1e6;
  if (typeof v === "string") {
    const ms = parseGoDuration(v);
    if (ms !== undefined && ms >= 0) return ms;
  }
  throw new BadRequestError(`Request decode failed: LockDelay: invalid duration ${JSON.stringify(v)}`);
}

/** A /v1/session/create body → SessionInput with Consul's defaults. */
export function decodeSessionCreate(body: unknown, agentNode: string): SessionInput {
  const out: SessionInput = {
    node: agentNode,
    lockDelayMs: defaultSessionLockDelayMs,
    behavior: "release",
    nodeChecks: [serfCheckId],
    serviceChecks: [],
    ttl: "",
    name: "",
  };
  if (body === undefined || body === null) return out;
  if (!isJsonObject(body)) throw new BadRequestError("Request decode failed: the body must be a JSON object");
  const w = "Session";
  const name = str(body, "Name", w);
  if (name !== undefined) out.name = name;
  const node = str(body, "Node", w);
  if (node) out.node = node;
  const delay = field(body, "LockDelay");
  if (delay !== undefined && delay !== null && delay !== "") out.lockDelayMs = parseLockDelay(delay);
  const behavior = str(body, "Behavior", w);
  if (behavior) out.behavior = behavior as SessionInput["behavior"];
  const ttl = field(body, "TTL");
  if (ttl !== undefined && ttl !== null) {
    if (typeof ttl !== "string") throw new BadRequestError(`Request decode failed: Session.TTL: expected a duration string such as "30s"`);
    out.ttl = ttl;
  }
  if (hasField(body, "Checks") || hasField(body, "NodeChecks")) {
    out.nodeChecks = [...new Set([...(strList(body, "Checks", w) ?? []), ...(strList(body, "NodeChecks", w) ?? [])])];
  }
  const sc = field(body, "ServiceChecks");
  if (sc !== undefined && sc !== null) {
    if (!Array.isArray(sc)) throw new BadRequestError("Request decode failed: Session.ServiceChecks: expected a list");
    out.serviceChecks = sc.map((c, i) => {
      if (!isJsonObject(c)) throw new BadRequestError(`Request decode failed: Session.ServiceChecks[${i}]: expected an object`);
      const id = str(c, "ID", `ServiceChecks[${i}]`) ?? "";
      if (id === "") throw new BadRequestError(`Request decode failed: Session.ServiceChecks[${i}]: missing ID`);
      const ns = str(c, "Namespace", `ServiceChecks[${i}]`);
      return ns ? { id, namespace: ns } : { id };
    });
  }
  return out;
}

export function sessionCreateHandler(options: { rpc: Rpc; nodeName: () => string }): H {
  return async (req) => {
    const session = decodeSessionCreate(parseJsonBody(req, "session"), options.nodeName());
    const reply = await options.rpc.call("Session.Apply", { op: "create", session, ...parseWriteOptions(req) }, callOptions(req));
    return jsonResponse({ ID: reply.id }, { pretty: wantsPretty(req) });
  };
}

export const sessionDestroyPrefix = "/v1/session/destroy/";
export const sessionRenewPrefix = "/v1/session/renew/";
export const sessionInfoPrefix = "/v1/session/info/";
export const sessionNodePrefix = "/v1/session/node/";

function idFrom(req: HttpRequest, prefix: string): string {
  const id = pathTail(req, prefix);
  if (id === "") throw new BadRequestError("Missing session");
  return id;
}

export function sessionDestroyHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const id = idFrom(req, sessionDestroyPrefix);
    await options.rpc.call("Session.Apply", { op: "destroy", session: { id }, ...parseWriteOptions(req) }, callOptions(req));
    return jsonResponse(true);
  };
}

export function sessionRenewHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const id = idFrom(req, sessionRenewPrefix);
    const reply = await options.rpc.call("Session.Renew", { sessionId: id, ...parseWriteOptions(req) }, callOptions(req));
    if (reply.sessions.length === 0) throw new HttpError(404, `Session id '${id}' not found`);
    return jsonResponse(reply.sessions.map(sessionToJson), { pretty: wantsPretty(req) });
  };
}

export function sessionInfoHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const id = idFrom(req, sessionInfoPrefix);
    const reply = await options.rpc.call("Session.Get", { ...listArgs(req), sessionId: id }, callOptions(req));
    return readResponse(req, reply.meta, reply.sessions.map(sessionToJson));
  };
}

export function sessionNodeHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const node = pathTail(req, sessionNodePrefix);
    if (node === "") throw new BadRequestError("Missing node name");
    const reply = await options.rpc.call("Session.NodeSessions", { ...listArgs(req), node }, callOptions(req));
    return readResponse(req, reply.meta, reply.sessions.map(sessionToJson));
  };
}

export function sessionListHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const reply = await options.rpc.call("Session.List", listArgs(req), callOptions(req));
    return readResponse(req, reply.meta, reply.sessions.map(sessionToJson));
  };
}
