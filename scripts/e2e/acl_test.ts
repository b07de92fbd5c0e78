// End-to-end: a default-deny three-server cluster with ACLs on, bootstrapped
// from scratch with the CLI (`cairn acl bootstrap`, `acl policy create`,
// `acl token create`), a token limited to key_prefix "app/" that writes
// there and gets Consul's 403 elsewhere (through a server and through a
// client agent, which resolves tokens through the servers), anonymous lists
// filtered with X-Consul-Results-Filtered-By-ACLs, -token-file,
// python-consul and the npm `consul` package with a token, DNS with and
// without a token, and the audit log (refused and allowed requests, no secret
// in it or in the agent's log).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Resolver } from "node:dns/promises";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Consul from "consul";
import { until } from "../../core/testing/until.ts";
import { cairn, freePort, makeCluster, startDevAgent, run, waitForLeader, type Agent, type Cluster, type ServerSpec } from "./harness.ts";

const python = "/usr/bin/python3";
let c: Cluster;
let leader: ServerSpec;
let client: Agent | undefined;
let clientDns = 0;
let root = "";
let appSecret = "";
let appAccessor = "";

async function req(url: string, init: RequestInit & { token?: string } = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set("X-Consul-Token", init.token);
  const r = await fetch(url, { ...init, headers, signal: AbortSignal.timeout(10_000) });
  return { status: r.status, text: await r.text(), headers: r.headers };
}

before(async () => {
  c = await makeCluster(3, { prefix: "cairn-acl-e2e-", config: { acl: { enabled: true, default_policy: "deny", down_policy: "extend-cache", token_ttl: "2s" } } });
  for (const s of c.servers) c.start(s);
  leader = await waitForLeader(c, c.servers, { timeoutMs: 60_000 });
});

after(async () => {
  await client?.stop();
  await c?.stopAll();
  c?.root.remove();
});

test("acl e2e: default deny before bootstrap; bootstrap once with the CLI, then Consul's refusal", async () => {
  const s = c.servers[0]!;
  const anon = await req(c.url(s, "/v1/kv/app/x"));
  assert.equal(anon.status, 403);
  assert.match(anon.text, /^Permission denied: token with AccessorID '00000000-0000-0000-0000-000000000002' lacks permission 'key:read' on "app\/x"$/);
  assert.equal(anon.headers.get("x-consul-default-acl-policy"), "deny");
  const addr = `-http-addr=${s.addr}:${s.http}`;
  // The first leader stores the built-in policies a moment after it is elected.
  const boot = await until(async () => {
    const r = await cairn(["acl", "bootstrap", addr, "-format=json"]);
    return r.code === 0 && r;
  }, "acl bootstrap succeeds", { timeoutMs: 20_000, intervalMs: 500 });
  const token = JSON.parse(boot.stdout) as { SecretID: string; AccessorID: string; Policies: { Name: string }[] };
  assert.deepEqual(token.Policies.map((p) => p.Name), ["global-management"]);
  root = token.SecretID;
  const again = await cairn(["acl", "bootstrap", `-http-addr=${leader.addr}:${leader.http}`]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /^Failed ACL bootstrapping: Unexpected response code: 403 \(Permission denied: ACL bootstrap no longer allowed \(reset index: \d+\)\)\n$/);
  const pretty = await cairn(["acl", "token", "read", addr, "-self"], { env: { CONSUL_HTTP_TOKEN: root } });
  assert.equal(pretty.code, 0, pretty.stderr);
  assert.match(pretty.stdout, /^AccessorID: +[0-9a-f-]{36}\nSecretID: +[0-9a-f-]{36}\nDescription: +Bootstrap Token \(Global Management\)\nLocal: +false\nCreate Time: +.+\nPolicies:\n {3}00000000-0000-0000-0000-000000000001 - global-management\n$/);
});

