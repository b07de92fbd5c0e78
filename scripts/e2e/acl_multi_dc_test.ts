// End-to-end: ACLs across two datacenters, as Consul runs them. dc1 is the
// primary (one server, default deny, bootstrapped over HTTP); dc2 (one
// server, default deny, acl.enable_token_replication, retry_join_wan to dc1) gets its replication
// token with `PUT /v1/agent/token/replication` once dc1 is bootstrapped —
// that call is itself authorized by a token dc2 resolves at dc1. A policy,
// a role and a token made in dc1 appear in dc2 (/v1/acl/policies, roles,
// tokens), the token writes KV in dc2 within its prefix only, a local token
// made in dc2 never reaches dc1, a policy written through dc2 lands in dc1,
// and /v1/acl/replication in dc2 shows the progress.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { until } from "../../core/testing/until.ts";
import { makeCluster, waitForLeader, type Cluster, type ServerSpec } from "./harness.ts";
import { tails } from "./_two_dcs.ts";

let dc1: Cluster;
let dc2: Cluster;
let p: ServerSpec;
let s: ServerSpec;
let root = "";

async function req(url: string, init: RequestInit & { token?: string } = {}): Promise<{ status: number; text: string; json: () => unknown }> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set("X-Consul-Token", init.token);
  const r = await fetch(url, { ...init, headers, signal: AbortSignal.timeout(15_000) });
  const text = await r.text();
  return { status: r.status, text, json: () => JSON.parse(text) };
}

before(async () => {
  const acl = { enabled: true, default_policy: "deny", down_policy: "extend-cache", token_ttl: "2s" };
  dc1 = await makeCluster(1, { prefix: "cairn-acl-dc1-", config: { datacenter: "dc1", primary_datacenter: "dc1", retry_interval_wan: "1s", acl } });
  // dc2 joins dc1 over the WAN by itself: with default deny, `join -wan` in dc2 would need a token dc2 can only resolve at dc1.
  const wan = `${dc1.servers[0]!.addr}:${dc1.servers[0]!.serfWan}`;
  dc2 = await makeCluster(1, { prefix: "cairn-acl-dc2-", config: { datacenter: "dc2", primary_datacenter: "dc1", retry_join_wan: [wan], retry_interval_wan: "1s", acl: { ...acl, enable_token_replication: true } } });
  dc1.start(dc1.servers[0]!);
  dc2.start(dc2.servers[0]!);
  try {
    p = await waitForLeader(dc1, dc1.servers, { timeoutMs: 60_000 });
    s = await waitForLeader(dc2, dc2.servers, { timeoutMs: 60_000 });
  } catch (err) {
    throw new Error(`${String(err)}${tails(dc1)}${tails(dc2)}`);
  }
});

after(async () => {
  await dc1?.stopAll();
  await dc2?.stopAll();
  dc1?.root.remove();
  dc2?.root.remove();
});

test("acl multi-dc: bootstrap in the primary only; dc2 takes its replication token from a dc1 token it resolves at dc1", async () => {
  const boot = await until(async () => {
    const r = await req(dc1.url(p, "/v1/acl/bootstrap"), { method: "PUT" });
    return r.status === 200 && r;
  }, "bootstrap in dc1", { timeoutMs: 30_000, intervalMs: 500 });
  root = (boot.json() as { SecretID: string }).SecretID;
  // dc2 bootstraps nothing of its own: Consul answers ACL support disabled there.
  const there = await req(dc2.url(s, "/v1/acl/bootstrap"), { method: "PUT" });
  assert.deepEqual([there.status, there.text], [401, "ACL support disabled"]);
  // The root token is dc1's; dc2's agent resolves it at dc1 (nothing replicated yet) to allow acl:write.
  await until(async () => {
    const r = await req(dc2.url(s, "/v1/agent/token/replication"), { method: "PUT", token: root, body: JSON.stringify({ Token: root }) });
    return r.status === 200;
  }, "dc2 accepts its replication token", { timeoutMs: 60_000, intervalMs: 500 });
});

test("acl multi-dc: a policy, a role and a token made in dc1 appear in dc2, and the token writes KV in dc2 within its prefix", async () => {
  assert.ok(root, "bootstrap ran");
  const put = async (url: string, body: unknown) => {
    const r = await req(url, { method: "PUT", token: root, body: JSON.stringify(body) });
    assert.equal(r.status, 200, `${url}: ${r.text}`);
    return r.json() as Record<string, unknown>;
  };
  const policy = await put(dc1.url(p, "/v1/acl/policy"), { Name: "app", Rules: 'key_prefix "app/" {\n  policy = "write"\n}' });
  await put(dc1.url(p, "/v1/acl/role"), { Name: "app-role", Policies: [{ Name: "app" }] });
  const token = await put(dc1.url(p, "/v1/acl/token"), { Description: "app writer", Roles: [{ Name: "app-role" }] });
  const secret = token.SecretID as string;
  const accessor = token.AccessorID as string;
  // They arrive in dc2 by replication (its own tables answer these lists).
  const names = async (path: string) => ((await req(dc2.url(s, path), { token: root })).json() as { Name?: string; AccessorID?: string }[]);
  await until(async () => (await names("/v1/acl/policies")).some((x) => x.Name === "app"), "policy app in dc2", { timeoutMs: 60_000, intervalMs: 500 }).catch((err: unknown) => {
    throw new Error(`${String(err)}${tails(dc2)}`);
  });
  await until(async () => (await names("/v1/acl/roles")).some((x) => x.Name === "app-role"), "role app-role in dc2", { timeoutMs: 30_000, intervalMs: 500 });
  await until(async () => (await names("/v1/acl/tokens")).some((x) => x.AccessorID === accessor), "the token in dc2", { timeoutMs: 30_000, intervalMs: 500 });
  const inDc2 = await req(dc2.url(s, `/v1/acl/policy/${String(policy.ID)}`), { token: root });
  assert.equal(inDc2.status, 200, inDc2.text);
  assert.equal((inDc2.json() as { Rules: string }).Rules, 'key_prefix "app/" {\n  policy = "write"\n}');

  const ok = await req(dc2.url(s, "/v1/kv/app/x"), { method: "PUT", token: secret, body: "v" });
  assert.deepEqual([ok.status, ok.text.trim()], [200, "true"]);
  const denied = await req(dc2.url(s, "/v1/kv/other"), { method: "PUT", token: secret, body: "v" });
  assert.equal(denied.status, 403);
  assert.match(denied.text, /^Permission denied: token with AccessorID '[0-9a-f-]{36}' lacks permission 'key:write' on "other"$/);
});

