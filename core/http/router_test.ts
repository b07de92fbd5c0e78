import assert from "node:assert/strict";
import { test } from "node:test";
import { Metrics } from "../metrics/metrics.ts";
import { bodyText } from "./_test_env.ts";
import { cleanPath, Router, type AuthzRequirement, type RouteAuthorizer } from "./router.ts";
import { jsonResponse, makeRequest, textResponse } from "./types.ts";

const none: AuthzRequirement = { resource: "none" };

test("router: longest prefix wins, exact beats prefix, duplicates are refused", async () => {
  const mk = (name: string) => async () => jsonResponse(name);
  const router = new Router([
    { pattern: "/v1/a/", methods: ["GET"], handler: mk("a"), authz: none },
    { pattern: "/v1/a/b/", methods: ["GET"], handler: mk("ab"), authz: none },
    { pattern: "/v1/a/b/c", methods: ["GET"], handler: mk("abc"), authz: none },
  ]);
  assert.equal(bodyText(await router.handle(makeRequest("GET", "/v1/a/x"))), '"a"');
  assert.equal(bodyText(await router.handle(makeRequest("GET", "/v1/a/b/x"))), '"ab"');
  assert.equal(bodyText(await router.handle(makeRequest("GET", "/v1/a/b/c"))), '"abc"');
  assert.throws(() => router.add({ pattern: "/v1/a/", methods: ["GET"], handler: mk("z"), authz: none }), /registered twice/);
  assert.deepEqual(router.patterns(), ["/v1/a/", "/v1/a/b/", "/v1/a/b/c"]);
});

test("router: a handler that throws becomes a 500 with its message, not a crash", async () => {
  const router = new Router([{ pattern: "/x", methods: ["GET"], handler: async () => { throw new TypeError("boom"); }, authz: none }]);
  const r = await router.handle(makeRequest("GET", "/x"));
  assert.equal(r.status, 500);
  assert.equal(bodyText(r), "boom");
});

test("cleanPath: Go's path.Clean with the trailing slash kept", () => {
  const table: Array<[string, string]> = [
    ["", "/"],
    ["/", "/"],
    ["/v1/kv/a", "/v1/kv/a"],
    ["/v1/kv/a/", "/v1/kv/a/"],
    ["/v1/kv//a", "/v1/kv/a"],
    ["//v1/kv/a", "/v1/kv/a"],
    ["/v1/kv/./a", "/v1/kv/a"],
    ["/v1/kv/a/.", "/v1/kv/a"],
    ["/v1/kv/b/../a", "/v1/kv/a"],
    ["/../v1/kv/a", "/v1/kv/a"],
    ["/v1/kv/a//", "/v1/kv/a/"],
    ["/v1/kv/.hidden", "/v1/kv/.hidden"],
    ["/v1/kv/a..b", "/v1/kv/a..b"],
    ["v1/kv", "/v1/kv"],
  ];
  for (const [input, want] of table) assert.equal(cleanPath(input), want, JSON.stringify(input));
});

test("router: an unclean path is answered 301 to the clean one, query kept, before any route or method check", async () => {
  const router = new Router([{ pattern: "/v1/kv/", methods: ["GET"], handler: () => Promise.resolve(textResponse(200, "kv")), authz: none }]);
  const r = router.lookup("PUT", "/v1/kv//a b", "raw&dc=dc1");
  assert.equal(r.kind, "response");
  const res = (r as { response: { status: number; headers: Record<string, string> } }).response;
  assert.equal(res.status, 301);
  assert.equal(res.headers.Location, "/v1/kv/a%20b?raw&dc=dc1");
  assert.equal(router.lookup("GET", "/v1/kv/a").kind, "route");
});

test("router: lookup never throws, not even on a lone surrogate in an unclean path (found by the HTTP fuzz test)", () => {
  const r = new Router([]);
  const found = r.lookup("GET", "/v1/agent/self/\ud800/.", "");
  assert.equal(found.kind, "response");
  if (found.kind === "response") {
    assert.equal(found.response.status, 301);
    assert.equal(found.response.headers.Location, "/v1/agent/self/%EF%BF%BD");
  }
});

test("router: the authorizer gets each request with its route's rule; a refusal is a 403 before the handler runs", async () => {
  const seen: Array<{ path: string; need: AuthzRequirement }> = [];
  let refuse = false;
  const authorizer: RouteAuthorizer = {
    authorize(req, need) {
      seen.push({ path: req.path, need });
      return refuse ? { allowed: false, reason: "token lacks permission 'key:write' on \"a\"" } : { allowed: true };
    },
  };
  let ran = 0;
  const handler = async () => {
    ran++;
    return textResponse(200, "ran");
  };
  let now = 0;
  const metrics = new Metrics({ now: () => now, wallNow: () => 0 });
  const router = new Router([
    { pattern: "/v1/kv/", methods: ["GET", "PUT"], handler, authz: (req, rest) => ({ resource: "key", access: req.method === "GET" ? "read" : "write", name: rest }) },
    { pattern: "/v1/status/leader", methods: ["GET"], handler, authz: none },
  ], { authorizer, metrics });

  assert.equal(bodyText(await router.handle(makeRequest("PUT", "/v1/kv/a/b"))), "ran");
  assert.equal(bodyText(await router.handle(makeRequest("GET", "/v1/status/leader"))), "ran");
  assert.deepEqual(seen, [
    { path: "/v1/kv/a/b", need: { resource: "key", access: "write", name: "a/b" } },
    { path: "/v1/status/leader", need: { resource: "none" } },
  ]);

  refuse = true;
  const denied = await router.handle(makeRequest("PUT", "/v1/kv/a"));
  assert.equal(denied.status, 403);
  assert.equal(bodyText(denied), "Permission denied: token lacks permission 'key:write' on \"a\"");
  assert.equal(ran, 2, "the handler did not run");
  // Refusals are timed under the route, as Consul's metrics wrapper does.
  assert.match(metrics.prometheus(), /^consul_api_http_count\{method="PUT",path="v1\.kv\._"\} 2$/m);

  // 404, 405 and OPTIONS are answered before any authorization.
  const before = seen.length;
  assert.equal((await router.handle(makeRequest("DELETE", "/v1/kv/a"))).status, 405);
  assert.equal((await router.handle(makeRequest("OPTIONS", "/v1/kv/a"))).status, 200);
  assert.equal((await router.handle(makeRequest("GET", "/v1/nope"))).status, 404);
  assert.equal(seen.length, before);
});

test("router: an asynchronous authorizer is awaited; its errors are answered like a handler's", async () => {
  let ran = 0;
  const route = { pattern: "/x", methods: ["GET"], handler: async () => (ran++, textResponse(200, "ok")), authz: { resource: "agent", access: "read" } } as const;
  const later = new Router([route], { authorizer: { authorize: async () => ({ allowed: false }) } });
  const r = await later.handle(makeRequest("GET", "/x"));
  assert.deepEqual([r.status, bodyText(r)], [403, "Permission denied"]);
  const broken = new Router([route], { authorizer: { authorize: () => Promise.reject(new Error("ACL resolution failed")) } });
  const e = await broken.handle(makeRequest("GET", "/x"));
  assert.deepEqual([e.status, bodyText(e)], [500, "ACL resolution failed"]);
  assert.equal(ran, 0);
  // The default lets everything through.
  assert.equal((await new Router([route]).handle(makeRequest("GET", "/x"))).status, 200);
  assert.equal(ran, 1);
});
