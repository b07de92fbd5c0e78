import { test } from "node:test";
import assert from "node:assert/strict";
import type { QueryMeta, QueryOptions, Rpc, RpcArgs, RpcMethod, RpcReply } from "../rpc/methods.ts";
import { createRpcBackend } from "./backend_rpc.ts";
import { makeInstance, makeNode } from "./_fake_backend.ts";

interface Call {
  method: string;
  query?: QueryOptions;
  args: unknown;
}

function fakeRpc(options: { lastContactMs?: number; healthFails?: boolean } = {}) {
  const calls: Call[] = [];
  const n1 = makeNode("n1", "10.0.0.1");
  const n2 = makeNode("n2", "2001:db8::2");
  const web = makeInstance(n1, "web", { address: "10.0.0.50", tags: ["v1"] });
  const meta = (q: QueryOptions): QueryMeta => ({
    index: 42,
    knownLeader: true,
    lastContactMs: q.allowStale ? options.lastContactMs ?? 0 : 0,
    consistencyLevel: q.allowStale ? "stale" : "leader",
  });
  const handlers: Partial<Record<RpcMethod, (args: never) => unknown>> = {
    "Catalog.ListDatacenters": () => ["dc1", "dc2"],
    "Health.ServiceNodes": (a: RpcArgs<"Health.ServiceNodes">) => {
      if (options.healthFails) throw new Error("unimplemented");
      const nodes = a.serviceName === "web" && (!a.serviceTags || a.serviceTags.every((t) => web.service.tags.includes(t))) ? [web] : [];
      return { nodes, meta: meta(a.query) };
    },
    "Catalog.NodeServices": (a: RpcArgs<"Catalog.NodeServices">) => ({
      nodeServices: a.node === "n1" ? { node: n1, services: [web.service] } : null,
      meta: meta(a.query),
    }),
    "Catalog.ListNodes": (a: RpcArgs<"Catalog.ListNodes">) => ({ nodes: [n1, n2], meta: meta(a.query) }),
    "Catalog.ListServices": (a: RpcArgs<"Catalog.ListServices">) => ({ services: { web: ["v1"] }, meta: meta(a.query) }),
    "Catalog.ServiceNodes": (a: RpcArgs<"Catalog.ServiceNodes">) => ({
      serviceNodes: a.serviceName === "web" ? [{ node: web.node, service: web.service }] : [],
      meta: meta(a.query),
    }),
  };
  const rpc: Rpc = {
    async call<M extends RpcMethod>(method: M, args: RpcArgs<M>): Promise<RpcReply<M>> {
      calls.push({ method, query: (args as { query?: QueryOptions }).query, args });
      const h = handlers[method];
      if (!h) throw new Error(`unexpected ${method}`);
      return h(args as never) as RpcReply<M>;
    },
  };
  return { rpc, calls };
}

test("rpc backend: services through Health.ServiceNodes with the tag, stale by default, index passed on", async () => {
  const { rpc, calls } = fakeRpc();
  const b = createRpcBackend({ rpc, datacenter: "dc1", allowStale: true, maxStaleMs: 5_000 });
  const r = await b.serviceInstances({ service: "web", tag: "v1", datacenter: "dc1" });
  assert.equal(r.instances?.length, 1);
  assert.equal(r.index, 42);
  assert.equal(calls.length, 1);
  assert.deepEqual((calls[0]!.args as { serviceTags?: string[] }).serviceTags, ["v1"]);
  assert.equal(calls[0]!.query!.allowStale, true);
  assert.equal(calls[0]!.query!.datacenter, undefined, "the local datacenter is not named");
  const none = await b.serviceInstances({ service: "web", tag: "v9", datacenter: "dc1" });
  assert.deepEqual(none.instances, []);
});

