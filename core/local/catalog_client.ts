// What anti-entropy needs from the catalog, and its implementation over the
// server RPC contract (Catalog.NodeServices + Health.NodeChecks to read,
// Catalog.Register / Catalog.Deregister to write). Reads are not stale: the
// leader's view is the one to repair.
import { formatDuration } from "../config/duration.ts";
import type { CatalogRegisterArgs, HealthCheck, HealthCheckInput, NodeService, QueryOptions, Rpc } from "../rpc/mod.ts";
import type { HealthStatus, LocalCheck, LocalService } from "../service_defs/types.ts";

/** This node as the catalog stores it. */
export interface NodeInfo {
  node: string;
  /** Node UUID. */
  id: string;
  address: string;
  taggedAddresses: Record<string, string>;
  meta: Record<string, string>;
}

/** A check as the catalog reports it. */
export interface RemoteCheck {
  node: string;
  checkId: string;
  name: string;
  status: HealthStatus;
  notes: string;
  output: string;
  serviceId: string;
  serviceName: string;
  serviceTags?: string[];
  type?: string;
  /** Kept by the servers (serfHealth and the like), never deleted by an agent. */
  serverOwned?: boolean;
}

export interface CatalogRegistration {
  node: NodeInfo;
  skipNodeUpdate: boolean;
  service?: LocalService;
  checks: LocalCheck[];
  /** The ACL token this write carries; undefined: the client's own (if any). */
  token?: string;
}

export interface CatalogClient {
  /** The catalog's view of a node: undefined `node` when the node is not registered. */
  nodeState(node: string): Promise<{ node?: NodeInfo; services: LocalService[]; checks: RemoteCheck[] }>;
  register(reg: CatalogRegistration): Promise<void>;
  deregister(req: { node: string; serviceId?: string; checkId?: string; token?: string }): Promise<void>;
}

function readQuery(): QueryOptions {
  return { minQueryIndex: 0, maxQueryTimeMs: 0, allowStale: false, requireConsistent: false };
}

export function nodeServiceToLocal(s: NodeService): LocalService {
  return {
    kind: s.kind ?? "",
    id: s.id,
    service: s.service,
    tags: [...(s.tags ?? [])],
    meta: { ...(s.meta ?? {}) },
    address: s.address ?? "",
    port: s.port ?? 0,
    taggedAddresses: Object.fromEntries(Object.entries(s.taggedAddresses ?? {}).map(([k, v]) => [k, { address: v.address, port: v.port }])),
    weights: { passing: s.weights?.passing ?? 1, warning: s.weights?.warning ?? 1 },
    enableTagOverride: s.enableTagOverride ?? false,
  };
}

function healthCheckToRemote(c: HealthCheck): RemoteCheck {
  return {
    node: c.node,
    checkId: c.checkId,
    name: c.name,
    status: c.status,
    notes: c.notes ?? "",
    output: c.output ?? "",
    serviceId: c.serviceId ?? "",
    serviceName: c.serviceName ?? "",
    serviceTags: c.serviceTags ?? [],
    type: c.type || undefined,
    serverOwned: c.type === "serf",
  };
}

/** A local check in the shape Catalog.Register takes (consul HealthCheck with its Definition). */
export function localCheckToInput(c: LocalCheck, node: string): HealthCheckInput {
  const t = c.checkType;
  const input: HealthCheckInput = {
    node,
    checkId: c.checkId,
    name: c.name,
    status: c.status,
    notes: c.notes,
    output: c.output,
    serviceId: c.serviceId,
    type: c.type,
    interval: t && t.intervalMs > 0 ? formatDuration(t.intervalMs) : "",
    timeout: t && t.timeoutMs > 0 ? formatDuration(t.timeoutMs) : "",
    definition: {},
  };
  if (t) {
    const d = input.definition!;
    if (t.http) {
      d.http = t.http;
      if (t.method) d.method = t.method;
      if (Object.keys(t.header).length > 0) d.header = t.header;
      if (t.body) d.body = t.body;
      if (t.tlsSkipVerify) d.tlsSkipVerify = true;
      if (t.tlsServerName) d.tlsServerName = t.tlsServerName;
    }
    if (t.tcp) d.tcp = t.tcp;
    if (t.intervalMs > 0) d.intervalMs = t.intervalMs;
    if (t.timeoutMs > 0) d.timeoutMs = t.timeoutMs;
    if (t.deregisterCriticalServiceAfterMs > 0) d.deregisterCriticalServiceAfterMs = t.deregisterCriticalServiceAfterMs;
  }
  return input;
}

/** The CatalogClient over an Rpc (the local server in dev mode, a forwarder to a server otherwise). */
export function catalogClientFromRpc(rpc: Rpc, options: { datacenter?: string; token?: string } = {}): CatalogClient {
  const dc = options.datacenter ? { datacenter: options.datacenter } : {};
  return {
    async nodeState(node) {
      const query = { ...readQuery(), ...dc, ...(options.token ? { token: options.token } : {}) };
      const ns = await rpc.call("Catalog.NodeServices", { node, query });
      const hc = await rpc.call("Health.NodeChecks", { node, query });
      const n = ns.nodeServices?.node;
      return {
        node: n ? { node: n.node, id: n.id, address: n.address, taggedAddresses: { ...n.taggedAddresses }, meta: { ...n.meta } } : undefined,
        services: (ns.nodeServices?.services ?? []).map(nodeServiceToLocal),
        checks: hc.checks.map(healthCheckToRemote),
      };
    },
    async register(reg) {
      const args: CatalogRegisterArgs = {
        node: reg.node.node,
        address: reg.node.address,
        taggedAddresses: reg.node.taggedAddresses,
        nodeMeta: reg.node.meta,
        skipNodeUpdate: reg.skipNodeUpdate,
        ...dc,
        ...tokenOf(reg.token),
      };
      if (reg.node.id) args.id = reg.node.id;
      if (reg.service) {
        const s = reg.service;
        args.service = {
          kind: s.kind,
          id: s.id,
          service: s.service,
          tags: s.tags,
          address: s.address,
          taggedAddresses: s.taggedAddresses,
          meta: s.meta,
          port: s.port,
          weights: s.weights,
          enableTagOverride: s.enableTagOverride,
        };
      }
      if (reg.checks.length > 0) args.checks = reg.checks.map((c) => localCheckToInput(c, reg.node.node));
      await rpc.call("Catalog.Register", args);
    },
    async deregister(req) {
      const { token, ...rest } = req;
      await rpc.call("Catalog.Deregister", { ...rest, ...dc, ...tokenOf(token) });
    },
  };
  // A token given per write ("" included: the anonymous token) beats the client's own.
  function tokenOf(token: string | undefined): { token?: string } {
    if (token !== undefined) return { token };
    return options.token ? { token: options.token } : {};
  }
}
