import assert from "node:assert/strict";
import { test } from "node:test";
import { AclNotFoundError, BadRequestError, DcUnavailableError } from "../errors.ts";
import { createLocalRpc } from "../rpc/local.ts";
import type { Rpc } from "../rpc/methods.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { StateStore } from "../state/store.ts";
import { applyAclSetCommand, type AclPolicy } from "../state/acl.ts";
import type { AclServerConfig } from "./acl.ts";
import { aclBatches, aclContentKey, diffAclItems } from "./acl_replication.ts";
import { createDevServer } from "./dev.ts";
import { q } from "./_test_query.ts";

const policy = (id: string, name: string, rules = "", modifyIndex = 1): AclPolicy => ({ id, name, description: "", rules, datacenters: [], createIndex: 1, modifyIndex });

test("acl replication diff: only-local is deleted, only-remote and changed are stored, the Raft indexes do not count", () => {
  const local = [policy("b", "b", "x", 7), policy("a", "a", "", 3), policy("d", "d", "old", 9)];
  const remote = [policy("d", "d", "new", 40), policy("c", "c", "", 12), policy("a", "a", "", 55)];
  const { deletions, upserts } = diffAclItems(local, remote, (p) => p.id);
  assert.deepEqual(deletions, ["b"]);
  // "a" differs only in its indexes (each datacenter has its own): not stored again.
  assert.deepEqual(upserts.map((p) => p.id), ["c", "d"]);
  assert.deepEqual(diffAclItems(remote, remote, (p) => p.id), { deletions: [], upserts: [] });
  assert.deepEqual(diffAclItems([], [], (p: AclPolicy) => p.id), { deletions: [], upserts: [] });
  // Key order and undefined fields do not change the content key; a value does.
  assert.equal(aclContentKey({ a: 1, b: [{ y: 2, x: 1 }], c: undefined, modifyIndex: 3 }), aclContentKey({ b: [{ x: 1, y: 2 }], a: 1 }));
  assert.notEqual(aclContentKey({ a: 1 }), aclContentKey({ a: 2 }));
});

test("acl replication batches: split by size, every item in order, one oversized item alone", () => {
  const items = ["aaaa", "bbbb", "cccc", "x".repeat(50), "dd"];
  const batches = aclBatches(items, 14);
  assert.deepEqual(batches.flat(), items);
  assert.deepEqual(batches.map((b) => b.length), [2, 1, 1, 1]);
  assert.deepEqual(aclBatches([], 10), []);
});

test("acl state: a batch may swap two policies' names (replication brings renames as they are), a clash is still refused", () => {
  const s = new StateStore();
  applyAclSetCommand(s, 1, { items: [policy("p1", "one"), policy("p2", "two")] }, "policy");
  const swapped = applyAclSetCommand(s, 2, { items: [policy("p1", "two"), policy("p2", "one")] }, "policy");
  assert.ok(!(swapped instanceof Error), String(swapped));
  assert.deepEqual(s.tables.acl_policies.all().map((p) => [p.id, p.name]).sort(), [["p1", "two"], ["p2", "one"]]);
  const clash = applyAclSetCommand(s, 3, { items: [policy("p3", "one")] }, "policy");
  assert.ok(clash instanceof Error && /A Policy with Name "one" already exists/.test(clash.message));
  const twice = applyAclSetCommand(s, 4, { items: [policy("p4", "four"), policy("p5", "four")] }, "policy");
  assert.ok(twice instanceof Error);
});

