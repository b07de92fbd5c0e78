// Consul's JSON encoding of the catalog structs (structs.Node, NodeService,
// ServiceNode, HealthCheck, CheckServiceNode, Session). The HTTP layer answers
// with these, and `?filter=` expressions are evaluated against them, as
// Consul evaluates filters over its structs' field names.

import type { CheckServiceNode, HealthCheck, HealthCheckDefinition, Node, NodeService, ServiceNode, Session } from "../rpc/methods.ts";

export type Json = Record<string, unknown>;

function taggedServiceAddresses(s: NodeService): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(s.taggedAddresses)) out[k] = { Address: v.address, Port: v.port };
  return out;
}

const proxyJson = (): Json => ({ Mode: "", MeshGateway: {}, Expose: {} });

export function nodeToJson(n: Node): Json {
  return {
    ID: n.id,
    Node: n.node,
    Address: n.address,
    Datacenter: n.datacenter,
    TaggedAddresses: { ...n.taggedAddresses },
    Meta: { ...n.meta },
    CreateIndex: n.createIndex,
    ModifyIndex: n.modifyIndex,
  };
}

export function nodeServiceToJson(s: NodeService): Json {
  const out: Json = { ID: s.id, Service: s.service, Tags: [...s.tags], Address: s.address };
  if (s.kind !== "") out.Kind = s.kind;
  if (Object.keys(s.taggedAddresses).length > 0) out.TaggedAddresses = taggedServiceAddresses(s);
  out.Meta = { ...s.meta };
  out.Port = s.port;
  out.Weights = { Passing: s.weights.passing, Warning: s.weights.warning };
  out.EnableTagOverride = s.enableTagOverride;
  out.Proxy = proxyJson();
  out.Connect = {};
  out.CreateIndex = s.createIndex;
  out.ModifyIndex = s.modifyIndex;
  return out;
}

/** A /v1/catalog/service entry: node fields flattened with Service* fields. */
export function serviceNodeToJson(sn: ServiceNode): Json {
  const { node: n, service: s } = sn;
  const out: Json = {
    ID: n.id,
    Node: n.node,
    Address: n.address,
    Datacenter: n.datacenter,
    TaggedAddresses: { ...n.taggedAddresses },
    NodeMeta: { ...n.meta },
    ServiceKind: s.kind,
    ServiceID: s.id,
    ServiceName: s.service,
    ServiceTags: [...s.tags],
    ServiceAddress: s.address,
  };
  if (Object.keys(s.taggedAddresses).length > 0) out.ServiceTaggedAddresses = taggedServiceAddresses(s);
  out.ServiceWeights = { Passing: s.weights.passing, Warning: s.weights.warning };
  out.ServiceMeta = { ...s.meta };
  out.ServicePort = s.port;
  out.ServiceSocketPath = "";
  out.ServiceEnableTagOverride = s.enableTagOverride;
  out.ServiceProxy = proxyJson();
  out.ServiceConnect = {};
  out.CreateIndex = s.createIndex;
  out.ModifyIndex = s.modifyIndex;
  return out;
}

/** Go's time.Duration String() for whole milliseconds ("10s", "1m30s", "1.5s", "0s"). */
export function formatGoDurationMs(ms: number): string {
  if (ms === 0) return "0s";
  const neg = ms < 0;
  let rest = Math.abs(ms);
  if (rest < 1000) return `${neg ? "-" : ""}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = rest / 1000;
  let out = "";
  if (h > 0) out += `${h}h`;
  if (h > 0 || m > 0) out += `${m}m`;
  out += `${Number(s.toFixed(3))}s`;
  return (neg ? "-" : "") + out;
}

export function checkDefinitionToJson(d: HealthCheckDefinition): Json {
  const out: Json = {};
  if (d.http) out.HTTP = d.http;
  if (d.tlsServerName) out.TLSServerName = d.tlsServerName;
  if (d.tlsSkipVerify) out.TLSSkipVerify = true;
  if (d.header && Object.keys(d.header).length > 0) out.Header = d.header;
  if (d.method) out.Method = d.method;
  if (d.body) out.Body = d.body;
  if (d.tcp) out.TCP = d.tcp;
  if (d.grpc) out.GRPC = d.grpc;
  if (d.grpcUseTls) out.GRPCUseTLS = true;
  if (d.intervalMs) out.Interval = formatGoDurationMs(d.intervalMs);
  if (d.timeoutMs) out.Timeout = formatGoDurationMs(d.timeoutMs);
  if (d.deregisterCriticalServiceAfterMs) out.DeregisterCriticalServiceAfter = formatGoDurationMs(d.deregisterCriticalServiceAfterMs);
  return out;
}

export function healthCheckToJson(c: HealthCheck): Json {
  return {
    Node: c.node,
    CheckID: c.checkId,
    Name: c.name,
    Status: c.status,
    Notes: c.notes,
    Output: c.output,
    ServiceID: c.serviceId,
    ServiceName: c.serviceName,
    ServiceTags: [...c.serviceTags],
    Type: c.type,
    Interval: c.interval,
    Timeout: c.timeout,
    ExposedPort: 0,
    Definition: checkDefinitionToJson(c.definition),
    CreateIndex: c.createIndex,
    ModifyIndex: c.modifyIndex,
  };
}

export function checkServiceNodeToJson(csn: CheckServiceNode): Json {
  return { Node: nodeToJson(csn.node), Service: nodeServiceToJson(csn.service), Checks: csn.checks.map(healthCheckToJson) };
}

/** LockDelay in nanoseconds, as Consul encodes time.Duration. */
export function sessionToJson(s: Session): Json {
  return {
    ID: s.id,
    Name: s.name,
    Node: s.node,
    NodeChecks: s.nodeChecks.length > 0 ? [...s.nodeChecks] : null,
    ServiceChecks: s.serviceChecks.length > 0 ? s.serviceChecks.map((c) => ({ ID: c.id, Namespace: c.namespace ?? "" })) : null,
    LockDelay: s.lockDelayMs * 1_000_000,
    Behavior: s.behavior,
    TTL: s.ttl,
    CreateIndex: s.createIndex,
    ModifyIndex: s.modifyIndex,
  };
}

/** For `/v1/catalog/node/<node>`: the node and a map of service ID → service. */
export function nodeServicesToJson(ns: { node: Node; services: NodeService[] } | null, asList: boolean): Json | null {
  if (!ns) return null;
  if (asList) return { Node: nodeToJson(ns.node), Services: ns.services.map(nodeServiceToJson) };
  const services: Json = {};
  for (const s of ns.services) services[s.id] = nodeServiceToJson(s);
  return { Node: nodeToJson(ns.node), Services: services };
}
