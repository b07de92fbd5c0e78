import assert from "node:assert/strict";
import { test } from "node:test";
import { AclDisabledError, AclNotFoundError, BadRequestError, PermissionDeniedError } from "../errors.ts";
import { createLocalRpc } from "../rpc/local.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { StateStore } from "../state/store.ts";
import type { AclServerConfig } from "./acl.ts";
import { createDevServer } from "./dev.ts";
import { q } from "./_test_query.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

function uuids(): () => string {
  let n = 0;
  return () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`;
}

async function aclServer(acl: Partial<AclServerConfig> = {}) {
  const clock = new SimClock();
  let reset: number | undefined;
  const d = await createDevServer({
    clock,
    rng: new Rng(1),
    acl: {
      enabled: true,
      defaultPolicy: "deny",
      uuid: uuids(),
      readBootstrapReset: () => reset,
      clearBootstrapReset: () => { reset = undefined; },
      ...acl,
    },
  });
  await d.server.initializeAcls();
  return { clock, ...d, rpc: createLocalRpc(d.server), setReset: (n: number | undefined) => { reset = n; } };
}

test("acl server: bootstrap once, then Consul's refusal; the reset index allows it once more", async () => {
  const { rpc, setReset, fsm } = await aclServer();
  const t = await rpc.call("ACL.Bootstrap", {});
  assert.equal(t.description, "Bootstrap Token (Global Management)");
  assert.deepEqual(t.policies, [{ id: "00000000-0000-0000-0000-000000000001", name: "global-management" }]);
  const resetIndex = fsm.state.tables.acl_meta.get("bootstrap")!.modifyIndex;
  await assert.rejects(rpc.call("ACL.Bootstrap", {}), (e) => e instanceof PermissionDeniedError && e.message === `Permission denied: ACL bootstrap no longer allowed (reset index: ${resetIndex})`);
  setReset(resetIndex + 7);
  await assert.rejects(rpc.call("ACL.Bootstrap", {}), (e) => e instanceof BadRequestError && e.message === `Invalid bootstrap reset index (specified ${resetIndex + 7}, reset index: ${resetIndex})`);
  setReset(resetIndex);
  const again = await rpc.call("ACL.Bootstrap", {});
  assert.notEqual(again.secretId, t.secretId);
  await assert.rejects(rpc.call("ACL.Bootstrap", {}), PermissionDeniedError);
});

test("acl server: a key_prefix token writes under its prefix only; unknown secret is ACL not found", async () => {
  const { rpc } = await aclServer({ initialManagement: "11111111-2222-3333-4444-555555555555" });
  const root = "11111111-2222-3333-4444-555555555555";
  await assert.rejects(rpc.call("ACL.Bootstrap", {}), PermissionDeniedError); // initial_management counts as the bootstrap
  const p = await rpc.call("ACL.Write", { kind: "policy", op: "create", item: { name: "app", rules: `key_prefix "app/" { policy = "write" }` }, token: root });
  const tok = await rpc.call("ACL.Write", { kind: "token", op: "create", item: { description: "app writer", policies: [{ name: "app" }] }, token: root });
  assert.deepEqual((tok.item!.policies as unknown[]), [{ id: p.item!.id, name: "app" }]);
  const secret = tok.item!.secretId as string;
  assert.equal((await rpc.call("KVS.Apply", { op: "set", entry: { key: "app/x", value: bytes("1") }, token: secret })).ok, true);
  await assert.rejects(
    rpc.call("KVS.Apply", { op: "set", entry: { key: "other", value: bytes("1") }, token: secret }),
    (e) => e instanceof PermissionDeniedError && e.message === `Permission denied: token with AccessorID '${tok.item!.accessorId as string}' lacks permission 'key:write' on "other"`,
  );
  await assert.rejects(rpc.call("KVS.Apply", { op: "set", entry: { key: "app/x", value: bytes("1") } }), /AccessorID '00000000-0000-0000-0000-000000000002' lacks permission 'key:write'/);
  await assert.rejects(rpc.call("KVS.Apply", { op: "set", entry: { key: "app/x", value: bytes("1") }, token: "nope" }), AclNotFoundError);
  // Lists are filtered, and say so.
  await rpc.call("KVS.Apply", { op: "set", entry: { key: "b", value: bytes("1") }, token: root });
  const all = await rpc.call("KVS.List", { prefix: "", query: { ...q(), token: root } });
  assert.deepEqual(all.entries.map((e) => e.key), ["app/x", "b", "other"].filter((k) => k !== "other"));
  assert.equal(all.meta.resultsFilteredByAcls, undefined);
  const anon = await rpc.call("KVS.List", { prefix: "", query: q() });
  assert.deepEqual([anon.entries.length, anon.meta.resultsFilteredByAcls], [0, true]);
  const keys = await rpc.call("KVS.ListKeys", { prefix: "", separator: "", query: { ...q(), token: secret } });
  assert.deepEqual([keys.keys, keys.meta.resultsFilteredByAcls], [["app/x"], true]);
  // Token management needs acl:write; the token itself may read itself.
  await assert.rejects(rpc.call("ACL.Write", { kind: "policy", op: "create", item: { name: "x", rules: "" }, token: secret }), /lacks permission 'acl:write'/);
  const self = await rpc.call("ACL.Read", { kind: "token", op: "self", query: { ...q(), token: secret } });
  assert.equal(self.items[0]!.secretId, secret);
  const listed = await rpc.call("ACL.Read", { kind: "token", op: "list", query: { ...q(), token: root } });
  assert.deepEqual(listed.items.map((t) => t.description).sort(), ["Anonymous Token", "Initial Management Token", "app writer"]);
  const resolved = await rpc.call("ACL.Resolve", { secret });
  assert.deepEqual(resolved, { accessorId: tok.item!.accessorId, rules: [`key_prefix "app/" { policy = "write" }`], defaultAllow: false });
});

test("acl server: bad rules, duplicate names and builtin protections are refused", async () => {
  const root = "11111111-2222-3333-4444-555555555555";
  const { rpc } = await aclServer({ initialManagement: root });
  await assert.rejects(rpc.call("ACL.Write", { kind: "policy", op: "create", item: { name: "bad", rules: `key "a" { policy = "sudo" }` }, token: root }), /Invalid Policy: Invalid key policy: "sudo"/);
  await rpc.call("ACL.Write", { kind: "policy", op: "create", item: { name: "dup", rules: "" }, token: root });
  await assert.rejects(rpc.call("ACL.Write", { kind: "policy", op: "create", item: { name: "dup", rules: "" }, token: root }), /A Policy with Name "dup" already exists/);
  await assert.rejects(rpc.call("ACL.Write", { kind: "policy", op: "delete", id: "00000000-0000-0000-0000-000000000001", token: root }), /global-management/);
  await assert.rejects(rpc.call("ACL.Write", { kind: "token", op: "delete", id: "00000000-0000-0000-0000-000000000002", token: root }), /anonymous token/);
});

test("acl server: tokens, policies and the bootstrap row survive a snapshot", async () => {
  const root = "11111111-2222-3333-4444-555555555555";
  const { fsm } = await aclServer({ initialManagement: root });
  const chunks = [...fsm.state.snapshot()];
  const copy = await StateStore.restore((async function* () { for (const c of chunks) yield c; })());
  assert.equal(copy.tables.acl_tokens.size, 2);
  assert.equal(copy.tables.acl_policies.size, 2);
  assert.equal(copy.tables.acl_token_secrets.get(root)?.accessorId !== undefined, true);
  assert.equal(copy.tables.acl_meta.get("bootstrap")?.done, true);
});

test("acl server: ACL endpoints answer ACL support disabled when ACLs are off", async () => {
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(1) });
  const rpc = createLocalRpc(d.server);
  await assert.rejects(rpc.call("ACL.Bootstrap", {}), AclDisabledError);
  await assert.rejects(rpc.call("ACL.Read", { kind: "policy", op: "list", query: q() }), AclDisabledError);
  assert.equal((await rpc.call("KVS.Apply", { op: "set", entry: { key: "k", value: bytes("1") }, token: "whatever" })).ok, true);
});

test("acl server: catalog and health answers leave out what the token may not read, and say so", async () => {
  const root = "11111111-2222-3333-4444-555555555555";
  const { rpc } = await aclServer({ initialManagement: root });
  await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", service: { service: "web", port: 80 }, token: root });
  await rpc.call("Catalog.Register", { node: "n2", address: "10.0.0.2", service: { service: "db", port: 5432 }, token: root });
  await rpc.call("ACL.Write", { kind: "policy", op: "create", item: { name: "web", rules: `service "web" { policy = "read" }\nnode "n1" { policy = "read" }` }, token: root });
  const tok = await rpc.call("ACL.Write", { kind: "token", op: "create", item: { policies: [{ name: "web" }] }, token: root });
  const query = { ...q(), token: tok.item!.secretId as string };
  const services = await rpc.call("Catalog.ListServices", { query });
  assert.deepEqual([Object.keys(services.services), services.meta.resultsFilteredByAcls], [["web"], true]);
  const nodes = await rpc.call("Catalog.ListNodes", { query });
  assert.deepEqual([nodes.nodes.map((n) => n.node), nodes.meta.resultsFilteredByAcls], [["n1"], true]);
  const health = await rpc.call("Health.ServiceNodes", { serviceName: "web", query });
  assert.equal(health.nodes.length, 1);
  const all = await rpc.call("Catalog.ListServices", { query: { ...q(), token: root } });
  assert.deepEqual([Object.keys(all.services).sort(), all.meta.resultsFilteredByAcls], [["db", "web"], undefined]);
  await assert.rejects(rpc.call("Catalog.ListNodes", { query: { ...q(), token: "unknown" } }), AclNotFoundError);
});

test("acl server: catalog registrations and sessions need node, service and session write; the leader's own calls are trusted", async () => {
  const root = "11111111-2222-3333-4444-555555555555";
  const d = await aclServer({ initialManagement: root });
  const { rpc } = d;
  await rpc.call("ACL.Write", { kind: "policy", op: "create", item: { name: "web", rules: `service "web" { policy = "write" }\nnode_prefix "" { policy = "read" }` }, token: root });
  const tok = await rpc.call("ACL.Write", { kind: "token", op: "create", item: { policies: [{ name: "web" }] }, token: root });
  const secret = tok.item!.secretId as string;
  await assert.rejects(rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", service: { service: "web" }, token: secret }), /lacks permission 'node:write' on "n1"/);
  await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", token: root });
  assert.ok((await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", service: { service: "web" }, skipNodeUpdate: true, token: secret })).index > 0);
  await assert.rejects(rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", service: { service: "db" }, skipNodeUpdate: true, token: secret }), /lacks permission 'service:write' on "db"/);
  await assert.rejects(rpc.call("Catalog.Deregister", { node: "n1", token: secret }), /node:write/);
  assert.ok((await rpc.call("Catalog.Deregister", { node: "n1", serviceId: "web", token: secret })).index > 0);
  await assert.rejects(rpc.call("Session.Apply", { op: "create", session: { node: "n1", nodeChecks: [] }, token: secret }), /lacks permission 'session:write' on "n1"/);
  // Internal calls (leader duties) are not checked.
  assert.ok((await d.server.handle("Catalog.Register", { node: "n2", address: "10.0.0.2" }, { internal: true })).index > 0);
  await assert.rejects(d.server.handle("Catalog.Register", { node: "n3", address: "10.0.0.3" }), /node:write/);
});

test("acl server: a token with an expiration TTL is not found once it expired", async () => {
  const root = "11111111-2222-3333-4444-555555555555";
  const { rpc, clock } = await aclServer({ initialManagement: root });
  const tok = await rpc.call("ACL.Write", { kind: "token", op: "create", item: { description: "short", expirationTtlMs: 60_000 }, token: root });
  const secret = tok.item!.secretId as string;
  assert.equal((await rpc.call("ACL.Resolve", { secret })).accessorId, tok.item!.accessorId);
  await assert.rejects(rpc.call("KVS.Get", { key: "k", query: { ...q(), token: secret } }), PermissionDeniedError); // cached identity, still valid
  clock.advance(60_001);
  await assert.rejects(rpc.call("KVS.Get", { key: "k", query: { ...q(), token: secret } }), AclNotFoundError);
  await assert.rejects(rpc.call("ACL.Resolve", { secret }), AclNotFoundError);
});

test("acl server: a token that may read every instance gets the shared answer itself, not a copy", async () => {
  const root = "11111111-2222-3333-4444-555555555555";
  const { rpc } = await aclServer({ initialManagement: root });
  await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", service: { service: "web", port: 80 }, token: root });
  const query = { ...q(), token: root };
  const a = await rpc.call("Health.ServiceNodes", { serviceName: "web", query });
  const b = await rpc.call("Health.ServiceNodes", { serviceName: "web", query });
  assert.equal(a.nodes.length, 1);
  assert.ok(Object.isFrozen(a.nodes));
  assert.equal(a.nodes, b.nodes);
  assert.equal(a.meta.resultsFilteredByAcls, undefined);
});