test("acl e2e: a key_prefix \"app/\" token writes there and gets 403 elsewhere (server, client agent, -token-file)", async () => {
  assert.ok(root, "bootstrap ran");
  const s = c.servers[1]!;
  const addr = `-http-addr=${s.addr}:${s.http}`;
  const rules = join(c.root.path, "app.hcl");
  writeFileSync(rules, 'key_prefix "app/" {\n  policy = "write"\n}\n');
  const env = { CONSUL_HTTP_TOKEN: root };
  const pol = await cairn(["acl", "policy", "create", addr, "-name=app", "-description=app keys", `-rules=@${rules}`], { env });
  assert.equal(pol.code, 0, pol.stderr);
  assert.match(pol.stdout, /^ID: +[0-9a-f-]{36}\nName: +app\nDescription: +app keys\nDatacenters: +\nRules:\nkey_prefix "app\/" \{\n {2}policy = "write"\n\}\n/);
  const list = await cairn(["acl", "policy", "list", addr], { env });
  assert.match(list.stdout, /^app:\n {3}ID: /m);
  assert.match(list.stdout, /^global-management:\n/m);
  const tok = await cairn(["acl", "token", "create", addr, "-description=app writer", "-policy-name=app", "-format=json"], { env });
  assert.equal(tok.code, 0, tok.stderr);
  const t = JSON.parse(tok.stdout) as { SecretID: string; AccessorID: string };
  appSecret = t.SecretID;
  appAccessor = t.AccessorID;
  const tokenFile = join(c.root.path, "app.token");
  writeFileSync(tokenFile, `${appSecret}\n`);

  const put = await cairn(["kv", "put", addr, `-token-file=${tokenFile}`, "app/config", "v1"]);
  assert.equal(put.code, 0, put.stderr);
  const denied = await cairn(["kv", "put", addr, "other/config", "v1"], { env: { CONSUL_HTTP_TOKEN_FILE: tokenFile } });
  assert.equal(denied.code, 1);
  assert.match(denied.stderr, new RegExp(`403 \\(Permission denied: token with AccessorID '${appAccessor}' lacks permission 'key:write' on "other/config"\\)`));
  const unknown = await req(c.url(s, "/v1/kv/app/config"), { token: "00000000-1111-2222-3333-444444444444" });
  assert.deepEqual([unknown.status, unknown.text], [403, "ACL not found"]);

  // A client agent resolves the token through the servers and decides the same way.
  // /v1/agent/self (the launcher's readiness probe) needs agent:read: wait on the public status endpoint instead.
  clientDns = await freePort();
  client = await c.startClient("acl-client", { args: [`-config-file=${c.configFile}`, `-dns-port=${clientDns}`], ready: false });
  const via = client.http;
  await until(async () => (await req(`${via}/v1/status/leader`)).text.length > 2, "the client agent answers", { timeoutMs: 30_000, intervalMs: 200 });
  await until(async () => (await req(`${via}/v1/kv/app/from-client`, { method: "PUT", body: "x", token: appSecret })).status === 200, "a write through the client agent", { timeoutMs: 20_000, intervalMs: 200 });
  const no = await req(`${via}/v1/kv/elsewhere`, { method: "PUT", body: "x", token: appSecret });
  assert.deepEqual([no.status, no.text], [403, `Permission denied: token with AccessorID '${appAccessor}' lacks permission 'key:write' on "elsewhere"`]);
  const got = await req(c.url(s, "/v1/kv/app/from-client?raw"), { token: root });
  assert.equal(got.text, "x");
});

