// /v1/session, as consul api/session.go.
import type { ApiClient, QueryMeta, QueryOptions, WriteOptions } from "./client.ts";

export interface SessionEntry {
  ID: string;
  Name: string;
  Node: string;
  /** Nanoseconds. */
  LockDelay: number;
  Behavior: "release" | "delete";
  TTL: string;
  NodeChecks: string[] | null;
  ServiceChecks: { ID: string; Namespace: string }[] | null;
  CreateIndex: number;
  ModifyIndex: number;
}

/** The create body, Consul's field names; omitted fields take the agent's defaults. */
export interface SessionCreateRequest {
  Name?: string;
  Node?: string;
  LockDelay?: string | number;
  Behavior?: "release" | "delete";
  TTL?: string;
  Checks?: string[];
  NodeChecks?: string[];
  ServiceChecks?: { ID: string; Namespace?: string }[];
}

export class Sessions {
  readonly #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async create(body: SessionCreateRequest = {}, opts?: WriteOptions): Promise<string> {
    const r = await this.#c.request({ method: "PUT", path: "/v1/session/create", body: JSON.stringify(body), write: opts });
    return (JSON.parse(r.text) as { ID: string }).ID;
  }

  async destroy(id: string, opts?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: `/v1/session/destroy/${encodeURIComponent(id)}`, write: opts });
  }

  /** The renewed session, or null when it no longer exists (404). */
  async renew(id: string, opts?: WriteOptions): Promise<SessionEntry | null> {
    const r = await this.#c.request({ method: "PUT", path: `/v1/session/renew/${encodeURIComponent(id)}`, write: opts, accept: [404] });
    if (r.status === 404) return null;
    return (JSON.parse(r.text) as SessionEntry[])[0] ?? null;
  }

  async info(id: string, opts?: QueryOptions): Promise<{ session: SessionEntry | null; meta: QueryMeta }> {
    const r = await this.#c.request({ method: "GET", path: `/v1/session/info/${encodeURIComponent(id)}`, query: opts });
    return { session: ((JSON.parse(r.text) ?? []) as SessionEntry[])[0] ?? null, meta: r.meta };
  }

  async node(node: string, opts?: QueryOptions): Promise<{ sessions: SessionEntry[]; meta: QueryMeta }> {
    const r = await this.#c.request({ method: "GET", path: `/v1/session/node/${encodeURIComponent(node)}`, query: opts });
    return { sessions: (JSON.parse(r.text) ?? []) as SessionEntry[], meta: r.meta };
  }

  async list(opts?: QueryOptions): Promise<{ sessions: SessionEntry[]; meta: QueryMeta }> {
    const r = await this.#c.request({ method: "GET", path: "/v1/session/list", query: opts });
    return { sessions: (JSON.parse(r.text) ?? []) as SessionEntry[], meta: r.meta };
  }
}
