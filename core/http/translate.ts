// translate_wan_addrs for HTTP answers (consul agent.TranslateAddress and
// TranslateServiceAddress): nodes and services of another datacenter are
// shown with their `wan` tagged addresses, and every catalog and health
// answer that could carry one says so with X-Consul-Translate-Addresses.
import type { CheckServiceNode, Node, NodeService, ServiceNode } from "../rpc/methods.ts";
import { parseDatacenter } from "./blocking.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";

export interface WanTranslation {
  /** translate_wan_addrs. */
  enabled: boolean;
  /** This agent's datacenter: its own answers are never translated. */
  datacenter: string;
}

/** Whether answers to `req` are translated: enabled and `?dc` names another datacenter. */
function translates(req: HttpRequest, t: WanTranslation | undefined): boolean {
  if (!t?.enabled) return false;
  const dc = parseDatacenter(req);
  return dc !== "" && dc !== t.datacenter;
}

function node(n: Node): Node {
  const wan = n.taggedAddresses?.wan;
  return wan ? { ...n, address: wan } : n;
}

function service(s: NodeService): NodeService {
  const wan = s.taggedAddresses?.wan?.address;
  return wan ? { ...s, address: wan } : s;
}

export function translateNodes(req: HttpRequest, t: WanTranslation | undefined, nodes: Node[]): Node[] {
  return translates(req, t) ? nodes.map(node) : nodes;
}

export function translateServiceNodes<T extends ServiceNode | CheckServiceNode>(req: HttpRequest, t: WanTranslation | undefined, rows: T[]): T[] {
  return translates(req, t) ? rows.map((r) => ({ ...r, node: node(r.node), service: service(r.service) })) : rows;
}

export function translateNodeServices(
  req: HttpRequest,
  t: WanTranslation | undefined,
  ns: { node: Node; services: NodeService[] } | null,
): { node: Node; services: NodeService[] } | null {
  return ns && translates(req, t) ? { node: node(ns.node), services: ns.services.map(service) } : ns;
}

/** Consul sets X-Consul-Translate-Addresses: true on these answers whenever translate_wan_addrs is on. */
export function withTranslateHeader(t: WanTranslation | undefined, res: HttpResponse): HttpResponse {
  if (!t?.enabled) return res;
  return { ...res, headers: { ...res.headers, "X-Consul-Translate-Addresses": "true" } };
}
