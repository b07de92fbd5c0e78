// An in-memory DnsBackend for tests, with builders for catalog entries.
import type { CheckServiceNode, CheckStatus, HealthCheck, Node } from "../rpc/methods.ts";
import type { DnsAnswerConfig } from "./answer.ts";
import type { DnsBackend } from "./driver.ts";

export function testConfig(overrides: Partial<DnsAnswerConfig> = {}): DnsAnswerConfig {
  return {
    domain: "consul.",
    altDomain: "",
    datacenter: "dc1",
    nodeTtlMs: 0,
    serviceTtlMs: {},
    onlyPassing: false,
    enableTruncate: false,
    udpAnswerLimit: 3,
    aRecordLimit: 0,
    soa: { refresh: 3600, retry: 600, expire: 86400, min: 0 },
    hasRecursors: false,
    ...overrides,
  };
}

export function makeNode(name: string, address: string, meta: Record<string, string> = {}, datacenter = "dc1"): Node {
  return { id: "", node: name, address, datacenter, taggedAddresses: {}, meta, createIndex: 1, modifyIndex: 1 };
}

export function makeCheck(node: string, status: CheckStatus, serviceId = ""): HealthCheck {
  return {
    node,
    checkId: `${serviceId || "node"}-${status}`,
    name: "check",
    status,
    notes: "",
    output: "",
    serviceId,
    serviceName: "",
    serviceTags: [],
    type: "ttl",
    interval: "",
    timeout: "",
    definition: {},
    createIndex: 1,
    modifyIndex: 1,
  };
}

export function makeInstance(
  node: Node,
  service: string,
  options: { id?: string; tags?: string[]; address?: string; port?: number; checks?: CheckStatus[]; weights?: { passing: number; warning: number } } = {},
): CheckServiceNode {
  const id = options.id ?? service;
  return {
    node,
    service: {
      kind: "",
      id,
      service,
      tags: options.tags ?? [],
      address: options.address ?? "",
      taggedAddresses: {},
      meta: {},
      port: options.port ?? 80,
      weights: options.weights ?? { passing: 1, warning: 1 },
      enableTagOverride: false,
      createIndex: 1,
      modifyIndex: 1,
    },
    checks: (options.checks ?? []).map((s) => makeCheck(node.node, s, id)),
  };
}

export class FakeBackend implements DnsBackend {
  nodes: Node[] = [];
  instances: CheckServiceNode[] = [];
  datacenters = ["dc1"];
  calls = 0;
  fail = false;

  /** Reported with every read; bump it after changing the data (0: answers are never reused). */
  index = 0;

  async node(args: { node: string; datacenter: string }): Promise<{ node: Node | null; index: number }> {
    this.#call();
    if (!this.datacenters.includes(args.datacenter)) return { node: null, index: this.index };
    const node = this.nodes.find((n) => n.node.toLowerCase() === args.node.toLowerCase() && n.datacenter === args.datacenter) ?? null;
    return { node, index: this.index };
  }

  async serviceInstances(args: { service: string; tag: string; datacenter: string }): Promise<{ instances: CheckServiceNode[] | null; index: number }> {
    this.#call();
    if (!this.datacenters.includes(args.datacenter)) return { instances: null, index: this.index };
    const instances = this.instances.filter((i) =>
      i.service.service.toLowerCase() === args.service.toLowerCase() &&
      i.node.datacenter === args.datacenter &&
      (!args.tag || i.service.tags.some((t) => t.toLowerCase() === args.tag.toLowerCase()))
    );
    return { instances, index: this.index };
  }

  /** Prepared queries by lower-case ID or name: what PreparedQuery.Execute answered. */
  queries = new Map<string, { service: string; nodes: CheckServiceNode[]; ttl: string }>();

  async preparedQuery(args: { query: string; datacenter: string }) {
    this.#call();
    if (!this.datacenters.includes(args.datacenter)) return { result: null };
    return { result: this.queries.get(args.query.toLowerCase()) ?? null };
  }

  async reverse(args: { address: string }) {
    this.#call();
    const nodes = this.nodes.filter((n) => n.address === args.address);
    const services = nodes.length > 0
      ? []
      : this.instances.filter((i) => i.service.address === args.address).map((i) => ({ service: i.service.service, datacenter: i.node.datacenter }));
    return { nodes, services };
  }

  #call(): void {
    this.calls++;
    if (this.fail) throw new Error("backend down");
  }
}
