// /v1/agent service, check, maintenance and reload calls, as consul
// api/agent.go (ServiceRegister, ServiceDeregister, Services, Checks,
// EnableNodeMaintenance, EnableServiceMaintenance, Reload, UpdateTTL...).
// Bodies and answers keep Consul's PascalCase JSON.
import type { ApiClient, WriteOptions } from "./client.ts";

/** consul api.AgentServiceRegistration (any of its fields; checks under Check/Checks). */
export type AgentServiceRegistration = Record<string, unknown> & { Name?: string; ID?: string };
/** consul api.AgentCheckRegistration. */
export type AgentCheckRegistration = Record<string, unknown> & { Name: string };

/** consul api.AgentService. */
export interface AgentService {
  Kind?: string;
  ID: string;
  Service: string;
  Tags: string[];
  Meta: Record<string, string>;
  Port: number;
  Address: string;
  TaggedAddresses?: Record<string, { Address: string; Port: number }>;
  Weights: { Passing: number; Warning: number };
  EnableTagOverride: boolean;
  ContentHash?: string;
  Datacenter?: string;
}

/** consul api.AgentCheck. */
export interface AgentCheck {
  Node: string;
  CheckID: string;
  Name: string;
  Status: string;
  Notes: string;
  Output: string;
  ServiceID: string;
  ServiceName: string;
  ServiceTags?: string[];
  Type: string;
  Interval?: string;
  Timeout?: string;
  Definition?: Record<string, unknown>;
}

function parseObject<T>(text: string, what: string): T {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new TypeError(`Invalid JSON from agent for ${what}: ${text.slice(0, 200)}`);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new TypeError(`Invalid response from agent for ${what}: expected an object`);
  }
  return data as T;
}

export class AgentServices {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async services(): Promise<Record<string, AgentService>> {
    const r = await this.#c.request({ method: "GET", path: "/v1/agent/services" });
    return parseObject(r.text, "agent/services");
  }

  /** The service, or undefined when the agent has none with that ID. */
  async service(id: string): Promise<AgentService | undefined> {
    const r = await this.#c.request({ method: "GET", path: `/v1/agent/service/${encodeURIComponent(id)}`, accept: [404] });
    return r.status === 404 ? undefined : parseObject(r.text, "agent/service");
  }

  async checks(): Promise<Record<string, AgentCheck>> {
    const r = await this.#c.request({ method: "GET", path: "/v1/agent/checks" });
    return parseObject(r.text, "agent/checks");
  }

  async serviceRegister(reg: AgentServiceRegistration, options: WriteOptions & { replaceExistingChecks?: boolean } = {}): Promise<void> {
    const { replaceExistingChecks, ...write } = options;
    await this.#c.request({
      method: "PUT",
      path: "/v1/agent/service/register",
      params: { "replace-existing-checks": replaceExistingChecks ? "true" : undefined },
      body: JSON.stringify(reg),
      write,
    });
  }

  async serviceDeregister(id: string, write?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: `/v1/agent/service/deregister/${encodeURIComponent(id)}`, write });
  }

  async checkRegister(reg: AgentCheckRegistration, write?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: "/v1/agent/check/register", body: JSON.stringify(reg), write });
  }

  async checkDeregister(id: string, write?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: `/v1/agent/check/deregister/${encodeURIComponent(id)}`, write });
  }

  /** PUT /v1/agent/check/update/<id> (consul UpdateTTL). */
  async updateTtl(checkId: string, output: string, status: "passing" | "warning" | "critical", write?: WriteOptions): Promise<void> {
    await this.#c.request({
      method: "PUT",
      path: `/v1/agent/check/update/${encodeURIComponent(checkId)}`,
      body: JSON.stringify({ Status: status, Output: output }),
      write,
    });
  }

  async enableNodeMaintenance(reason: string, write?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: "/v1/agent/maintenance", params: { enable: "true", reason: reason || undefined }, write });
  }

  async disableNodeMaintenance(write?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: "/v1/agent/maintenance", params: { enable: "false" }, write });
  }

  async enableServiceMaintenance(serviceId: string, reason: string, write?: WriteOptions): Promise<void> {
    await this.#c.request({
      method: "PUT",
      path: `/v1/agent/service/maintenance/${encodeURIComponent(serviceId)}`,
      params: { enable: "true", reason: reason || undefined },
      write,
    });
  }

  async disableServiceMaintenance(serviceId: string, write?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: `/v1/agent/service/maintenance/${encodeURIComponent(serviceId)}`, params: { enable: "false" }, write });
  }

  async reload(write?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: "/v1/agent/reload", write });
  }
}
