// DnsBackend over the RPC contract: Health.ServiceNodes for services,
// Catalog.NodeServices for nodes, PreparedQuery.Execute for queries,
// Catalog.ListNodes / ServiceNodes for PTR.
// Reads are stale by default (dns_config allow_stale); an answer older than
// max_stale is asked again of the leader (Consul agent/dns.go).
import { NotFoundError } from "../errors.ts";
import type { CheckServiceNode, Node, QueryMeta, QueryOptions, Rpc } from "../rpc/methods.ts";
import { serversServiceName } from "./answer.ts";
import type { DnsBackend } from "./driver.ts";
import { normalizeAddress } from "./names.ts";

export interface RpcBackendOptions {
  rpc: Rpc;
  /** The local datacenter (lower-case compare). */
  datacenter: string;
  allowStale: boolean;
  maxStaleMs: number;
  /**
   * This agent as a server, listed for `consul.service` and NS records when
   * the catalog has no `consul` service yet (dev mode before the leader
   * registers it). Omit on client agents.
   */
  selfServer?: { node: string; address: string; port: number };
  /** This agent's node name: prepared queries' `_agent` means it. */
  nodeName?: string;
  /**
   * Keep lookup results this long (ms) and answer repeated questions from
   * memory; 0 disables. Needs `now` (monotonic ms).
   */
  cacheMs?: number;
  now?: () => number;
  /** The token DNS reads carry (acl.tokens.dns, else the default token); answers are filtered by it on the servers. */
  token?: () => string;
}

interface CacheEntry {
  atMs: number;
  value: Promise<unknown>;
}

export function createRpcBackend(options: RpcBackendOptions): DnsBackend {
  const { rpc } = options;
  const localDc = options.datacenter.toLowerCase();
  const cacheMs = options.cacheMs ?? 0;
  const now = options.now;
  const cache = new Map<string, CacheEntry>();

  function cached<T>(key: string, fetch: () => Promise<T>): Promise<T> {
    if (cacheMs <= 0 || !now) return fetch();
    const t = now();
    const hit = cache.get(key);
    if (hit && t - hit.atMs < cacheMs) return hit.value as Promise<T>;
    if (cache.size > 10_000) {
      for (const [k, e] of cache) if (t - e.atMs >= cacheMs) cache.delete(k);
      if (cache.size > 10_000) cache.clear();
    }
    const value = fetch();
    cache.set(key, { atMs: t, value });
    value.catch(() => cache.delete(key));
    return value;
  }

  function query(datacenter: string, stale: boolean): QueryOptions {
    const q: QueryOptions = {
      minQueryIndex: 0,
      maxQueryTimeMs: 0,
      allowStale: stale,
      requireConsistent: false,
      datacenter: datacenter.toLowerCase() === localDc ? undefined : datacenter,
    };
    const token = options.token?.();
    if (token) q.token = token;
    return q;
  }

  /** Run a read stale when allowed; ask the leader again when the stale answer is too old. */
  async function read<R extends { meta: QueryMeta }>(datacenter: string, call: (q: QueryOptions) => Promise<R>): Promise<R> {
    const first = await call(query(datacenter, options.allowStale));
    if (options.allowStale && first.meta.lastContactMs > options.maxStaleMs) return call(query(datacenter, false));
    return first;
  }

  async function knownDatacenter(datacenter: string): Promise<boolean> {
    if (datacenter.toLowerCase() === localDc) return true;
    const dcs = await cached("dcs", () => rpc.call("Catalog.ListDatacenters", {}));
    return dcs.some((d) => d.toLowerCase() === datacenter.toLowerCase());
  }

  async function serviceInstances(service: string, tag: string, datacenter: string): Promise<{ instances: CheckServiceNode[] | null; index: number }> {
    if (!(await knownDatacenter(datacenter))) return { instances: null, index: 0 };
    const reply = await read(datacenter, (q) =>
      rpc.call("Health.ServiceNodes", { query: q, serviceName: service, serviceTags: tag ? [tag] : undefined })
    );
    return { instances: reply.nodes, index: reply.meta.index };
  }

  function selfInstance(): CheckServiceNode[] {
    const s = options.selfServer;
    if (!s) return [];
    const node: Node = {
      id: "",
      node: s.node,
      address: s.address,
      datacenter: options.datacenter,
      taggedAddresses: {},
      meta: {},
      createIndex: 1,
      modifyIndex: 1,
    };
    return [{
      node,
      service: {
        kind: "",
        id: serversServiceName,
        service: serversServiceName,
        tags: [],
        address: "",
        taggedAddresses: {},
        meta: {},
        port: s.port,
        weights: { passing: 1, warning: 1 },
        enableTagOverride: false,
        createIndex: 1,
        modifyIndex: 1,
      },
      checks: [],
    }];
  }

  return {
    node: ({ node, datacenter }) =>
      cached(`n\0${datacenter}\0${node}`, async () => {
        if (!(await knownDatacenter(datacenter))) return { node: null, index: 0 };
        const reply = await read(datacenter, (q) => rpc.call("Catalog.NodeServices", { query: q, node }));
        return { node: reply.nodeServices?.node ?? null, index: reply.meta.index };
      }),
    serviceInstances: ({ service, tag, datacenter }) =>
      cached(`s\0${datacenter}\0${tag}\0${service}`, async () => {
        if (service.toLowerCase() !== serversServiceName || datacenter.toLowerCase() !== localDc || !options.selfServer) {
          return serviceInstances(service, tag, datacenter);
        }
        // The servers: from the catalog when the leader has registered them, else this agent.
        try {
          const found = await serviceInstances(service, tag, datacenter);
          if (found.instances && found.instances.length > 0) return found;
        } catch {
          // fall through to this agent
        }
        return { instances: selfInstance(), index: 0 };
      }),
    preparedQuery: async ({ query, datacenter }) => {
      if (!(await knownDatacenter(datacenter))) return { result: null };
      try {
        const r = await read(datacenter, (q) =>
          rpc.call("PreparedQuery.Execute", {
            queryIdOrName: query,
            agent: { node: options.nodeName ?? "", datacenter: options.datacenter },
            query: q,
          })
        );
        return { result: { service: r.service, nodes: r.nodes, ttl: r.dns.ttl } };
      } catch (err) {
        if (err instanceof NotFoundError) return { result: null };
        throw err;
      }
    },
    reverse: ({ address }) =>
      cached(`r\0${address}`, async () => {
        const nodesReply = await read(localDc, (q) => rpc.call("Catalog.ListNodes", { query: q }));
        const nodes = nodesReply.nodes.filter((n) => sameAddress(n.address, address));
        if (nodes.length > 0) return { nodes, services: [] };
        const services: Array<{ service: string; datacenter: string }> = [];
        const list = await read(localDc, (q) => rpc.call("Catalog.ListServices", { query: q }));
        for (const name of Object.keys(list.services)) {
          const sn = await read(localDc, (q) => rpc.call("Catalog.ServiceNodes", { query: q, serviceName: name }));
          for (const e of sn.serviceNodes) {
            if (sameAddress(e.service.address, address)) {
              services.push({ service: e.service.service, datacenter: e.node.datacenter });
              break;
            }
          }
        }
        return { nodes: [], services };
      }),
  };
}

function sameAddress(a: string, b: string): boolean {
  if (!a) return false;
  return (normalizeAddress(a) ?? a.toLowerCase()) === (normalizeAddress(b) ?? b.toLowerCase());
}
