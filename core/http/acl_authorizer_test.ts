import assert from "node:assert/strict";
import { test } from "node:test";
import { AclNotFoundError, RpcError } from "../errors.ts";
import type { AclResolveReply } from "../rpc/methods.ts";
import { AclRouteAuthorizer, type DownPolicy } from "./acl_authorizer.ts";
import { Router, type AuditEntry } from "./router.ts";
import { redactToken } from "./serve_node.ts";
import { createRoutes } from "./routes.ts";
import { testBackends } from "./_test_env.ts";
import { jsonResponse, makeRequest } from "./types.ts";

function setup(o: { downPolicy?: DownPolicy; defaultToken?: string; enableKeyListPolicy?: boolean } = {}) {
  let now = 0;
  let down = false;
  const calls: string[] = [];
  const tokens: Record<string, AclResolveReply> = {
    app: { accessorId: "acc-app", rules: [`key_prefix "app/" { policy = "write" }`, `node_prefix "" { policy = "read" }`], defaultAllow: false },
    "": { accessorId: "00000000-0000-0000-0000-000000000002", rules: [], defaultAllow: false },
  };
  const authz = new AclRouteAuthorizer({
    resolve: (secret) => {
      calls.push(secret);
      if (down) return Promise.reject(new RpcError("connection refused"));
      const t = tokens[secret];
      return t ? Promise.resolve(t) : Promise.reject(new AclNotFoundError());
    },
    now: () => now,
    tokenTtlMs: 30_000,
    downPolicy: o.downPolicy ?? "extend-cache",
    enableKeyListPolicy: o.enableKeyListPolicy ?? false,
    defaultToken: () => o.defaultToken ?? "",
  });
  const router = new Router([
    { pattern: "/v1/kv/", methods: ["GET", "PUT"], handler: async () => jsonResponse(true), authz: (req, key) => ({ resource: "key", access: req.method === "GET" ? (req.query.has("recurse") ? "list" : "read") : "write", name: key }) },
    { pattern: "/v1/agent/members", methods: ["GET"], handler: async (req) => jsonResponse(req.acl ? req.acl.allowed("node", "read", "n1") : "none"), authz: { resource: "node", access: "list" } },
    { pattern: "/v1/status/leader", methods: ["GET"], handler: async () => jsonResponse(""), authz: { resource: "none" } },
  ], { authorizer: authz, defaultAclPolicy: "deny", defaultToken: () => o.defaultToken ?? "" });
  return { router, calls, tokens, advance: (ms: number) => { now += ms; }, setDown: (d: boolean) => { down = d; } };
}

const text = (r: { body: Uint8Array | string }) => (typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body));

test("acl edge: 403 with Consul's text, ACL not found, the default policy header on every answer", async () => {
  const { router } = setup();
  const ok = await router.handle(makeRequest("PUT", "/v1/kv/app/x", { headers: { "X-Consul-Token": "app" } }));
  assert.equal(ok.status, 200);
  assert.equal(ok.headers["X-Consul-Default-ACL-Policy"], "deny");
  const no = await router.handle(makeRequest("PUT", "/v1/kv/other", { headers: { Authorization: "Bearer app" } }));
  assert.deepEqual([no.status, text(no)], [403, `Permission denied: token with AccessorID 'acc-app' lacks permission 'key:write' on "other"`]);
  const anon = await router.handle(makeRequest("GET", "/v1/kv/app/x"));
  assert.deepEqual([anon.status, text(anon)], [403, `Permission denied: token with AccessorID '00000000-0000-0000-0000-000000000002' lacks permission 'key:read' on "app/x"`]);
  const bad = await router.handle(makeRequest("GET", "/v1/kv/app/x?token=nope"));
  assert.deepEqual([bad.status, text(bad), bad.headers["X-Consul-Default-ACL-Policy"]], [403, "ACL not found", "deny"]);
  assert.equal((await router.handle(makeRequest("GET", "/v1/status/leader"))).status, 200);
  // A listing is let through (the servers filter it); the handler gets what the token may do.
  assert.equal((await router.handle(makeRequest("GET", "/v1/kv/?recurse"))).status, 200);
  assert.equal(text(await router.handle(makeRequest("GET", "/v1/agent/members?token=app"))), "true");
});

test("acl edge: enable_key_list_policy makes a KV listing need list on the prefix", async () => {
  const { router } = setup({ enableKeyListPolicy: true });
  const r = await router.handle(makeRequest("GET", "/v1/kv/app/?recurse&token=app"));
  assert.equal(r.status, 200);
  const no = await router.handle(makeRequest("GET", "/v1/kv/?recurse&token=app"));
  assert.deepEqual([no.status, text(no)], [403, `Permission denied: token with AccessorID 'acc-app' lacks permission 'key:list'`]);
});

test("acl edge: the agent's default token stands in for a request without one", async () => {
  const { router } = setup({ defaultToken: "app" });
  assert.equal((await router.handle(makeRequest("PUT", "/v1/kv/app/x"))).status, 200);
});

test("acl edge: resolved tokens are kept for token_ttl; extend-cache keeps them while no server answers", async () => {
  const { router, calls, advance, setDown } = setup();
  const put = () => router.handle(makeRequest("PUT", "/v1/kv/app/x?token=app"));
  await put();
  await put();
  assert.deepEqual(calls, ["app"]);
  advance(30_001);
  setDown(true);
  assert.equal((await put()).status, 200, "extend-cache: the stale entry still decides");
  assert.deepEqual(calls, ["app", "app"]);
  // A token never seen while the servers are down: denied.
  const anon = await router.handle(makeRequest("GET", "/v1/kv/app/x"));
  assert.equal(anon.status, 403);
});

