import assert from "node:assert/strict";
import { test } from "node:test";
import type { Node, NodeService, Rpc } from "../rpc/methods.ts";
import { catalogNodeHandler, catalogNodesHandler, catalogServiceHandler } from "./catalog.ts";
import { healthServiceHandler } from "./health.ts";
import { makeRequest } from "./types.ts";

const meta = { index: 5, knownLeader: true, lastContactMs: 0, consistencyLevel: "leader" as const };
const node: Node = { id: "", node: "r1", address: "10.2.0.1", datacenter: "dc2", taggedAddresses: { lan: "10.2.0.1", wan: "198.51.100.1" }, meta: {}, createIndex: 1, modifyIndex: 1 };
const svc = (address: string, wan?: string): NodeService => ({
  kind: "", id: "web", service: "web", tags: [], address, taggedAddresses: wan ? { wan: { address: wan, port: 80 } } : {}, meta: {}, port: 80,
  weights: { passing: 1, warning: 1 }, enableTagOverride: false, createIndex: 1, modifyIndex: 1,
} as NodeService);

const rpc = {
  call: (method: string) => {
    switch (method) {
      case "Catalog.ListNodes": return Promise.resolve({ nodes: [node], meta });
      case "Catalog.ServiceNodes": return Promise.resolve({ serviceNodes: [{ node, service: svc("10.2.0.5", "198.51.100.5") }], meta });
      case "Catalog.NodeServices": return Promise.resolve({ nodeServices: { node, services: [svc("")] }, meta });
      case "Health.ServiceNodes": return Promise.resolve({ nodes: [{ node, service: svc(""), checks: [] }], meta });
      default: return Promise.reject(new Error(method));
    }
  },
} as unknown as Rpc;

const body = (r: { body: Uint8Array | string }) => JSON.parse(typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body)) as unknown;

test("translate_wan_addrs: answers for another datacenter show wan addresses and say so; ours and a disabled agent's are as stored", async () => {
  const on = { enabled: true, datacenter: "dc1" };
  const nodes = await catalogNodesHandler({ rpc, translate: on })(makeRequest("GET", "/v1/catalog/nodes?dc=dc2"));
  assert.equal((body(nodes) as Array<{ Address: string }>)[0]!.Address, "198.51.100.1");
  assert.equal(nodes.headers["X-Consul-Translate-Addresses"], "true");
  const local = await catalogNodesHandler({ rpc, translate: on })(makeRequest("GET", "/v1/catalog/nodes"));
  assert.equal((body(local) as Array<{ Address: string }>)[0]!.Address, "10.2.0.1", "no ?dc: our datacenter, not translated");
  assert.equal(local.headers["X-Consul-Translate-Addresses"], "true", "Consul sets the header whenever the option is on");
  const off = await catalogNodesHandler({ rpc, translate: { enabled: false, datacenter: "dc1" } })(makeRequest("GET", "/v1/catalog/nodes?dc=dc2"));
  assert.equal((body(off) as Array<{ Address: string }>)[0]!.Address, "10.2.0.1");
  assert.equal(off.headers["X-Consul-Translate-Addresses"], undefined);

  const service = body(await catalogServiceHandler({ rpc, translate: on })(makeRequest("GET", "/v1/catalog/service/web?dc=dc2"))) as Array<{ Address: string; ServiceAddress: string }>;
  assert.deepEqual([service[0]!.Address, service[0]!.ServiceAddress], ["198.51.100.1", "198.51.100.5"]);
  const nodeServices = body(await catalogNodeHandler({ rpc, asList: false, translate: on })(makeRequest("GET", "/v1/catalog/node/r1?dc=dc2"))) as { Node: { Address: string } };
  assert.equal(nodeServices.Node.Address, "198.51.100.1");
  const health = body(await healthServiceHandler({ rpc, translate: on })(makeRequest("GET", "/v1/health/service/web?dc=dc2"))) as Array<{ Node: { Address: string }; Service: { Address: string } }>;
  assert.deepEqual([health[0]!.Node.Address, health[0]!.Service.Address], ["198.51.100.1", ""], "a service without a wan address keeps its own (empty: the node's)");
});
