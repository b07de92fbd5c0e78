import { test } from "node:test";
import assert from "node:assert/strict";
import { decideBootstrap, parsePeersJson, reconcileAction, serverFromMember, type MemberLike } from "./bootstrap.ts";

function server(name: string, o: { id?: string; expect?: number; status?: string; dc?: string; port?: number; addr?: string } = {}): MemberLike {
  const tags: Record<string, string> = { role: "consul", dc: o.dc ?? "dc1", id: o.id ?? `id-${name}`, port: String(o.port ?? 8300), vsn: "2" };
  if (o.expect !== undefined) tags.expect = String(o.expect);
  return { name, addr: o.addr ?? `10.0.0.${name.charCodeAt(0) - 96}`, port: 8301, tags, status: o.status ?? "alive" };
}

const client: MemberLike = { name: "c1", addr: "10.0.1.1", port: 8301, tags: { role: "node", dc: "dc1", id: "id-c1" }, status: "alive" };

test("serverFromMember: servers only, with the RPC address from the port tag", () => {
  assert.equal(serverFromMember(client), undefined);
  const s = serverFromMember(server("a", { expect: 3, port: 8311 }));
  assert.deepEqual(s, { name: "a", id: "id-a", address: "10.0.0.1:8311", datacenter: "dc1", expect: 3, bootstrap: false, status: "alive" });
  assert.equal(serverFromMember({ ...client, tags: { role: "consul", port: "nope" } }), undefined);
  assert.equal(serverFromMember(server("b", { addr: "::1" }))?.address, "[::1]:8300");
});

test("decideBootstrap: waits for the expected number of alive servers of its datacenter", () => {
  const opts = { expect: 3, datacenter: "dc1" };
  const two = [server("a", { expect: 3 }), server("b", { expect: 3 }), client, server("x", { expect: 3, dc: "dc2" })];
  const d1 = decideBootstrap(two, opts);
  assert.equal(d1.kind, "wait");
  assert.equal(decideBootstrap([...two, server("c", { expect: 3, status: "failed" })], opts).kind, "wait");
  const d = decideBootstrap([server("c", { expect: 3 }), ...two, server("b2", { id: "id-0", expect: 3 })], opts);
  assert.equal(d.kind, "bootstrap");
  if (d.kind === "bootstrap") assert.deepEqual(d.servers.map((s) => s.id), ["id-0", "id-a", "id-b", "id-c"], "sorted by ID: every server computes the same list");
});

test("decideBootstrap: refuses on a conflicting expect or a -bootstrap server", () => {
  const opts = { expect: 3, datacenter: "dc1" };
  const d = decideBootstrap([server("a", { expect: 3 }), server("b", { expect: 5 }), server("c", { expect: 3 })], opts);
  assert.equal(d.kind, "refuse");
  if (d.kind === "refuse") assert.match(d.reason, /conflicting expect value 5/);
  const boot = server("d");
  boot.tags.bootstrap = "1";
  assert.equal(decideBootstrap([boot, server("a", { expect: 3 })], opts).kind, "refuse");
});

test("parsePeersJson: Consul's protocol 3 format, with clear errors", () => {
  const ok = parsePeersJson(`[{"id":"a","address":"10.1.0.1:8300","non_voter":false},{"id":"b","address":"10.1.0.2:8300","non_voter":true}]`);
  assert.deepEqual(ok, { servers: [{ id: "a", address: "10.1.0.1:8300", suffrage: "voter" }, { id: "b", address: "10.1.0.2:8300", suffrage: "nonvoter" }] });
  assert.match(String(parsePeersJson("{")), /Cannot parse peers.json/);
  assert.match(String(parsePeersJson(`["10.1.0.1:8300"]`)), /entry 0 is not an object/);
  assert.match(String(parsePeersJson(`[{"id":"a","address":"nohost"}]`)), /host:port/);
  assert.match(String(parsePeersJson(`[{"id":"a","address":"h:1"},{"id":"a","address":"h:2"}]`)), /listed twice/);
  assert.match(String(parsePeersJson(`[{"id":"a","address":"h:1","non_voter":true}]`)), /no voter/);
});

test("reconcileAction: the leader adds alive servers and removes servers that left, one at a time", () => {
  const config = { servers: [{ id: "id-a", address: "10.0.0.1:8300", suffrage: "voter" as const }, { id: "id-b", address: "10.0.0.2:8300", suffrage: "voter" as const }] };
  const opts = { datacenter: "dc1", selfId: "id-a" };
  assert.equal(reconcileAction([server("a"), server("b"), client], config, opts), undefined);
  assert.deepEqual(reconcileAction([server("a"), server("b"), server("c")], config, opts), { op: "addVoter", id: "id-c", address: "10.0.0.3:8300", name: "c" });
  assert.deepEqual(reconcileAction([server("a"), server("b", { status: "left" })], config, opts), { op: "removeServer", id: "id-b", name: "b" });
  assert.equal(reconcileAction([server("a"), server("b", { status: "failed" })], config, opts), undefined, "failed servers stay");
  assert.equal(reconcileAction([server("a"), server("c", { dc: "dc2" })], config, opts), undefined, "other datacenters are not ours");
  // b came back with a new ID on its old address: the stale entry goes first.
  assert.deepEqual(reconcileAction([server("a"), server("b", { id: "id-b2" })], config, opts), { op: "removeServer", id: "id-b", name: "b" });
  const replaced = { servers: [config.servers[0]!] };
  assert.deepEqual(reconcileAction([server("a"), server("b", { id: "id-b2" })], replaced, opts), { op: "addVoter", id: "id-b2", address: "10.0.0.2:8300", name: "b" });
  // With autopilot a new server joins as a non-voter, and a non-voter is left for autopilot to promote.
  const ap = { ...opts, nonvoters: true };
  assert.deepEqual(reconcileAction([server("a"), server("b"), server("c")], config, ap), { op: "addNonvoter", id: "id-c", address: "10.0.0.3:8300", name: "c" });
  const withC = { servers: [...config.servers, { id: "id-c", address: "10.0.0.3:8300", suffrage: "nonvoter" as const }] };
  assert.equal(reconcileAction([server("a"), server("b"), server("c")], withC, ap), undefined);
  assert.deepEqual(reconcileAction([server("a"), server("b"), server("c")], withC, opts)?.op, "addVoter");
});