test("acl e2e: a client agent keeps its node with the agent token and a service with the token it was registered with", async () => {
  assert.ok(client, "the client agent runs");
  const s = c.servers[0]!;
  const via = client!.http;
  const policy = async (name: string, rules: string) => {
    const r = await req(c.url(s, "/v1/acl/policy"), { method: "PUT", token: root, body: JSON.stringify({ Name: name, Rules: rules }) });
    assert.equal(r.status, 200, r.text);
  };
  const token = async (policyName: string) => {
    const r = await req(c.url(s, "/v1/acl/token"), { method: "PUT", token: root, body: JSON.stringify({ Policies: [{ Name: policyName }] }) });
    assert.equal(r.status, 200, r.text);
    return (JSON.parse(r.text) as { SecretID: string }).SecretID;
  };
  // Consul's recommended agent token: write on its own node, read on services (no service:write).
  await policy("acl-client-agent", 'node "acl-client" { policy = "write" }\nservice_prefix "" { policy = "read" }');
  await policy("web-writer", 'service "web" { policy = "write" }');
  const agentToken = await token("acl-client-agent");
  const webToken = await token("web-writer");
  const set = await req(`${via}/v1/agent/token/agent`, { method: "PUT", token: root, body: JSON.stringify({ Token: agentToken }) });
  assert.equal(set.status, 200, set.text);
  const nodeIn = async () => (await req(c.url(s, "/v1/catalog/node/acl-client"), { token: root })).text;
  await until(async () => (await nodeIn()).includes('"Node":"acl-client"'), "the client's node in the catalog (agent token)", { timeoutMs: 30_000, intervalMs: 300 });
  const reg = await req(`${via}/v1/agent/service/register`, { method: "PUT", token: webToken, body: JSON.stringify({ Name: "web", Port: 8080 }) });
  assert.equal(reg.status, 200, reg.text);
  // The sync carries the web token: the agent token alone could not write the service.
  await until(async () => (await nodeIn()).includes('"Service":"web"'), "web in the catalog (the web token)", { timeoutMs: 30_000, intervalMs: 300 });
  const denied = await req(`${via}/v1/agent/service/register`, { method: "PUT", token: webToken, body: JSON.stringify({ Name: "db", Port: 5432 }) });
  assert.equal(denied.status, 403);
  assert.ok(!client!.proc.output().includes(webToken), "no secret in the agent's log");
});

test("acl e2e: anonymous lists come back filtered, with X-Consul-Results-Filtered-By-ACLs", async () => {
  assert.ok(root, "bootstrap ran");
  const s = c.servers[2]!;
  await req(c.url(s, "/v1/kv/public/motd"), { method: "PUT", body: "hello", token: root });
  await req(c.url(s, "/v1/kv/secret/db"), { method: "PUT", body: "pw", token: root });
  // Let anonymous read public/ (Consul: give the anonymous token a policy).
  const pol = await req(c.url(s, "/v1/acl/policy"), { method: "PUT", token: root, body: JSON.stringify({ Name: "public-read", Rules: 'key_prefix "public/" { policy = "read" }\nservice_prefix "" { policy = "read" }' }) });
  assert.equal(pol.status, 200, pol.text);
  const upd = await req(c.url(s, "/v1/acl/token/00000000-0000-0000-0000-000000000002"), { method: "PUT", token: root, body: JSON.stringify({ Policies: [{ Name: "public-read" }] }) });
  assert.equal(upd.status, 200, upd.text);
  await until(async () => (await req(c.url(s, "/v1/kv/?recurse"))).status === 200, "anonymous reads public/", { timeoutMs: 10_000, intervalMs: 200 });
  const anon = await req(c.url(s, "/v1/kv/?recurse"));
  assert.deepEqual((JSON.parse(anon.text) as { Key: string }[]).map((e) => e.Key), ["public/motd"]);
  assert.equal(anon.headers.get("x-consul-results-filtered-by-acls"), "true");
  const keys = await req(c.url(s, "/v1/kv/?keys"));
  assert.deepEqual(JSON.parse(keys.text), ["public/motd"]);
  assert.equal(keys.headers.get("x-consul-results-filtered-by-acls"), "true");
  const full = await req(c.url(s, "/v1/kv/?keys"), { token: root });
  assert.equal(full.headers.get("x-consul-results-filtered-by-acls"), null);
  assert.ok((JSON.parse(full.text) as string[]).includes("secret/db"));
  // Nodes: the anonymous token reads none of them.
  const nodes = await req(c.url(s, "/v1/catalog/nodes"));
  assert.deepEqual([nodes.status, nodes.text, nodes.headers.get("x-consul-results-filtered-by-acls")], [200, "[]", "true"]);
  const members = await req(c.url(s, "/v1/agent/members"));
  assert.deepEqual([members.text, members.headers.get("x-consul-results-filtered-by-acls")], ["[]", "true"]);
});

