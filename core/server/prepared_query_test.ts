import assert from "node:assert/strict";
import { test } from "node:test";
import { BadRequestError, NotFoundError } from "../errors.ts";
import type { Coordinate } from "../gossip/coordinate.ts";
import { createLocalRpc } from "../rpc/local.ts";
import type { CheckStatus, PreparedQueryExecuteArgs } from "../rpc/methods.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { queryBody } from "../state/_prepared_query_fixture.ts";
import { createDevServer } from "./dev.ts";
import { q } from "./_test_query.ts";

const at = (x: number): Coordinate => ({ vec: [x, 0, 0, 0, 0, 0, 0, 0], error: 0.1, adjustment: 0, height: 0 });

async function world(seed = 3) {
  const clock = new SimClock();
  const coords = [
    { node: "n1", coord: at(0) },
    { node: "n2", coord: at(0.05) },
    { node: "n3", coord: at(0.01) },
    { node: "n4", coord: at(0.02) },
  ];
  const d = await createDevServer({ clock, rng: new Rng(seed), coordinates: () => coords });
  const rpc = createLocalRpc(d.server);
  const reg = async (node: string, meta: Record<string, string>, tags: string[], statuses: Array<[string, CheckStatus]>, serviceMeta: Record<string, string> = {}) => {
    await rpc.call("Catalog.Register", {
      node,
      address: `10.0.0.${node.slice(1)}`,
      nodeMeta: meta,
      service: { service: "web", tags, port: 80, meta: serviceMeta },
      checks: statuses.map(([checkId, status]) => ({ name: checkId, checkId, status, serviceId: "web" })),
    });
  };
  await reg("n1", { zone: "a" }, ["Primary", "v1"], [["ok", "passing"]], { ver: "1" });
  await reg("n2", { zone: "a" }, ["v1"], [["warn", "warning"]], { ver: "2" });
  await reg("n3", { zone: "b" }, ["v1", "canary"], [["ok", "passing"], ["flaky", "critical"]]);
  await reg("n4", { zone: "b" }, ["v2"], [["ok", "passing"]], { ver: "1" });
  const exec = (idOrName: string, over: Partial<PreparedQueryExecuteArgs> = {}) =>
    rpc.call("PreparedQuery.Execute", { queryIdOrName: idOrName, agent: { node: "n1", datacenter: "dc1" }, query: q(), ...over });
  const nodesOf = async (idOrName: string, over: Partial<PreparedQueryExecuteArgs> = {}) =>
    (await exec(idOrName, over)).nodes.map((n) => n.node.node).sort();
  return { rpc, exec, nodesOf, ...d };
}

test("PreparedQuery.Apply: create picks a UUID from the Rng; update and delete need an existing query; bad queries are 400s with Consul's words", async () => {
  const { rpc, fsm } = await world();
  const { id, index } = await rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name: "web" }) });
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(fsm.state.tables.prepared_queries.get(id)!.createIndex, index);
  const bad = async (query: ReturnType<typeof queryBody>, re: RegExp, op: "create" | "update" = "create") =>
    await assert.rejects(rpc.call("PreparedQuery.Apply", { op, query }), (e: unknown) => e instanceof BadRequestError && re.test(e.message), String(re));
  await bad(queryBody({ name: "x", service: { service: "" } }), /^Invalid prepared query: Must provide a Service name to query$/);
  await bad(queryBody({}), /Must be bound to a session/);
  await bad(queryBody({ name: "x", token: "<hidden>" }), /it looks like a query definition with a redacted token was submitted/);
  await bad(queryBody({ name: "x", service: { failover: { nearestN: -1, datacenters: [] } } }), /Bad NearestN '-1', must be >= 0/);
  await bad(queryBody({ name: "x", dns: { ttl: "soon" } }), /Bad DNS TTL 'soon'/);
  await bad(queryBody({ name: "x", dns: { ttl: "-1s" } }), /DNS TTL '-1s', must be >=0/);
  await bad(queryBody({ name: "x", service: { nodeMeta: { "bad key": "v" } } }), /Key contains invalid characters/);
  await bad(queryBody({ id, name: "x" }), /ID must be empty when creating a new prepared query/);
  await bad(queryBody({ name: "WEB" }), /name 'WEB' aliases an existing query name/);
  await bad(queryBody({ name: "x", session: "nope" }), /invalid session "nope"/);
  await bad(queryBody({ name: "t", template: { type: "name_prefix_match", regexp: "(" } }), /failed compiling template: Bad Regexp/);
  await assert.rejects(rpc.call("PreparedQuery.Apply", { op: "update", query: queryBody({ id: "33333333-3333-4333-8333-333333333333", name: "y" }) }), (e: unknown) =>
    e instanceof NotFoundError && /Cannot modify non-existent prepared query: '3333/.test(e.message));
  await assert.rejects(rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name: "z" }), datacenter: "dc9" }), /No path to datacenter/);
  assert.equal(fsm.state.tables.prepared_queries.size, 1, "nothing refused was stored");
  await rpc.call("PreparedQuery.Apply", { op: "update", query: queryBody({ id, name: "web2", service: { service: "api" } }) });
  const got = await rpc.call("PreparedQuery.Get", { queryId: id, query: q() });
  assert.deepEqual(got.queries.map((x) => [x.name, x.service.service]), [["web2", "api"]]);
  assert.equal((await rpc.call("PreparedQuery.List", { query: q() })).queries.length, 1);
  assert.equal((await rpc.call("PreparedQuery.List", { query: q(), filter: `Name == "nope"` })).queries.length, 0);
  await rpc.call("PreparedQuery.Apply", { op: "delete", query: queryBody({ id }) });
  await assert.rejects(rpc.call("PreparedQuery.Get", { queryId: id, query: q() }), (e: unknown) => e instanceof NotFoundError && e.message === "Query not found");
  await assert.rejects(rpc.call("PreparedQuery.Apply", { op: "delete", query: queryBody({ id }) }), NotFoundError);
});