function uuids(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}0000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`;
}

const root = "11111111-2222-3333-4444-555555555555";

/** A primary (dc1) and a secondary (dc2) dev server, the secondary's calls for dc1 answered by the primary. */
async function twoDcs(secondary: Partial<AclServerConfig> = {}) {
  const clock = new SimClock();
  const dc1 = await createDevServer({
    clock,
    rng: new Rng(1),
    datacenter: "dc1",
    acl: { enabled: true, defaultPolicy: "deny", uuid: uuids("a"), initialManagement: root, primaryDatacenter: "dc1" },
  });
  await dc1.server.initializeAcls();
  let reachable = true;
  const toDc1: Rpc = {
    call(method, args, options) {
      if (!reachable) return Promise.reject(new Error("connection refused"));
      return createLocalRpc(dc1.server).call(method, args, options);
    },
  };
  const dc2 = await createDevServer({
    clock,
    rng: new Rng(2),
    datacenter: "dc2",
    remote: () => toDc1,
    acl: { enabled: true, defaultPolicy: "deny", uuid: uuids("b"), primaryDatacenter: "dc1", enableTokenReplication: true, replicationToken: () => root, tokenTtlMs: 30_000, downPolicy: "extend-cache", ...secondary },
  });
  // A secondary stores nothing of its own at leadership: it all comes from the primary.
  assert.equal(await dc2.server.initializeAcls(), false);
  const p = createLocalRpc(dc1.server);
  const s = createLocalRpc(dc2.server);
  return {
    clock,
    dc1,
    dc2,
    p,
    s,
    setReachable: (v: boolean) => { reachable = v; },
    async stop() {
      dc2.server.aclReplication?.stop();
      await dc1.stop();
      await dc2.stop();
    },
  };
}

test("acl replication: a secondary's leader brings policies, roles and global tokens from the primary, keeps its local tokens, and follows deletes", async () => {
  const t = await twoDcs();
  try {
    const pol = await t.p.call("ACL.Write", { kind: "policy", op: "create", item: { name: "app", rules: `key_prefix "app/" { policy = "write" }` }, token: root });
    const role = await t.p.call("ACL.Write", { kind: "role", op: "create", item: { name: "app-role", policies: [{ name: "app" }] }, token: root });
    const global = await t.p.call("ACL.Write", { kind: "token", op: "create", item: { description: "global", roles: [{ name: "app-role" }] }, token: root });
    const primaryLocal = await t.p.call("ACL.Write", { kind: "token", op: "create", item: { description: "dc1 only", local: true, policies: [{ name: "app" }] }, token: root });
    const repl = t.dc2.server.aclReplication!;
    assert.equal(repl.status().running, false);
    repl.start();
    const st = () => t.dc2.fsm.state;
    await t.clock.runUntil(() => st().tables.acl_tokens.get(global.item!.accessorId as string) !== undefined && st().tables.acl_roles.all().length === 1, { maxMs: 30_000, what: "replicated" });
    assert.deepEqual(st().tables.acl_policies.all().map((x) => x.name).sort(), ["app", "builtin-global-read-only", "global-management"]);
    assert.equal(st().tables.acl_tokens.get(primaryLocal.item!.accessorId as string), undefined, "a local token of the primary stays there");
    const status = repl.status();
    assert.deepEqual([status.enabled, status.running, status.sourceDatacenter, status.replicationType, status.lastErrorMessage], [true, true, "dc1", "tokens", ""]);
    assert.ok(status.replicatedIndex > 0 && status.replicatedRoleIndex > 0 && status.replicatedTokenIndex > 0 && status.lastSuccessMs > 0, JSON.stringify(status));

    // The replicated global token works in dc2 (resolved from dc2's own tables).
    await t.s.call("KVS.Apply", { op: "set", entry: { key: "app/x", value: new TextEncoder().encode("1") }, token: global.item!.secretId as string });
    // A local token made in dc2 stays there; replication leaves it alone.
    const mine = await t.s.call("ACL.Write", { kind: "token", op: "create", item: { description: "dc2 only", local: true, policies: [{ name: "app" }] }, token: root });
    assert.equal(t.dc1.fsm.state.tables.acl_tokens.get(mine.item!.accessorId as string), undefined);
    // A policy written in dc2 goes to the primary (and comes back by replication).
    const viaDc2 = await t.s.call("ACL.Write", { kind: "policy", op: "create", item: { name: "ops", rules: `node_prefix "" { policy = "read" }` }, token: root });
    assert.ok(t.dc1.fsm.state.tables.acl_policies.get(viaDc2.item!.id as string));
    await t.clock.runUntil(() => st().tables.acl_policies.get(viaDc2.item!.id as string) !== undefined, { maxMs: 30_000, what: "ops replicated" });

    // Changes and deletions in the primary follow.
    await t.p.call("ACL.Write", { kind: "policy", op: "update", item: { id: pol.item!.id, rules: `key_prefix "app/" { policy = "read" }` }, token: root });
    await t.p.call("ACL.Write", { kind: "role", op: "delete", id: role.item!.id as string, token: root });
    await t.p.call("ACL.Write", { kind: "token", op: "delete", id: global.item!.accessorId as string, token: root });
    await t.clock.runUntil(() => st().tables.acl_roles.all().length === 0 && st().tables.acl_tokens.get(global.item!.accessorId as string) === undefined, { maxMs: 30_000, what: "deletions replicated" });
    await t.clock.runUntil(() => st().tables.acl_policies.get(pol.item!.id as string)?.rules.includes("read") === true, { maxMs: 30_000, what: "update replicated" });
    assert.ok(st().tables.acl_tokens.get(mine.item!.accessorId as string), "dc2's local token is still there");

    repl.stop();
    assert.equal(repl.status().running, false);
  } finally {
    await t.stop();
  }
});

test("acl replication: an unknown replication token replicates nothing and says why; a new token is tried at once", async () => {
  let token = "not-a-token";
  const t = await twoDcs({ replicationToken: () => token });
  try {
    const repl = t.dc2.server.aclReplication!;
    repl.start();
    await t.clock.runUntil(() => repl.status().lastErrorMessage !== "", { maxMs: 30_000, what: "an error" });
    assert.equal(repl.status().lastErrorMessage, "ACL not found");
    assert.ok(repl.status().lastErrorMs > 0);
    // Several failures later the back-off is long (sim time)…
    await t.clock.runFor(20_000);
    assert.equal(t.dc2.fsm.state.tables.acl_policies.all().length, 0);
    // …but a new replication token (PUT /v1/agent/token/replication) is tried within a second.
    token = root;
    await t.clock.runUntil(() => t.dc2.fsm.state.tables.acl_policies.all().length === 2, { maxMs: 2_000, what: "replicated with the new token" });
  } finally {
    await t.stop();
  }
});

test("acl in a secondary without token replication: tokens resolve at the primary, cached for token_ttl, down_policy when it is gone", async () => {
  const t = await twoDcs({ enableTokenReplication: false, tokenTtlMs: 10_000, downPolicy: "extend-cache" });
  try {
    await t.p.call("ACL.Write", { kind: "policy", op: "create", item: { name: "app", rules: `key_prefix "app/" { policy = "write" }` }, token: root });
    const tok = await t.p.call("ACL.Write", { kind: "token", op: "create", item: { description: "app", policies: [{ name: "app" }] }, token: root });
    const secret = tok.item!.secretId as string;
    // Nothing replicated yet: dc2 asks dc1, whose answer is for dc2.
    const r = await t.s.call("ACL.Resolve", { secret });
    assert.equal(r.accessorId, tok.item!.accessorId);
    assert.deepEqual(r.rules, [`key_prefix "app/" { policy = "write" }`]);
    await t.s.call("KVS.Apply", { op: "set", entry: { key: "app/y", value: new Uint8Array() }, token: secret });
    await assert.rejects(t.s.call("KVS.Apply", { op: "set", entry: { key: "other", value: new Uint8Array() }, token: secret }), /Permission denied/);
    await assert.rejects(t.s.call("KVS.Get", { key: "app/y", query: q({ token: "unknown-secret" }) }), AclNotFoundError);
    // Token reads go to the primary; local tokens are refused without token replication.
    const self = await t.s.call("ACL.Read", { kind: "token", op: "self", query: q({ token: secret }) });
    assert.equal(self.items[0]!.accessorId, tok.item!.accessorId);
    await assert.rejects(t.s.call("ACL.Write", { kind: "token", op: "create", item: { local: true }, token: root }), (e) => e instanceof BadRequestError && e.message === "Local tokens are disabled");
    // Bootstrap belongs to the primary.
    await assert.rejects(t.s.call("ACL.Bootstrap", {}), /ACL support disabled/);
    // The primary goes away: extend-cache keeps the cached answer, a token never seen is denied.
    t.setReachable(false);
    await t.clock.runFor(11_000);
    await t.s.call("KVS.Apply", { op: "set", entry: { key: "app/z", value: new Uint8Array() }, token: secret });
    const fresh = await t.p.call("ACL.Write", { kind: "token", op: "create", item: { description: "new", policies: [{ name: "app" }] }, token: root });
    await assert.rejects(t.s.call("KVS.Apply", { op: "set", entry: { key: "app/w", value: new Uint8Array() }, token: fresh.item!.secretId as string }), /Permission denied/);
    // An agent asking dc2 about it is told the primary is unreachable (it applies its own down_policy and caches nothing).
    await assert.rejects(t.s.call("ACL.Resolve", { secret: fresh.item!.secretId as string }), DcUnavailableError);
    assert.equal((await t.s.call("ACL.Resolve", { secret })).accessorId, tok.item!.accessorId, "the cached one is still answered");
    t.setReachable(true);
    await t.s.call("KVS.Apply", { op: "set", entry: { key: "app/w", value: new Uint8Array() }, token: fresh.item!.secretId as string });
  } finally {
    await t.stop();
  }
});
