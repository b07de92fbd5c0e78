// /v1/acl/* and /v1/agent/token (consul api/acl.go), for `cairn acl ...`.
import type { ApiClient, QueryOptions, WriteOptions } from "./client.ts";

export interface AclLinkJson {
  ID?: string;
  Name?: string;
}

/** Consul's api.ACLToken (the fields cairn keeps). */
export interface AclTokenJson {
  AccessorID: string;
  SecretID: string;
  Description: string;
  Policies?: AclLinkJson[];
  Roles?: AclLinkJson[];
  ServiceIdentities?: { ServiceName: string; Datacenters?: string[] }[];
  NodeIdentities?: { NodeName: string; Datacenter: string }[];
  Local: boolean;
  ExpirationTime?: string;
  ExpirationTTL?: string;
  CreateTime: string;
  CreateIndex: number;
  ModifyIndex: number;
}

/** Consul's api.ACLPolicy. */
export interface AclPolicyJson {
  ID: string;
  Name: string;
  Description: string;
  Rules?: string;
  Datacenters?: string[];
  CreateIndex: number;
  ModifyIndex: number;
}

/** Consul's api.ACLRole. */
export interface AclRoleJson {
  ID: string;
  Name: string;
  Description: string;
  Policies?: AclLinkJson[];
  ServiceIdentities?: { ServiceName: string; Datacenters?: string[] }[];
  NodeIdentities?: { NodeName: string; Datacenter: string }[];
  CreateIndex: number;
  ModifyIndex: number;
}

export class Acl {
  readonly #c: ApiClient;

  constructor(client: ApiClient) {
    this.#c = client;
  }

  async #json<T>(method: "GET" | "PUT" | "DELETE", path: string, body?: unknown, q?: QueryOptions, w?: WriteOptions): Promise<T> {
    const r = await this.#c.request({ method, path, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), ...(q ? { query: q } : {}), ...(w ? { write: w } : {}) });
    return JSON.parse(r.text) as T;
  }

  bootstrap(): Promise<AclTokenJson> {
    return this.#json("PUT", "/v1/acl/bootstrap");
  }

  tokenCreate(t: Partial<AclTokenJson>): Promise<AclTokenJson> {
    return this.#json("PUT", "/v1/acl/token", t);
  }

  tokenRead(accessorId: string, q?: QueryOptions): Promise<AclTokenJson> {
    return this.#json("GET", `/v1/acl/token/${encodeURIComponent(accessorId)}`, undefined, q);
  }

  tokenReadSelf(q?: QueryOptions): Promise<AclTokenJson> {
    return this.#json("GET", "/v1/acl/token/self", undefined, q);
  }

  tokenList(q?: QueryOptions): Promise<AclTokenJson[]> {
    return this.#json("GET", "/v1/acl/tokens", undefined, q);
  }

  /** `PUT /v1/acl/token/<AccessorID>`: the token as given replaces the stored one (its SecretID and Local cannot change). */
  tokenUpdate(t: Partial<AclTokenJson> & { AccessorID: string }): Promise<AclTokenJson> {
    return this.#json("PUT", `/v1/acl/token/${encodeURIComponent(t.AccessorID)}`, t);
  }

  /** `PUT /v1/acl/token/<AccessorID>/clone`: a new token with the same links; `description` "" keeps the original's. */
  tokenClone(accessorId: string, description: string): Promise<AclTokenJson> {
    return this.#json("PUT", `/v1/acl/token/${encodeURIComponent(accessorId)}/clone`, description ? { Description: description } : {});
  }

  async tokenDelete(accessorId: string): Promise<void> {
    await this.#json("DELETE", `/v1/acl/token/${encodeURIComponent(accessorId)}`);
  }

  policyCreate(p: Partial<AclPolicyJson>): Promise<AclPolicyJson> {
    return this.#json("PUT", "/v1/acl/policy", p);
  }

  policyRead(id: string, q?: QueryOptions): Promise<AclPolicyJson> {
    return this.#json("GET", `/v1/acl/policy/${encodeURIComponent(id)}`, undefined, q);
  }

  policyReadByName(name: string, q?: QueryOptions): Promise<AclPolicyJson> {
    return this.#json("GET", `/v1/acl/policy/name/${encodeURIComponent(name)}`, undefined, q);
  }

  policyList(q?: QueryOptions): Promise<AclPolicyJson[]> {
    return this.#json("GET", "/v1/acl/policies", undefined, q);
  }

  async policyDelete(id: string): Promise<void> {
    await this.#json("DELETE", `/v1/acl/policy/${encodeURIComponent(id)}`);
  }

  roleCreate(r: Partial<AclRoleJson>): Promise<AclRoleJson> {
    return this.#json("PUT", "/v1/acl/role", r);
  }

  roleUpdate(r: Partial<AclRoleJson> & { ID: string }): Promise<AclRoleJson> {
    return this.#json("PUT", `/v1/acl/role/${encodeURIComponent(r.ID)}`, r);
  }

  roleRead(id: string, q?: QueryOptions): Promise<AclRoleJson> {
    return this.#json("GET", `/v1/acl/role/${encodeURIComponent(id)}`, undefined, q);
  }

  roleReadByName(name: string, q?: QueryOptions): Promise<AclRoleJson> {
    return this.#json("GET", `/v1/acl/role/name/${encodeURIComponent(name)}`, undefined, q);
  }

  roleList(q?: QueryOptions): Promise<AclRoleJson[]> {
    return this.#json("GET", "/v1/acl/roles", undefined, q);
  }

  async roleDelete(id: string): Promise<void> {
    await this.#json("DELETE", `/v1/acl/role/${encodeURIComponent(id)}`);
  }

  /** `PUT /v1/agent/token/<type>`. */
  async setAgentToken(type: string, token: string): Promise<void> {
    await this.#c.request({ method: "PUT", path: `/v1/agent/token/${encodeURIComponent(type)}`, body: JSON.stringify({ Token: token }) });
  }
}