test("PreparedQuery.Execute: drops critical (and with OnlyPassing warning) instances, honours IgnoreCheckIDs, tags, node and service meta", async () => {
  const { rpc, nodesOf, exec } = await world();
  const create = async (name: string, service: Partial<ReturnType<typeof queryBody>["service"]>, dns = "") =>
    await rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name, service, dns: { ttl: dns } }) });
  await create("all", {}, "7s");
  await create("passing", { onlyPassing: true });
  await create("ignore", { ignoreCheckIds: ["flaky"] });
  await create("tags", { tags: ["PRIMARY", "v1"] });
  await create("nottag", { tags: ["v1", "!canary"] });
  await create("meta", { nodeMeta: { zone: "a" }, serviceMeta: { ver: "1" } });
  assert.deepEqual(await nodesOf("all"), ["n1", "n2", "n4"]);
  assert.deepEqual(await nodesOf("passing"), ["n1", "n4"]);
  assert.deepEqual(await nodesOf("ignore"), ["n1", "n2", "n3", "n4"]);
  assert.deepEqual(await nodesOf("tags"), ["n1"]);
  assert.deepEqual(await nodesOf("nottag"), ["n1", "n2"]);
  assert.deepEqual(await nodesOf("meta"), ["n1"]);
  const r = await exec("all", { limit: 2 });
  assert.equal(r.nodes.length, 2);
  assert.deepEqual([r.service, r.dns.ttl, r.datacenter, r.failovers], ["web", "7s", "dc1", 0]);
  await assert.rejects(exec("nothing"), (e: unknown) => e instanceof NotFoundError && e.message === "Query not found");
  await assert.rejects(exec("all", { query: { ...q(), datacenter: "dc2" } }), /No path to datacenter/);
});

test("PreparedQuery.Execute: shuffles with the server's Rng, sorts by RTT from ?near or the query's Near (_agent = the asking agent)", async () => {
  const { rpc, exec } = await world();
  await rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name: "ign", service: { ignoreCheckIds: ["flaky", "warn"] } }) });
  await rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name: "near", service: { ignoreCheckIds: ["flaky", "warn"], near: "_agent" } }) });
  const orders = new Set<string>();
  for (let i = 0; i < 20; i++) orders.add((await exec("ign")).nodes.map((n) => n.node.node).join(","));
  assert.ok(orders.size > 1, "shuffled");
  const order = async (name: string, over: Partial<PreparedQueryExecuteArgs> = {}) => (await exec(name, over)).nodes.map((n) => n.node.node);
  assert.deepEqual(await order("near"), ["n1", "n3", "n4", "n2"]);
  assert.deepEqual(await order("near", { agent: { node: "n2", datacenter: "dc1" } }), ["n2", "n4", "n3", "n1"]);
  assert.deepEqual(await order("ign", { near: "n4" }), ["n4", "n3", "n1", "n2"]);
  assert.deepEqual(await order("near", { limit: 2 }), ["n1", "n3"]);
});

test("PreparedQuery.Explain renders a template for the name; a template by ID is refused", async () => {
  const { rpc, nodesOf } = await world();
  const { id } = await rpc.call("PreparedQuery.Apply", {
    op: "create",
    query: queryBody({ name: "svc-", template: { type: "name_prefix_match", regexp: "^svc-(.+)$" }, service: { service: "${match(1)}", onlyPassing: true } }),
  });
  const args = (name: string): PreparedQueryExecuteArgs => ({ queryIdOrName: name, agent: { node: "n1", datacenter: "dc1" }, query: q() });
  const r = await rpc.call("PreparedQuery.Explain", args("svc-web"));
  assert.equal(r.query.service.service, "web");
  assert.equal(r.query.id, id);
  assert.deepEqual(await nodesOf("svc-web"), ["n1", "n4"]);
  await assert.rejects(rpc.call("PreparedQuery.Explain", args(id)), (e: unknown) => e instanceof BadRequestError && /can only be resolved up by name/.test(e.message));
});