test("acl multi-dc: a local token made in dc2 stays out of dc1; a policy written through dc2 lands in dc1", async () => {
  assert.ok(root, "bootstrap ran");
  const local = await req(dc2.url(s, "/v1/acl/token"), { method: "PUT", token: root, body: JSON.stringify({ Description: "dc2 only", Local: true, Policies: [{ Name: "app" }] }) });
  assert.equal(local.status, 200, local.text);
  const t = local.json() as { AccessorID: string; SecretID: string; Local: boolean };
  assert.equal(t.Local, true);
  assert.equal((await req(dc2.url(s, `/v1/acl/token/${t.AccessorID}`), { token: root })).status, 200);
  const inDc1 = await req(dc1.url(p, `/v1/acl/token/${t.AccessorID}`), { token: root });
  assert.deepEqual([inDc1.status, inDc1.text], [403, "ACL not found"]);
  // It works in dc2, and only there.
  assert.equal((await req(dc2.url(s, "/v1/kv/app/local"), { method: "PUT", token: t.SecretID, body: "v" })).status, 200);
  assert.equal((await req(dc1.url(p, "/v1/kv/app/local"), { method: "PUT", token: t.SecretID, body: "v" })).status, 403);

  const viaDc2 = await req(dc2.url(s, "/v1/acl/policy"), { method: "PUT", token: root, body: JSON.stringify({ Name: "ops", Rules: 'node_prefix "" {\n  policy = "read"\n}' }) });
  assert.equal(viaDc2.status, 200, viaDc2.text);
  const id = (viaDc2.json() as { ID: string }).ID;
  assert.equal((await req(dc1.url(p, `/v1/acl/policy/${id}`), { token: root })).status, 200);
});

test("acl multi-dc: /v1/acl/replication in dc2 shows progress from dc1; dc1 replicates from nobody", async () => {
  assert.ok(root, "bootstrap ran");
  const tokensIndex = Number((await fetch(dc1.url(p, "/v1/acl/tokens"), { headers: { "X-Consul-Token": root } })).headers.get("x-consul-index"));
  const status = await until(async () => {
    const r = await req(dc2.url(s, "/v1/acl/replication"));
    const j = r.json() as Record<string, unknown>;
    return r.status === 200 && (j.ReplicatedTokenIndex as number) >= tokensIndex && j;
  }, "dc2 replication caught up", { timeoutMs: 30_000, intervalMs: 500 });
  assert.equal(status.Enabled, true);
  assert.equal(status.Running, true);
  assert.equal(status.SourceDatacenter, "dc1");
  assert.equal(status.ReplicationType, "tokens");
  assert.ok((status.ReplicatedIndex as number) > 0 && (status.ReplicatedRoleIndex as number) > 0, JSON.stringify(status));
  assert.match(status.LastSuccess as string, /^20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.deepEqual(Object.keys(status), ["Enabled", "Running", "SourceDatacenter", "ReplicationType", "ReplicatedIndex", "ReplicatedRoleIndex", "ReplicatedTokenIndex", "LastSuccess", "LastError", "LastErrorMessage"]);
  // Through dc1 with ?dc=dc2 too.
  const viaDc1 = (await req(dc1.url(p, "/v1/acl/replication?dc=dc2"))).json() as Record<string, unknown>;
  assert.equal(viaDc1.SourceDatacenter, "dc1");
  const primary = (await req(dc1.url(p, "/v1/acl/replication"))).json() as Record<string, unknown>;
  assert.deepEqual([primary.Enabled, primary.Running, primary.LastSuccess], [false, false, "0001-01-01T00:00:00Z"]);
  // The agent says which datacenter is the primary; operator calls in dc2 check their token there too.
  const self = (await req(dc2.url(s, "/v1/agent/self"), { token: root })).json() as { Config: { Datacenter: string; PrimaryDatacenter: string } };
  assert.deepEqual([self.Config.Datacenter, self.Config.PrimaryDatacenter], ["dc2", "dc1"]);
  assert.equal((await req(dc2.url(s, "/v1/operator/raft/configuration"), { token: root })).status, 200);
  assert.equal((await req(dc2.url(s, "/v1/operator/raft/configuration"))).status, 403);
});
