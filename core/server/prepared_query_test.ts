import assert from "node:assert/strict";
import { test } from "node:test";
import { BadRequestError, DcUnavailableError, NotFoundError } from "../errors.ts";
import type { Coordinate } from "../gossip/coordinate.ts";
import { createLocalRpc } from "../rpc/local.ts";
import type { CheckStatus, PreparedQueryExecuteArgs, Rpc } from "../rpc/methods.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { queryBody } from "../state/_prepared_query_fixture.ts";
import { createDevServer } from "./dev.ts";
import { failoverTargets } from "./prepared_query.ts";
import { Server } from "./server.ts";
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

test("failover targets: the NearestN others by RTT, then the listed datacenters the WAN pool knows, each once", () => {
  const nearest = ["dc2", "dc3", "dc4"];
  assert.deepEqual(failoverTargets({ nearestN: 0, datacenters: [] }, nearest), []);
  assert.deepEqual(failoverTargets({ nearestN: 2, datacenters: [] }, nearest), ["dc2", "dc3"]);
  assert.deepEqual(failoverTargets({ nearestN: 9, datacenters: [] }, nearest), nearest);
  assert.deepEqual(failoverTargets({ nearestN: 1, datacenters: ["dc4", "dc2", "nowhere", "dc3"] }, nearest), ["dc2", "dc4", "dc3"]);
  assert.deepEqual(failoverTargets({ nearestN: 0, datacenters: ["dc1", "dc3"] }, nearest), ["dc3"], "ours (not among the others) and unknown ones are skipped");
});

test("PreparedQuery.Execute: no healthy instance here fails over to other datacenters in order; a failing one is counted and skipped", async () => {
  const clock = new SimClock();
  const dc1 = await createDevServer({ clock, rng: new Rng(5), datacenter: "dc1" });
  const dc2 = await createDevServer({ clock, rng: new Rng(6), datacenter: "dc2" });
  const dc2Rpc = createLocalRpc(dc2.server);
  await dc2Rpc.call("Catalog.Register", { node: "r1", address: "10.2.0.1", service: { service: "web", tags: ["v1"], port: 80 } });
  await dc2Rpc.call("Catalog.Register", { node: "r2", address: "10.2.0.2", service: { service: "web", tags: ["v1"], port: 80 } });
  const asked: string[] = [];
  const remote: Rpc = {
    call: ((method: string, args: { query: { datacenter?: string } }) => {
      const dc = args.query.datacenter ?? "";
      asked.push(`${method}@${dc}`);
      if (dc === "dc2") return dc2Rpc.call(method as "PreparedQuery.ExecuteRemote", args as never);
      return Promise.reject(new DcUnavailableError(dc));
    }) as Rpc["call"],
  };
  let dcs = ["dc1", "dc3", "dc2"];
  const server = new Server({ fsm: dc1.fsm, consensus: dc1.consensus, clock, rng: new Rng(7), datacenter: "dc1", datacenters: () => dcs, remote: () => remote });
  const rpc = createLocalRpc(server);
  let made = 0;
  const create = async (failover: { nearestN: number; datacenters: string[] }) =>
    (await rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name: `web-${++made}`, service: { service: "web", tags: ["v1"], failover } }) })).id;
  const exec = (id: string, limit?: number) => rpc.call("PreparedQuery.Execute", { queryIdOrName: id, limit, agent: { node: "n1", datacenter: "dc1" }, query: q() });

  const none = await exec(await create({ nearestN: 0, datacenters: [] }));
  assert.deepEqual([none.nodes.length, none.failovers, none.datacenter], [0, 0, "dc1"], "no failover configured");
  assert.deepEqual(asked, []);

  const nearest = await exec(await create({ nearestN: 2, datacenters: [] }), 1);
  assert.deepEqual(asked, ["PreparedQuery.ExecuteRemote@dc3", "PreparedQuery.ExecuteRemote@dc2"], "nearest first; the unreachable one is skipped");
  assert.equal(nearest.failovers, 2);
  assert.equal(nearest.datacenter, "dc2");
  assert.equal(nearest.nodes.length, 1, "the limit travels");
  assert.equal(nearest.nodes[0]!.node.datacenter, "dc2");

  asked.length = 0;
  dcs = ["dc1", "dc2", "dc3"];
  const listed = await exec(await create({ nearestN: 0, datacenters: ["nowhere", "dc2", "dc3"] }));
  assert.deepEqual(asked, ["PreparedQuery.ExecuteRemote@dc2"], "stops at the first datacenter with instances; unknown ones are skipped");
  assert.deepEqual([listed.failovers, listed.datacenter, listed.nodes.map((n) => n.node.node).sort()], [1, "dc2", ["r1", "r2"]]);

  // Instances here: no failover at all.
  await createLocalRpc(dc1.server).call("Catalog.Register", { node: "l1", address: "10.1.0.1", service: { service: "web", tags: ["v1"], port: 80 } });
  asked.length = 0;
  const local = await exec(await create({ nearestN: 3, datacenters: [] }));
  assert.deepEqual([local.failovers, local.datacenter, asked], [0, "dc1", []]);
  await dc1.stop();
  await dc2.stop();
});