test("acl edge: down_policy allow and deny", async () => {
  for (const [policy, want] of [["allow", 200], ["deny", 403]] as const) {
    const { router, setDown } = setup({ downPolicy: policy });
    setDown(true);
    assert.equal((await router.handle(makeRequest("PUT", "/v1/kv/other?token=app"))).status, want, policy);
  }
});

test("audit: every answered request with its accessor, refusals included; URLs in logs hide ?token=", async () => {
  const entries: AuditEntry[] = [];
  let now = 0;
  const authz = new AclRouteAuthorizer({
    resolve: (secret) => (secret === "app" ? Promise.resolve({ accessorId: "acc-app", rules: [`key_prefix "app/" { policy = "write" }`], defaultAllow: false }) : Promise.reject(new AclNotFoundError())),
    now: () => now,
    tokenTtlMs: 1_000,
    downPolicy: "extend-cache",
    enableKeyListPolicy: false,
    defaultToken: () => "",
  });
  const router = new Router([
    { pattern: "/v1/kv/", methods: ["PUT"], handler: async () => { now += 5; return jsonResponse(true); }, authz: (_req, key) => ({ resource: "key", access: "write", name: key }) },
  ], { authorizer: authz, audit: { now: () => now, record: (e) => entries.push(e) } });
  await router.handle(makeRequest("PUT", "/v1/kv/app/x?token=app"));
  await router.handle(makeRequest("PUT", "/v1/kv/other?token=app"));
  await router.handle(makeRequest("PUT", "/v1/kv/app/x?token=nope"));
  assert.deepEqual(entries, [
    { method: "PUT", path: "/v1/kv/app/x", status: 200, durationMs: 5, accessorId: "acc-app" },
    { method: "PUT", path: "/v1/kv/other", status: 403, durationMs: 0, accessorId: "acc-app" },
    { method: "PUT", path: "/v1/kv/app/x", status: 403, durationMs: 0, accessorId: "" },
  ]);
  assert.equal(redactToken("/v1/kv/a?recurse&token=s3cr3t&dc=x"), "/v1/kv/a?recurse&token=<hidden>&dc=x");
  assert.equal(redactToken("/v1/kv/a?TOKEN=s3cr3t"), "/v1/kv/a?TOKEN=<hidden>");
});

test("acl endpoints: 401 ACL support disabled when ACLs are off", async () => {
  const router = createRoutes(testBackends());
  for (const [method, path] of [["PUT", "/v1/acl/bootstrap"], ["GET", "/v1/acl/tokens"], ["GET", "/v1/acl/token/self"], ["PUT", "/v1/acl/policy"], ["GET", "/v1/acl/replication"], ["PUT", "/v1/agent/token/default"]] as const) {
    const r = await router.handle(makeRequest(method, path, { body: method === "PUT" ? "{}" : undefined }));
    assert.deepEqual([r.status, text(r)], [401, "ACL support disabled"], `${method} ${path}`);
    assert.equal(r.headers["X-Consul-Default-ACL-Policy"], undefined);
  }
});

test("acl edge: an unknown token is not remembered, so a token created a moment later works at once", async () => {
  const { router, tokens } = setup();
  const get = () => router.handle(makeRequest("GET", "/v1/kv/app/x", { headers: { "x-consul-token": "late" } }));
  let r = await get();
  assert.equal(r.status, 403);
  assert.equal(text(r), "ACL not found");
  // The leader stores it (the initial management token, or one just created elsewhere).
  tokens.late = { accessorId: "acc-late", rules: [`key_prefix "app/" { policy = "read" }`], defaultAllow: false };
  r = await get();
  assert.equal(r.status, 200, text(r));
});

test("acl edge: the agent recovery token is answered here, with agent:write on this agent and node:read, servers down or not", async () => {
  const calls: string[] = [];
  let recovery = "rec-secret";
  const authz = new AclRouteAuthorizer({
    resolve: (secret) => {
      calls.push(secret);
      return Promise.reject(new RpcError("connection refused"));
    },
    now: () => 0,
    tokenTtlMs: 30_000,
    downPolicy: "deny",
    enableKeyListPolicy: false,
    defaultToken: () => "",
    agentRecoveryToken: () => recovery,
    nodeName: "n1",
  });
  const id = await authz.resolve("rec-secret");
  assert.equal(id.accessorId, "agent-recovery:n1");
  assert.equal(id.authz.allowed("agent", "write", "n1"), true);
  assert.equal(id.authz.allowed("agent", "write", "n2"), false);
  assert.equal(id.authz.allowed("node", "read", "any"), true);
  assert.equal(id.authz.allowed("node", "write", "n1"), false);
  assert.equal(id.authz.allowed("key", "read", "x"), false);
  assert.deepEqual(calls, [], "no server was asked");
  // Another secret goes to the servers (down: down_policy deny).
  const other = await authz.resolve("rec-secreT");
  assert.equal(other.authz.allowed("node", "read", "any"), false);
  assert.deepEqual(calls, ["rec-secreT"]);
  // Changed through PUT /v1/agent/token/agent_recovery: the old one is an ordinary secret now.
  recovery = "rec-2";
  await authz.resolve("rec-secret");
  assert.deepEqual(calls, ["rec-secreT", "rec-secret"]);
  assert.equal((await authz.resolve("rec-2")).accessorId, "agent-recovery:n1");
});