test("acl e2e: python-consul with a token", async () => {
  assert.ok(appSecret, "the app token was created");
  assert.ok(existsSync(python), `${python} is missing: install python3 and python3-consul`);
  const s = c.servers[0]!;
  const script = `
import sys, consul
c = consul.Consul(host=sys.argv[1], port=int(sys.argv[2]), token=sys.argv[3])
assert c.kv.put("app/py", "from python") is True
idx, v = c.kv.get("app/py")
assert v["Value"] == b"from python", v
try:
    c.kv.put("other/py", "x")
    raise SystemExit("write outside app/ was allowed")
except consul.ACLPermissionDenied as e:
    assert "lacks permission 'key:write'" in str(e), str(e)
anon = consul.Consul(host=sys.argv[1], port=int(sys.argv[2]))
try:
    anon.kv.get("app/py")
    raise SystemExit("anonymous read was allowed")
except consul.ACLPermissionDenied:
    pass
print("python-consul acl checks passed")
`;
  const r = await run(python, ["-c", script, s.addr, String(s.http), appSecret], { timeoutMs: 30_000 });
  assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /python-consul acl checks passed/);
});

test("acl e2e: roles, token update and clone with the CLI, in Consul's formats", async () => {
  assert.ok(appAccessor, "the app token was created");
  const s = c.servers[2]!;
  const addr = `-http-addr=${s.addr}:${s.http}`;
  const env = { CONSUL_HTTP_TOKEN: root };
  const ok = async (args: string[]) => {
    const r = await cairn(["acl", ...args, addr], { env });
    assert.equal(r.code, 0, `acl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const created = await ok(["role", "create", "-name=reader", "-description=reads services", "-policy-name=app", "-service-identity=web:dc1,dc2", "-node-identity=n1:dc1"]);
  assert.match(created, /^ID: +([0-9a-f-]{36})\nName: +reader\nDescription: +reads services\nPolicies:\n {3}[0-9a-f-]{36} - app\nService Identities:\n {3}web \(Datacenters: dc1, dc2\)\nNode Identities:\n {3}n1 \(Datacenter: dc1\)\n$/);
  const roleId = /^ID: +(\S+)/.exec(created)![1]!;
  assert.match(await ok(["role", "list"]), new RegExp(`^reader:\n {3}ID: +${roleId}\n {3}Description: +reads services\n {3}Policies:\n {6}[0-9a-f-]{36} - app\n`, "m"));
  const byName = JSON.parse(await ok(["role", "read", "-name=reader", "-format=json"])) as { ID: string; ServiceIdentities: unknown };
  assert.deepEqual([byName.ID, byName.ServiceIdentities], [roleId, [{ ServiceName: "web", Datacenters: ["dc1", "dc2"] }]]);
  const renamed = await ok(["role", "update", `-id=${roleId.slice(0, 8)}`, "-name=reader2", "-service-identity=db"]);
  assert.match(renamed, /^Name: +reader2$/m);
  assert.match(renamed, /^ {3}web \(Datacenters: dc1, dc2\)\n {3}db \(Datacenters: all\)$/m);
  const noMerge = await ok(["role", "update", `-id=${roleId}`, "-name=reader2", "-no-merge", "-node-identity=n2:dc1"]);
  assert.doesNotMatch(noMerge, /Policies:|Service Identities:/);
  const missing = await cairn(["acl", "role", "create", addr, "-name=empty"], { env });
  assert.deepEqual([missing.code, missing.stderr], [1, "Cannot create a role without specifying -policy-name, -policy-id, -service-identity, or -node-identity at least once\n"]);

  // token update: -description keeps the policies; -append-role-name adds; -policy-name with -append-policy-name is refused.
  const described = await ok(["token", "update", `-accessor-id=${appAccessor}`, "-description=app writer v2", "-append-role-name=reader2", "-format=json"]);
  const t = JSON.parse(described) as { Description: string; Policies: { Name: string }[]; Roles: { Name: string }[] };
  assert.deepEqual([t.Description, t.Policies.map((p) => p.Name), t.Roles.map((r) => r.Name)], ["app writer v2", ["app"], ["reader2"]]);
  const both = await cairn(["acl", "token", "update", addr, `-accessor-id=${appAccessor}`, "-policy-name=app", "-append-policy-name=app"], { env });
  assert.equal(both.code, 1);
  assert.match(both.stderr, /^Cannot combine the use of policy-id\/policy-name flags with append- variants\./);
  const clone = JSON.parse(await ok(["token", "clone", `-accessor-id=${appAccessor.slice(0, 8)}`, "-description=app clone", "-format=json"])) as { AccessorID: string; SecretID: string; Description: string; Policies: { Name: string }[] };
  assert.notEqual(clone.AccessorID, appAccessor);
  assert.deepEqual([clone.Description, clone.Policies.map((p) => p.Name)], ["app clone", ["app"]]);
  const viaClone = await req(c.url(s, "/v1/kv/app/cloned"), { method: "PUT", body: "c", token: clone.SecretID });
  assert.equal(viaClone.status, 200, viaClone.text);
  // Deleting a role a token holds leaves the token working through its own policy.
  assert.equal(await ok(["role", "delete", "-name=reader2"]), `Role "${roleId}" deleted successfully\n`);
  const gone = await cairn(["acl", "role", "read", addr, `-id=${roleId}`], { env });
  assert.equal(gone.code, 1);
  const still = await req(c.url(s, "/v1/kv/app/after-role"), { method: "PUT", body: "r", token: appSecret });
  assert.equal(still.status, 200, still.text);
  const after = JSON.parse(await ok(["token", "read", `-accessor-id=${appAccessor}`, "-format=json"])) as { Roles?: unknown[]; Policies: { Name: string }[] };
  assert.deepEqual([after.Roles ?? [], after.Policies.map((p) => p.Name)], [[], ["app"]]);
});

test("acl e2e: the npm consul package with a token: writes under app/, 403 elsewhere; anonymous listings filtered", async () => {
  assert.ok(appSecret, "the app token was created");
  const s = c.servers[1]!;
  const app = new Consul({ host: s.addr, port: s.http, defaults: { token: appSecret } });
  assert.equal(await app.kv.set("app/npm", "from npm"), true);
  assert.equal((await app.kv.get("app/npm"))?.Value, "from npm");
  // papi (under the package) keeps a long text/plain body out of the message: the status and the body say it.
  const refused = (e: unknown): boolean => {
    const err = e as { statusCode?: number; response?: { body?: unknown } };
    return err.statusCode === 403 && String(err.response?.body).includes(`token with AccessorID '${appAccessor}' lacks permission 'key:write' on "other/npm"`);
  };
  await assert.rejects(app.kv.set("other/npm", "x"), refused);
  // Anonymous (public/ read only, from the test above): keys and nodes come back filtered, not refused.
  const anon = new Consul({ host: s.addr, port: s.http });
  const keys = (await anon.kv.keys("")) as string[];
  assert.ok(keys.includes("public/motd"), JSON.stringify(keys));
  assert.ok(!keys.some((k) => k.startsWith("app/") || k.startsWith("secret/")), JSON.stringify(keys));
  assert.deepEqual(await anon.catalog.node.list(), []);
  const forbidden = (e: unknown): boolean => (e as { statusCode?: number }).statusCode === 403;
  await assert.rejects(anon.kv.get("app/npm"), forbidden);
  await assert.rejects(anon.kv.set("app/npm", "y"), forbidden);
  const all = (await new Consul({ host: s.addr, port: s.http, defaults: { token: root } }).kv.keys("")) as string[];
  assert.ok(all.includes("app/npm") && all.includes("secret/db"), JSON.stringify(all));
});

test("acl e2e: DNS answers are filtered by the agent's DNS token", async () => {
  assert.ok(client && root, "the client agent runs");
  const resolver = new Resolver({ timeout: 2_000, tries: 1 });
  resolver.setServers([`127.0.0.1:${clientDns}`]);
  // No DNS token: the anonymous token reads no node, so no instance of the consul service.
  await assert.rejects(resolver.resolve4("consul.service.consul"), (e: NodeJS.ErrnoException) => e.code === "ENOTFOUND");
  const set = await cairn(["acl", "set-agent-token", `-http-addr=${client.httpAddr}`, "dns", root], { env: { CONSUL_HTTP_TOKEN: root } });
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.stdout, 'ACL token "dns" set successfully\n');
  // The DNS server reuses an encoded answer for up to a second.
  const addrs = await until(() => resolver.resolve4("consul.service.consul"), "DNS answers with the DNS token", { timeoutMs: 5_000, intervalMs: 200 });
  assert.deepEqual(addrs, ["127.0.0.1"]); // three servers on one address: one record
});

test("acl e2e: the audit log records allowed and refused requests, and no secret appears in it or in the agent's log", async () => {
  const dir = join(c.root.path, "audit-dev");
  const secret = "5ec2e7a1-0000-4000-8000-00000000beef";
  const auditPath = join(dir, "audit", "audit.json");
  const cfg = join(c.root.path, "audit-dev.hcl");
  writeFileSync(cfg, `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens { initial_management = "${secret}" }\n}\naudit {\n  enabled = true\n  sink "file" {\n    type = "file"\n    format = "json"\n    path = "${auditPath}"\n    rotate_max_files = 3\n  }\n}\n`);
  const dev = await startDevAgent([`-config-file=${cfg}`, "-log-level=trace"]);
  try {
    await until(async () => (await req(`${dev.http}/v1/acl/token/self`, { token: secret })).status === 200, "the initial management token is stored", { timeoutMs: 10_000, intervalMs: 100 });
    const allowed = await req(`${dev.http}/v1/kv/audited?token=${secret}`, { method: "PUT", body: "v" });
    assert.equal(allowed.status, 200);
    const refused = await req(`${dev.http}/v1/kv/audited`, { method: "PUT", body: "v" });
    assert.equal(refused.status, 403);
    const unknown = await req(`${dev.http}/v1/kv/audited`, { headers: { Authorization: "Bearer 00000000-aaaa-bbbb-cccc-000000000000" } });
    assert.equal(unknown.status, 403);
    const self = await req(`${dev.http}/v1/acl/token/self`, { token: secret });
    const accessor = (JSON.parse(self.text) as { AccessorID: string }).AccessorID;
    const lines = await until(() => {
      const text = existsSync(auditPath) ? readFileSync(auditPath, "utf8") : "";
      const ls = text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { payload: { auth: { accessor_id: string }; request: { operation: string; endpoint: string; datacenter: string }; response: { status: string }; duration_ms: number } });
      return ls.filter((l) => l.payload.request.endpoint === "/v1/kv/audited").length >= 3 ? ls : undefined;
    }, "audit lines", { timeoutMs: 5_000, intervalMs: 100 });
    const kv = lines.filter((l) => l.payload.request.endpoint === "/v1/kv/audited").map((l) => [l.payload.request.operation, l.payload.response.status, l.payload.auth.accessor_id, l.payload.request.datacenter]);
    assert.deepEqual(kv, [
      ["PUT", "200", accessor, "dc1"],
      ["PUT", "403", "00000000-0000-0000-0000-000000000002", "dc1"],
      ["GET", "403", "", "dc1"],
    ]);
    assert.ok(lines.every((l) => typeof l.payload.duration_ms === "number"));
    const audit = readFileSync(auditPath, "utf8");
    assert.ok(!audit.includes(secret), "the audit log holds no secret");
    assert.ok(!audit.includes("00000000-aaaa-bbbb-cccc-000000000000"), "nor an unknown token");
    assert.ok(!dev.proc.output().includes(secret), "the agent's own log holds no secret");
  } finally {
    await dev.stop();
  }
});
