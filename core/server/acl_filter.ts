// What a token may not read is left out of catalog, health and session
// answers (consul agent/consul/acl.go filterACL: nodes by node:read,
// services by service:read, a service instance by both, checks by the
// read of their service or node), and the answer's meta says so
// (X-Consul-Results-Filtered-By-ACLs). Wraps the endpoints' handlers so
// each family stays as it was; the KV and prepared-query families check
// themselves.
import type { Authorizer } from "../acl/authorizer.ts";
import type { CheckServiceNode, CoordinateEntry, HandlerOptions, HealthCheck, Node, QueryMeta, RpcHandlers, ServiceNode } from "../rpc/methods.ts";
import type { ServerContext } from "./context.ts";
import { aclAuthorize, aclIdentity } from "./acl.ts";

type Filter = (authz: Authorizer, reply: Record<string, unknown>) => boolean;

const nodeOk = (a: Authorizer, n: Node) => a.allowed("node", "read", n.node);
const instanceOk = (a: Authorizer, sn: { node: Node; service: { service: string } }) => nodeOk(a, sn.node) && a.allowed("service", "read", sn.service.service);
const sessionOk = (a: Authorizer, s: { node: string }) => a.allowed("session", "read", s.node);
const checkOk = (a: Authorizer, c: HealthCheck) => (c.serviceName ? a.allowed("service", "read", c.serviceName) : a.allowed("node", "read", c.node));

/**
 * Filter `reply[field]` (a list) of the reply's copy; true when something was
 * left out. When nothing is, the list stays the very array the endpoint gave:
 * a shared frozen answer (read_cache.ts) keeps its one encoding
 * (core/http/encoded_cache.ts). The list itself is never changed in place.
 */
function list<T>(field: string, ok: (a: Authorizer, item: T) => boolean): Filter {
  return (a, reply) => {
    const items = reply[field] as readonly T[] | undefined;
    if (!Array.isArray(items)) return false;
    const first = items.findIndex((x) => !ok(a, x));
    if (first < 0) return false;
    reply[field] = [...items.slice(0, first), ...items.slice(first + 1).filter((x) => ok(a, x))];
    return true;
  };
}

const filters: Partial<Record<keyof RpcHandlers, Filter>> = {
  "Catalog.ListNodes": list<Node>("nodes", nodeOk),
  "Catalog.ListServices": (a, reply) => {
    const services = reply.services as Record<string, string[]> | undefined;
    if (!services) return false;
    const kept: Record<string, string[]> = {};
    let dropped = false;
    for (const [name, tags] of Object.entries(services)) {
      if (a.allowed("service", "read", name)) kept[name] = tags;
      else dropped = true;
    }
    if (!dropped) return false;
    reply.services = kept;
    // The instance counts (web UI) of the services left out go too.
    const instances = reply.instances as Record<string, number> | undefined;
    if (instances) reply.instances = Object.fromEntries(Object.entries(instances).filter(([name]) => name in kept));
    return true;
  },
  "Catalog.ServiceNodes": list<ServiceNode>("serviceNodes", instanceOk),
  "Catalog.NodeServices": (a, reply) => {
    const ns = reply.nodeServices as { node: Node; services: { service: string }[] } | null;
    if (!ns) return false;
    if (!nodeOk(a, ns.node)) {
      reply.nodeServices = null;
      return true;
    }
    const kept = ns.services.filter((s) => a.allowed("service", "read", s.service));
    if (kept.length === ns.services.length) return false;
    reply.nodeServices = { ...ns, services: kept };
    return true;
  },
  "Health.NodeChecks": list<HealthCheck>("checks", checkOk),
  "Health.ServiceChecks": list<HealthCheck>("checks", checkOk),
  "Health.ChecksInState": list<HealthCheck>("checks", checkOk),
  "Health.ServiceNodes": list<CheckServiceNode>("nodes", instanceOk),
  "Session.List": list("sessions", sessionOk),
  "Session.NodeSessions": list("sessions", sessionOk),
  "Session.Get": list("sessions", sessionOk),
  "Coordinate.ListNodes": list<CoordinateEntry>("coordinates", (a, c) => a.allowed("node", "read", c.node)),
};

type Check = (ctx: ServerContext, args: Record<string, unknown>) => void;