test("rpc backend: a stale answer older than max_stale is asked again of the leader; allow_stale false never reads stale", async () => {
  const old = fakeRpc({ lastContactMs: 60_000 });
  const b = createRpcBackend({ rpc: old.rpc, datacenter: "dc1", allowStale: true, maxStaleMs: 5_000 });
  await b.node({ node: "n1", datacenter: "dc1" });
  assert.deepEqual(old.calls.map((c) => c.query!.allowStale), [true, false]);
  const strict = fakeRpc({ lastContactMs: 60_000 });
  const s = createRpcBackend({ rpc: strict.rpc, datacenter: "dc1", allowStale: false, maxStaleMs: 5_000 });
  const n = await s.node({ node: "n1", datacenter: "dc1" });
  assert.equal(n.node?.address, "10.0.0.1");
  assert.deepEqual(strict.calls.map((c) => c.query!.allowStale), [false]);
});

test("rpc backend: other datacenters are checked against the known list and named in the query", async () => {
  const { rpc, calls } = fakeRpc();
  const b = createRpcBackend({ rpc, datacenter: "dc1", allowStale: true, maxStaleMs: 5_000 });
  assert.deepEqual(await b.serviceInstances({ service: "web", tag: "", datacenter: "dc9" }), { instances: null, index: 0 });
  assert.deepEqual(await b.node({ node: "n1", datacenter: "dc9" }), { node: null, index: 0 });
  await b.serviceInstances({ service: "web", tag: "", datacenter: "dc2" });
  assert.equal(calls.at(-1)!.query!.datacenter, "dc2");
  assert.equal((await b.node({ node: "zz", datacenter: "dc1" })).node, null);
});

test("rpc backend: consul.service falls back to this server when the catalog has none or cannot say", async () => {
  for (const healthFails of [false, true]) {
    const { rpc } = fakeRpc({ healthFails });
    const b = createRpcBackend({ rpc, datacenter: "dc1", allowStale: true, maxStaleMs: 5_000, selfServer: { node: "me", address: "127.0.0.1", port: 8300 } });
    const r = await b.serviceInstances({ service: "consul", tag: "", datacenter: "dc1" });
    assert.deepEqual(r.instances?.map((i) => [i.node.node, i.node.address, i.service.port]), [["me", "127.0.0.1", 8300]], `healthFails=${healthFails}`);
    assert.equal(r.index, 0, "synthesised answers are never cached by index");
  }
  const client = createRpcBackend({ rpc: fakeRpc().rpc, datacenter: "dc1", allowStale: true, maxStaleMs: 5_000 });
  assert.deepEqual((await client.serviceInstances({ service: "consul", tag: "", datacenter: "dc1" })).instances, []);
});

test("rpc backend: reverse finds nodes (IPv6 in any text form), then service addresses", async () => {
  const { rpc } = fakeRpc();
  const b = createRpcBackend({ rpc, datacenter: "dc1", allowStale: true, maxStaleMs: 5_000 });
  assert.deepEqual((await b.reverse({ address: "10.0.0.1" })).nodes.map((n) => n.node), ["n1"]);
  assert.deepEqual((await b.reverse({ address: "2001:db8:0::2" })).nodes.map((n) => n.node), ["n2"]);
  assert.deepEqual(await b.reverse({ address: "10.0.0.50" }), { nodes: [], services: [{ service: "web", datacenter: "dc1" }] });
  assert.deepEqual(await b.reverse({ address: "10.9.9.9" }), { nodes: [], services: [] });
});

test("rpc backend: with cacheMs, repeated lookups within the window reuse the result", async () => {
  const { rpc, calls } = fakeRpc();
  let now = 0;
  const b = createRpcBackend({ rpc, datacenter: "dc1", allowStale: true, maxStaleMs: 5_000, cacheMs: 100, now: () => now });
  await b.serviceInstances({ service: "web", tag: "", datacenter: "dc1" });
  await b.serviceInstances({ service: "web", tag: "", datacenter: "dc1" });
  assert.equal(calls.length, 1);
  now = 150;
  await b.serviceInstances({ service: "web", tag: "", datacenter: "dc1" });
  assert.equal(calls.length, 2);
});
