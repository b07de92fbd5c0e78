import assert from "node:assert/strict";
import { test } from "node:test";
import { testBackends } from "../core/http/_test_env.ts";
import { createRoutes } from "../core/http/routes.ts";
import { makeRequest } from "../core/http/types.ts";
import { createLocalRpc } from "../core/rpc/local.ts";
import { createDevServer } from "../core/server/dev.ts";
import { Rng } from "../core/sim/rng.ts";
import { SimClock } from "../core/sim/sim_clock.ts";
import { testIo } from "./_testing.ts";
import type { TestIo } from "./_testing.ts";
import { catalogDatacenters } from "./catalog_datacenters.ts";
import { catalogNodes } from "./catalog_nodes.ts";
import { catalogServices } from "./catalog_services.ts";

/** A CLI io whose HTTP goes to an in-process dev server with two nodes registered. */
async function world(): Promise<() => TestIo> {
  const dev = await createDevServer({ clock: new SimClock(), rng: new Rng(9) });
  const router = createRoutes(testBackends({ rpc: createLocalRpc(dev.server) }));
  const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const body = init?.body === undefined || init.body === null ? undefined : String(init.body);
    const r = await router.handle(makeRequest(init?.method ?? "GET", url.pathname + url.search, body === undefined ? {} : { body }));
    return new Response(typeof r.body === "string" ? r.body : r.body.slice(), { status: r.status, headers: r.headers });
  }) as typeof fetch;
  const reg = (body: unknown) => router.handle(makeRequest("PUT", "/v1/catalog/register", { body: JSON.stringify(body) }));
  await reg({
    ID: "1b662d97-8b5c-3cc2-0ac0-96f55ad423b5", Node: "worker-01", Address: "10.4.5.31",
    TaggedAddresses: { lan: "10.4.5.31", wan: "10.4.5.31" }, NodeMeta: { rack: "r1" },
    Service: { Service: "web", Tags: ["v1", "primary"], Port: 80 },
  });
  await reg({ ID: "9ffd5c38-4a3e-4e2b-a4cb-3c0ee1e0f2a1", Node: "worker-02", Address: "10.4.5.32", Service: { Service: "db", Port: 5432 } });
  await reg({ Node: "worker-02", Address: "10.4.5.32", Service: { Service: "web", ID: "web-2", Tags: ["v2"], Port: 81 } });
  return () => {
    const io = testIo();
    (io as { fetch: typeof fetch }).fetch = fetchFn;
    return io;
  };
}

test("cli catalog datacenters / nodes / services print Consul's tables", async () => {
  const mk = await world();
  let io = mk();
  assert.equal(await catalogDatacenters.run([], io), 0);
  assert.equal(io.stdoutText, "dc1\n");

  io = mk();
  assert.equal(await catalogNodes.run([], io), 0);
  assert.equal(io.stdoutText, [
    "Node       ID        Address    DC",
    "worker-01  1b662d97  10.4.5.31  dc1",
    "worker-02  9ffd5c38  10.4.5.32  dc1",
    "",
  ].join("\n"));

  io = mk();
  assert.equal(await catalogNodes.run(["-detailed", "-node-meta", "rack=r1"], io), 0);
  assert.equal(io.stdoutText, [
    "Node       ID                                    Address    DC   TaggedAddresses               Meta",
    "worker-01  1b662d97-8b5c-3cc2-0ac0-96f55ad423b5  10.4.5.31  dc1  lan=10.4.5.31, wan=10.4.5.31  rack=r1",
    "",
  ].join("\n"));

  io = mk();
  assert.equal(await catalogNodes.run(["-service=db"], io), 0);
  assert.match(io.stdoutText, /^Node\s+ID\s+Address\s+DC\nworker-02 /);

  io = mk();
  assert.equal(await catalogNodes.run(["-filter", 'Node == "worker-02"'], io), 0);
  assert.equal(io.stdoutText.split("\n").length, 3);

  io = mk();
  assert.equal(await catalogNodes.run(["-node-meta=rack=none"], io), 0);
  assert.equal(io.stderrText, "No nodes match the given query - try expanding your search.\n");

  io = mk();
  assert.equal(await catalogNodes.run(["-filter", "Node =="], io), 1);
  assert.match(io.stderrText, /^Error listing nodes: Unexpected response code: 400 \(Failed to create boolean expression evaluator: 1:8/);

  io = mk();
  assert.equal(await catalogNodes.run(["-near=_agent"], io), 0, io.stderrText);
  assert.equal(io.stdoutText.split("\n").length, 4);

  io = mk();
  assert.equal(await catalogServices.run([], io), 0);
  assert.equal(io.stdoutText, "db\nweb\n");

  io = mk();
  assert.equal(await catalogServices.run(["-tags"], io), 0);
  assert.equal(io.stdoutText, "db\nweb  primary,v1,v2\n");

  io = mk();
  assert.equal(await catalogServices.run(["-node=worker-01", "-tags"], io), 0);
  assert.equal(io.stdoutText, "web  primary,v1\n");

  io = mk();
  assert.equal(await catalogServices.run(["-node-meta", "rack=r1"], io), 0);
  assert.equal(io.stdoutText, "web\n");

  io = mk();
  assert.equal(await catalogServices.run(["-node-meta", "nonsense"], io), 1);
  assert.match(io.stderrText, /expected key=value/);

  io = mk();
  assert.equal(await catalogServices.run(["extra"], io), 1);
});