function need(ctx: ServerContext, token: unknown, resource: "node" | "service" | "session", name: string, access: "read" | "write" = "write"): void {
  aclAuthorize(ctx, typeof token === "string" ? token : undefined, resource, access, name);
}

/** The session's node, for the checks of calls that name a session by ID (undefined: no such session, the endpoint says so). */
function sessionNode(ctx: ServerContext, id: unknown): string | undefined {
  return ctx.fsm.state.tables.sessions.get(String(id ?? ""))?.node;
}

/**
 * Calls whose names are in the arguments (consul vetRegisterWithACL,
 * vetDeregisterWithACL, Session.Apply, Session.Renew, Coordinate.Update,
 * Coordinate.Node), checked before the endpoint runs.
 */
const checks: Partial<Record<keyof RpcHandlers, Check>> = {
  "Catalog.Register": (ctx, a) => {
    const node = String(a.node ?? "");
    const service = a.service as { service?: string } | undefined;
    if (service?.service !== undefined) need(ctx, a.token, "service", service.service);
    const checks = [...(a.check ? [a.check] : []), ...(Array.isArray(a.checks) ? a.checks : [])] as { serviceId?: string }[];
    // The node's own fields, and checks of the node itself, need node:write.
    if (a.skipNodeUpdate !== true || checks.some((c) => !c.serviceId)) need(ctx, a.token, "node", node);
  },
  "Catalog.Deregister": (ctx, a) => {
    const node = String(a.node ?? "");
    const serviceId = typeof a.serviceId === "string" ? a.serviceId : "";
    if (serviceId === "") {
      need(ctx, a.token, "node", node);
      return;
    }
    // A service instance: write on its service name (the instance's ID when it is no longer known).
    const row = ctx.fsm.state.tables.services.all().find((s) => s.node.toLowerCase() === node.toLowerCase() && s.id === serviceId);
    need(ctx, a.token, "service", row?.service ?? serviceId);
  },
  "Session.Apply": (ctx, a) => {
    const session = (a.session ?? {}) as { node?: string; id?: string };
    if (a.op === "create") {
      need(ctx, a.token, "session", String(session.node ?? ""));
      return;
    }
    const node = sessionNode(ctx, session.id);
    if (node !== undefined) need(ctx, a.token, "session", node);
  },
  "Session.Renew": (ctx, a) => {
    const node = sessionNode(ctx, a.sessionId);
    if (node !== undefined) need(ctx, a.token, "session", node);
  },
  "Coordinate.Update": (ctx, a) => need(ctx, a.token, "node", String(a.node ?? "")),
  "Coordinate.Node": (ctx, a) => need(ctx, (a.query as { token?: unknown } | undefined)?.token, "node", String(a.node ?? ""), "read"),
};

/** The handlers with ACL filtering on the replies of catalog, health, session and coordinate reads, and the checks above. */
export function withAclFilters(ctx: ServerContext, handlers: RpcHandlers): RpcHandlers {
  if (!ctx.acl?.enabled) return handlers;
  const out = { ...handlers } as Record<string, unknown>;
  for (const [method, filter] of Object.entries(filters) as [keyof RpcHandlers, Filter][]) {
    const h = handlers[method] as ((args: unknown, options?: unknown) => Promise<Record<string, unknown>>) | undefined;
    if (!h) continue;
    out[method] = async (args: { query?: { token?: string } }, options?: unknown) => {
      // Resolve first: an unknown token is refused before any work.
      const id = aclIdentity(ctx, args?.query?.token);
      const reply = await h(args, options);
      if (!id) return reply;
      const copy = { ...reply };
      if (filter(id.authz, copy)) copy.meta = { ...(copy.meta as QueryMeta), resultsFilteredByAcls: true };
      return copy;
    };
  }
  for (const [method, check] of Object.entries(checks) as [keyof RpcHandlers, Check][]) {
    const h = handlers[method] as ((args: unknown, options?: HandlerOptions) => Promise<unknown>) | undefined;
    if (!h) continue;
    out[method] = (args: Record<string, unknown>, options?: HandlerOptions) => {
      try {
        if (options?.internal !== true && typeof args === "object" && args !== null) check(ctx, args);
      } catch (err) {
        return Promise.reject(err);
      }
      return h(args, options);
    };
  }
  return out as unknown as RpcHandlers;
}
