// /v1/catalog and /v1/health, as consul api/catalog.go and api/health.go.
// Results keep Consul's PascalCase JSON shapes.
import type { ApiClient, QueryMeta, QueryOptions, WriteOptions } from "./client.ts";

export interface CatalogNode {
  ID: string;
  Node: string;
  Address: string;
  Datacenter: string;
  TaggedAddresses: Record<string, string>;
  Meta: Record<string, string>;
  CreateIndex: number;
  ModifyIndex: number;
}

export interface CatalogService {
  ID: string;
  Node: string;
  Address: string;
  Datacenter: string;
  TaggedAddresses: Record<string, string>;
  NodeMeta: Record<string, string>;
  ServiceKind: string;
  ServiceID: string;
  ServiceName: string;
  ServiceTags: string[];
  ServiceAddress: string;
  ServiceWeights: { Passing: number; Warning: number };
  ServiceMeta: Record<string, string>;
  ServicePort: number;
  ServiceEnableTagOverride: boolean;
  CreateIndex: number;
  ModifyIndex: number;
}

export interface AgentServiceJson {
  ID: string;
  Service: string;
  Tags: string[];
  Address: string;
  Meta: Record<string, string>;
  Port: number;
  Weights: { Passing: number; Warning: number };
  EnableTagOverride: boolean;
  CreateIndex: number;
  ModifyIndex: number;
}

export interface HealthCheckJson {
  Node: string;
  CheckID: string;
  Name: string;
  Status: string;
  Notes: string;
  Output: string;
  ServiceID: string;
  ServiceName: string;
  ServiceTags: string[];
  Type: string;
  CreateIndex: number;
  ModifyIndex: number;
}

export interface ServiceEntry {
  Node: CatalogNode;
  Service: AgentServiceJson;
  Checks: HealthCheckJson[];
}

export interface CatalogListOptions extends QueryOptions {
  /** `?node-meta=key:value`, every pair must match. */
  nodeMeta?: Record<string, string>;
  filter?: string;
}

/** A path with repeatable query parameters (tag, node-meta) already encoded. */
export function withRepeated(path: string, params: [string, string][]): string {
  if (params.length === 0) return path;
  const q = params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");
  return `${path}?${q}`;
}

function listParams(opts: CatalogListOptions | undefined): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(opts?.nodeMeta ?? {})) out.push(["node-meta", `${k}:${v}`]);
  if (opts?.filter) out.push(["filter", opts.filter]);
  return out;
}

function seg(s: string): string {
  return encodeURIComponent(s);
}

export class Catalog {
  readonly #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async #get<T>(path: string, params: [string, string][], opts?: QueryOptions, accept?: number[]): Promise<{ value: T; meta: QueryMeta; status: number }> {
    const r = await this.#c.request({ method: "GET", path: withRepeated(path, params), query: opts, accept });
    return { value: (r.status === 200 ? JSON.parse(r.text) : null) as T, meta: r.meta, status: r.status };
  }

  async datacenters(opts?: QueryOptions): Promise<string[]> {
    return (await this.#get<string[]>("/v1/catalog/datacenters", [], opts)).value;
  }

  async nodes(opts?: CatalogListOptions & { near?: string }): Promise<{ nodes: CatalogNode[]; meta: QueryMeta }> {
    const params = listParams(opts);
    if (opts?.near) params.push(["near", opts.near]);
    const r = await this.#get<CatalogNode[]>("/v1/catalog/nodes", params, opts);
    return { nodes: r.value ?? [], meta: r.meta };
  }

  async services(opts?: CatalogListOptions): Promise<{ services: Record<string, string[]>; meta: QueryMeta }> {
    const r = await this.#get<Record<string, string[]>>("/v1/catalog/services", listParams(opts), opts);
    return { services: r.value ?? {}, meta: r.meta };
  }

  async service(name: string, opts?: CatalogListOptions & { tags?: string[]; near?: string }): Promise<{ services: CatalogService[]; meta: QueryMeta }> {
    const params = [...(opts?.tags ?? []).map((t): [string, string] => ["tag", t]), ...listParams(opts)];
    if (opts?.near) params.push(["near", opts.near]);
    const r = await this.#get<CatalogService[]>(`/v1/catalog/service/${seg(name)}`, params, opts);
    return { services: r.value ?? [], meta: r.meta };
  }

  /** The node and a map of its services; null when the node is unknown. */
  async node(name: string, opts?: CatalogListOptions): Promise<{ node: { Node: CatalogNode; Services: Record<string, AgentServiceJson> } | null; meta: QueryMeta }> {
    const r = await this.#get<{ Node: CatalogNode; Services: Record<string, AgentServiceJson> } | null>(`/v1/catalog/node/${seg(name)}`, listParams(opts), opts);
    return { node: r.value, meta: r.meta };
  }

  /** PUT /v1/catalog/register with a Consul RegisterRequest body. */
  async register(body: Record<string, unknown>, opts?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: "/v1/catalog/register", body: JSON.stringify(body), write: opts });
  }

  async deregister(body: { Node: string; ServiceID?: string; CheckID?: string }, opts?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: "/v1/catalog/deregister", body: JSON.stringify(body), write: opts });
  }
}

export class Health {
  readonly #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async #list<T>(path: string, params: [string, string][], opts?: QueryOptions): Promise<{ value: T[]; meta: QueryMeta }> {
    const r = await this.#c.request({ method: "GET", path: withRepeated(path, params), query: opts });
    return { value: (JSON.parse(r.text) ?? []) as T[], meta: r.meta };
  }

  async node(node: string, opts?: CatalogListOptions): Promise<{ checks: HealthCheckJson[]; meta: QueryMeta }> {
    const r = await this.#list<HealthCheckJson>(`/v1/health/node/${seg(node)}`, listParams(opts), opts);
    return { checks: r.value, meta: r.meta };
  }

  async checks(service: string, opts?: CatalogListOptions): Promise<{ checks: HealthCheckJson[]; meta: QueryMeta }> {
    const r = await this.#list<HealthCheckJson>(`/v1/health/checks/${seg(service)}`, listParams(opts), opts);
    return { checks: r.value, meta: r.meta };
  }

  async service(service: string, opts?: CatalogListOptions & { tags?: string[]; passingOnly?: boolean }): Promise<{ entries: ServiceEntry[]; meta: QueryMeta }> {
    const params = [...(opts?.tags ?? []).map((t): [string, string] => ["tag", t]), ...listParams(opts)];
    if (opts?.passingOnly) params.push(["passing", "true"]);
    const r = await this.#list<ServiceEntry>(`/v1/health/service/${seg(service)}`, params, opts);
    return { entries: r.value, meta: r.meta };
  }

  async state(state: "any" | "passing" | "warning" | "critical", opts?: CatalogListOptions): Promise<{ checks: HealthCheckJson[]; meta: QueryMeta }> {
    const r = await this.#list<HealthCheckJson>(`/v1/health/state/${state}`, listParams(opts), opts);
    return { checks: r.value, meta: r.meta };
  }
}
