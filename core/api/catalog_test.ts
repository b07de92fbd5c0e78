import assert from "node:assert/strict";
import { test } from "node:test";
import { testBackends } from "../http/_test_env.ts";
import { createRoutes } from "../http/routes.ts";
import { makeRequest } from "../http/types.ts";
import { createLocalRpc } from "../rpc/local.ts";
import { createDevServer } from "../server/dev.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { ApiClient } from "./client.ts";

/** An ApiClient whose fetch goes straight to the route table of an in-process dev server. */
export async function inProcessClient(): Promise<ApiClient> {
  const dev = await createDevServer({ clock: new SimClock(), rng: new Rng(5) });
  const router = createRoutes(testBackends({ rpc: createLocalRpc(dev.server) }));
  const fakeFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(String(input));
    const body = init?.body === undefined || init.body === null ? undefined : String(init.body);
    const r = await router.handle(makeRequest(init?.method ?? "GET", url.pathname + url.search, body === undefined ? {} : { body }));
    return new Response(typeof r.body === "string" ? r.body : r.body.slice(), { status: r.status, headers: r.headers });
  };
  return new ApiClient({ fetch: fakeFetch as typeof fetch });
}

test("api: catalog, health and session clients against an in-process agent", async () => {
  const c = await inProcessClient();
  await c.catalog.register({
    Node: "node-a", Address: "127.0.0.1", NodeMeta: { rack: "r1" },
    Service: { Service: "web", Tags: ["v1"], Port: 80 },
    Checks: [{ CheckID: "serfHealth", Name: "Serf Health Status", Status: "passing" }, { Name: "web", ServiceID: "web", Status: "passing" }],
  });
  await c.catalog.register({ Node: "node-b", Address: "127.0.0.2", Service: { Service: "web", Tags: ["v2"], Port: 81 } });
  assert.deepEqual(await c.catalog.datacenters(), ["dc1"]);
  assert.deepEqual((await c.catalog.nodes()).nodes.map((n) => n.Node), ["node-a", "node-b"]);
  assert.deepEqual((await c.catalog.nodes({ nodeMeta: { rack: "r1" } })).nodes.map((n) => n.Node), ["node-a"]);
  assert.deepEqual((await c.catalog.services()).services, { web: ["v1", "v2"] });
  assert.deepEqual((await c.catalog.service("web", { tags: ["v2"] })).services.map((s) => s.Node), ["node-b"]);
  assert.deepEqual((await c.catalog.service("web", { filter: "ServicePort == 80" })).services.map((s) => s.Node), ["node-a"]);
  assert.equal((await c.catalog.node("node-a")).node?.Services.web?.Port, 80);
  assert.equal((await c.catalog.node("nope")).node, null);
  assert.deepEqual((await c.health.service("web", { passingOnly: true })).entries.map((e) => e.Node.Node), ["node-a", "node-b"], "no checks counts as passing");
  assert.equal((await c.health.state("critical")).checks.length, 0);
  assert.equal((await c.health.node("node-a")).checks.length, 2);
  assert.equal((await c.health.checks("web")).checks.length, 1);
  const id = await c.session.create({ Name: "lock", TTL: "15s" });
  assert.equal((await c.session.info(id)).session?.Name, "lock");
  assert.equal((await c.session.renew(id))?.ID, id);
  assert.equal((await c.session.node("node-a")).sessions.length, 1);
  await c.session.destroy(id);
  assert.equal(await c.session.renew(id), null);
  assert.equal((await c.session.list()).sessions.length, 0);
  await c.catalog.deregister({ Node: "node-b" });
  assert.deepEqual((await c.catalog.nodes()).nodes.map((n) => n.Node), ["node-a"]);
});
