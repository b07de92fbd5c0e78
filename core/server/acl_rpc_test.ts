// The servers' own ACL checks of session renew, coordinates, prepared
// queries and operator calls (the HTTP edge checks too, but a server never
// takes an agent's word): a denied token gets Consul's 403 text.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AclNotFoundError, PermissionDeniedError } from "../errors.ts";
import { createLocalRpc } from "../rpc/local.ts";
import { operatorRaftMethods, type Rpc } from "../rpc/methods.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { queryBody } from "../state/_prepared_query_fixture.ts";
import { createDevServer } from "./dev.ts";
import { q } from "./_test_query.ts";

const root = "11111111-2222-3333-4444-555555555555";

async function aclServer() {
  let n = 0;
  const d = await createDevServer({
    clock: new SimClock(),
    rng: new Rng(7),
    acl: { enabled: true, defaultPolicy: "deny", initialManagement: root, uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}` },
  });
  await d.server.initializeAcls();
  const rpc = createLocalRpc(d.server);
  for (const [node, service] of [["n1", "web"], ["n2", "db"]] as const) {
    await rpc.call("Catalog.Register", { node, address: `10.0.0.${node.slice(1)}`, service: { service, port: 80 }, token: root });
  }
  return { ...d, rpc };
}

let policies = 0;

/** A token holding `rules`: its secret and accessor. */
async function tokenWith(rpc: Rpc, rules: string): Promise<{ secret: string; accessor: string }> {
  const name = `policy-${++policies}`;
  await rpc.call("ACL.Write", { kind: "policy", op: "create", item: { name, rules }, token: root });
  const t = await rpc.call("ACL.Write", { kind: "token", op: "create", item: { policies: [{ name }] }, token: root });
  return { secret: t.item!.secretId as string, accessor: t.item!.accessorId as string };
}

/** Rejects with PermissionDeniedError whose message is exactly `text`. */
async function denied(p: Promise<unknown>, text: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof PermissionDeniedError && e.message === text);
}

test("acl rpc: Session.Renew needs session:write on the session's node", async () => {
  const { rpc } = await aclServer();
  const { id } = await rpc.call("Session.Apply", { op: "create", session: { node: "n1", nodeChecks: [] }, token: root });
  const reader = await tokenWith(rpc, `session_prefix "" { policy = "read" }`);
  await denied(rpc.call("Session.Renew", { sessionId: id, token: reader.secret }), `Permission denied: token with AccessorID '${reader.accessor}' lacks permission 'session:write' on "n1"`);
  await assert.rejects(rpc.call("Session.Renew", { sessionId: id, token: "no-such-secret" }), AclNotFoundError);
  const writer = await tokenWith(rpc, `session "n1" { policy = "write" }`);
  assert.deepEqual((await rpc.call("Session.Renew", { sessionId: id, token: writer.secret })).sessions.map((s) => s.id), [id]);
  // An unknown session is the endpoint's answer (empty), not a refusal.
  assert.deepEqual((await rpc.call("Session.Renew", { sessionId: "00000000-0000-4000-8000-0000000000ff", token: reader.secret })).sessions, []);
});

test("acl rpc: coordinate updates need node:write, a node's coordinates node:read, and the listing is filtered", async () => {
  const { rpc, server } = await aclServer();
  const coord = { vec: [0, 0, 0, 0, 0, 0, 0, 0], error: 1.5, adjustment: 0, height: 1e-5 };
  const n1 = await tokenWith(rpc, `node "n1" { policy = "write" }`);
  await denied(rpc.call("Coordinate.Update", { node: "n2", coord, token: n1.secret }), `Permission denied: token with AccessorID '${n1.accessor}' lacks permission 'node:write' on "n2"`);
  assert.deepEqual(await rpc.call("Coordinate.Update", { node: "n1", coord, token: n1.secret }), {});
  await rpc.call("Coordinate.Update", { node: "n2", coord, token: root });
  await server.coordinateBatcher.flush();
  await denied(rpc.call("Coordinate.Node", { node: "n2", query: { ...q(), token: n1.secret } }), `Permission denied: token with AccessorID '${n1.accessor}' lacks permission 'node:read' on "n2"`);
  await rpc.call("Coordinate.Node", { node: "n1", query: { ...q(), token: n1.secret } });
  const all = await rpc.call("Coordinate.ListNodes", { query: { ...q(), token: root } });
  assert.deepEqual([all.coordinates.map((c) => c.node).sort(), all.meta.resultsFilteredByAcls], [["n1", "n2"], undefined]);
  const mine = await rpc.call("Coordinate.ListNodes", { query: { ...q(), token: n1.secret } });
  assert.deepEqual([mine.coordinates.map((c) => c.node), mine.meta.resultsFilteredByAcls], [["n1"], true]);
});

test("acl rpc: prepared queries: query:write on the name given and the name stored, read to see, tokens hidden, bare Permission denied", async () => {
  const { rpc } = await aclServer();
  const app = await tokenWith(rpc, `query_prefix "app-" { policy = "write" }\nservice_prefix "" { policy = "read" }\nnode "n1" { policy = "read" }`);
  const mine = await rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name: "app-web", token: "query-secret" }), token: app.secret });
  await denied(rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name: "db" }), token: app.secret }), "Permission denied");
  const theirs = await rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ name: "db", service: { service: "db" } }), token: root });
  // Renaming someone else's query into my prefix needs write on its present name too.
  await denied(rpc.call("PreparedQuery.Apply", { op: "update", query: queryBody({ id: theirs.id, name: "app-db" }), token: app.secret }), "Permission denied");
  await denied(rpc.call("PreparedQuery.Apply", { op: "delete", query: queryBody({ id: theirs.id }), token: app.secret }), "Permission denied");
  await denied(rpc.call("PreparedQuery.Get", { queryId: theirs.id, query: { ...q(), token: app.secret } }), "Permission denied");
  await denied(rpc.call("PreparedQuery.Explain", { queryIdOrName: "db", agent: { node: "n1", datacenter: "dc1" }, query: { ...q(), token: app.secret } }), "Permission denied");

  const got = await rpc.call("PreparedQuery.Get", { queryId: mine.id, query: { ...q(), token: app.secret } });
  assert.equal(got.queries[0]!.token, "<hidden>");
  assert.equal((await rpc.call("PreparedQuery.Get", { queryId: mine.id, query: { ...q(), token: root } })).queries[0]!.token, "query-secret");
  const listed = await rpc.call("PreparedQuery.List", { query: { ...q(), token: app.secret } });
  assert.deepEqual([listed.queries.map((x) => [x.name, x.token]), listed.meta.resultsFilteredByAcls], [[["app-web", "<hidden>"]], true]);
  const everything = await rpc.call("PreparedQuery.List", { query: { ...q(), token: root } });
  assert.deepEqual([everything.queries.map((x) => x.name).sort(), everything.meta.resultsFilteredByAcls], [["app-web", "db"], undefined]);

  // Executing needs no query rule; the instances are those the token may read.
  const run = (idOrName: string, token: string) => rpc.call("PreparedQuery.Execute", { queryIdOrName: idOrName, agent: { node: "n1", datacenter: "dc1" }, query: { ...q(), token } });
  assert.deepEqual((await run("db", app.secret)).nodes, []);
  assert.deepEqual((await run("db", root)).nodes.map((n) => n.node.node), ["n2"]);
  await assert.rejects(run("db", "no-such-secret"), AclNotFoundError);
  // A query's own token, when it has one, decides what its results show.
  await rpc.call("PreparedQuery.Apply", { op: "update", query: queryBody({ id: theirs.id, name: "db", service: { service: "db" }, token: app.secret }), token: root });
  assert.deepEqual((await run("db", root)).nodes, []);
});

test("acl rpc: an unnamed query is anyone's who has its ID and never listed but to management", async () => {
  const { rpc } = await aclServer();
  const nobody = await tokenWith(rpc, `session_prefix "" { policy = "write" }`);
  const { id: session } = await rpc.call("Session.Apply", { op: "create", session: { node: "n1", nodeChecks: [] }, token: root });
  const { id } = await rpc.call("PreparedQuery.Apply", { op: "create", query: queryBody({ session }), token: nobody.secret });
  assert.equal((await rpc.call("PreparedQuery.Get", { queryId: id, query: { ...q(), token: nobody.secret } })).queries[0]!.id, id);
  const listed = await rpc.call("PreparedQuery.List", { query: { ...q(), token: nobody.secret } });
  assert.deepEqual([listed.queries, listed.meta.resultsFilteredByAcls], [[], undefined]);
  assert.equal((await rpc.call("PreparedQuery.List", { query: { ...q(), token: root } })).queries.length, 1);
});

test("acl rpc: operator calls need operator:read to look and operator:write to change", async () => {
  const { rpc, server } = await aclServer();
  const reader = await tokenWith(rpc, `operator = "read"`);
  const none = await tokenWith(rpc, `node_prefix "" { policy = "read" }`);
  server.authorizeOperator(operatorRaftMethods.getConfiguration, { token: reader.secret });
  server.authorizeOperator(operatorRaftMethods.serverHealth, { token: reader.secret });
  assert.throws(() => server.authorizeOperator(operatorRaftMethods.getConfiguration, { token: none.secret }), (e: unknown) =>
    e instanceof PermissionDeniedError && e.message === `Permission denied: token with AccessorID '${none.accessor}' lacks permission 'operator:read'`);
  for (const m of [operatorRaftMethods.removePeer, operatorRaftMethods.transferLeader, operatorRaftMethods.autopilotSetConfiguration]) {
    assert.throws(() => server.authorizeOperator(m, { token: reader.secret }), (e: unknown) =>
      e instanceof PermissionDeniedError && e.message === `Permission denied: token with AccessorID '${reader.accessor}' lacks permission 'operator:write'`, m);
  }
  server.authorizeOperator(operatorRaftMethods.autopilotSetConfiguration, { token: root });
  assert.throws(() => server.authorizeOperator(operatorRaftMethods.getConfiguration, {}), PermissionDeniedError); // anonymous, default deny
  assert.throws(() => server.authorizeOperator(operatorRaftMethods.getConfiguration, { token: "no-such-secret" }), AclNotFoundError);
  server.authorizeOperator("KVS.Get", {}); // not an operator method: the endpoint decides
});

test("acl rpc: a limited token that filters nothing out gets the shared frozen answer itself; one that does gets a copy and the shared one is untouched", async () => {
  const { rpc } = await aclServer();
  await rpc.call("Catalog.Register", { node: "n3", address: "10.0.0.3", service: { service: "web", port: 80 }, token: root });
  const readsAll = await tokenWith(rpc, `service_prefix "" { policy = "read" }\nnode_prefix "" { policy = "read" }`);
  const readsN1 = await tokenWith(rpc, `service_prefix "" { policy = "read" }\nnode "n1" { policy = "read" }`);
  const ask = (token: string) => rpc.call("Health.ServiceNodes", { serviceName: "web", query: { ...q(), token } });
  const shared = await ask(root);
  assert.ok(Object.isFrozen(shared.nodes));
  const all = await ask(readsAll.secret);
  assert.equal(all.nodes, shared.nodes, "the very array, so its one encoding serves every watcher");
  assert.equal(all.meta.resultsFilteredByAcls, undefined);
  const some = await ask(readsN1.secret);
  assert.notEqual(some.nodes, shared.nodes);
  assert.deepEqual([some.nodes.map((n) => n.node.node), some.meta.resultsFilteredByAcls], [["n1"], true]);
  assert.deepEqual(shared.nodes.map((n) => n.node.node).sort(), ["n1", "n3"]);
  const nodes = await rpc.call("Catalog.ServiceNodes", { serviceName: "web", query: { ...q(), token: readsAll.secret } });
  assert.equal(nodes.serviceNodes, (await rpc.call("Catalog.ServiceNodes", { serviceName: "web", query: { ...q(), token: root } })).serviceNodes);
});

test("acl rpc: a service identity (of a token or a role) naming other datacenters grants nothing here", async () => {
  const { rpc } = await aclServer();
  const mk = async (item: Record<string, unknown>) => (await rpc.call("ACL.Write", { kind: "token", op: "create", item, token: root })).item!.secretId as string;
  const register = (token: string) => rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", service: { service: "api", port: 81 }, skipNodeUpdate: true, token });
  assert.ok((await register(await mk({ serviceIdentities: [{ serviceName: "api" }] }))).index > 0);
  assert.ok((await register(await mk({ serviceIdentities: [{ serviceName: "api", datacenters: ["dc1"] }] }))).index > 0);
  await assert.rejects(register(await mk({ serviceIdentities: [{ serviceName: "api", datacenters: ["dc2"] }] })), /lacks permission 'service:write' on "api"/);
  await rpc.call("ACL.Write", { kind: "role", op: "create", item: { name: "api-elsewhere", serviceIdentities: [{ serviceName: "api", datacenters: ["dc2"] }] }, token: root });
  await assert.rejects(register(await mk({ roles: [{ name: "api-elsewhere" }] })), /lacks permission 'service:write' on "api"/);
});

test("acl rpc: reads show a token's and a role's links as they are now: deleted policies and roles left out, renamed ones by their new name", async () => {
  const { rpc } = await aclServer();
  const write = (kind: "policy" | "role" | "token", op: "create" | "update" | "delete", item: Record<string, unknown>, id?: string) =>
    rpc.call("ACL.Write", { kind, op, item, ...(id ? { id } : {}), token: root });
  const p = (await write("policy", "create", { name: "p1", rules: `key_prefix "" { policy = "read" }` })).item!;
  const p2 = (await write("policy", "create", { name: "p2", rules: `node_prefix "" { policy = "read" }` })).item!;
  const r = (await write("role", "create", { name: "r1", policies: [{ name: "p1" }, { name: "p2" }] })).item!;
  const t = (await write("token", "create", { policies: [{ name: "p1" }], roles: [{ name: "r1" }] })).item!;
  const readToken = async () => (await rpc.call("ACL.Read", { kind: "token", op: "get", id: t.accessorId as string, query: { ...q(), token: root } })).items[0]!;
  const readRole = async () => (await rpc.call("ACL.Read", { kind: "role", op: "get", id: r.id as string, query: { ...q(), token: root } })).items[0]!;
  await write("policy", "update", { id: p.id, name: "p1-renamed", rules: `key_prefix "" { policy = "read" }` });
  assert.deepEqual((await readToken()).policies, [{ id: p.id, name: "p1-renamed" }]);
  await write("policy", "delete", {}, p2.id as string);
  assert.deepEqual((await readRole()).policies, [{ id: p.id, name: "p1-renamed" }]);
  await write("role", "delete", {}, r.id as string);
  assert.deepEqual((await readToken()).roles, []);
  const listed = (await rpc.call("ACL.Read", { kind: "token", op: "list", query: { ...q(), token: root } })).items.find((x) => x.accessorId === t.accessorId)!;
  assert.deepEqual([listed.policies, listed.roles], [[{ id: p.id, name: "p1-renamed" }], []]);
});
