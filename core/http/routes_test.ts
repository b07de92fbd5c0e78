import { test } from "node:test";
import assert from "node:assert/strict";
import { BadRequestError, CasConflictError, NotFoundError, RpcTimeoutError, TooLargeError } from "../errors.ts";
import { bodyJson, bodyText, testEnv } from "./_test_env.ts";
import { errorResponse, HttpError, statusForError } from "./http_error.ts";
import { cleanPath, Router } from "./routes.ts";
import { jsonResponse, makeRequest, textResponse } from "./types.ts";

test("routes: unknown path is 404 with a clear message", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/nope");
  assert.equal(r.status, 404);
  assert.equal(bodyText(r), 'Not found: no endpoint for "/v1/nope"');
});

test("routes: wrong method is 405 with Allow; OPTIONS answers Allow", async () => {
  const env = testEnv();
  const r = await env.req("DELETE", "/v1/status/leader");
  assert.equal(r.status, 405);
  assert.equal(bodyText(r), "method DELETE not allowed");
  assert.equal(r.headers["Allow"], "OPTIONS,GET");
  const o = await env.req("OPTIONS", "/v1/kv/x");
  assert.equal(o.status, 200);
  assert.equal(o.headers["Allow"], "OPTIONS,GET,PUT,DELETE");
});

test("routes: /v1/kv without the slash redirects like Go's ServeMux", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/kv?keys");
  assert.equal(r.status, 301);
  assert.equal(r.headers["Location"], "/v1/kv/?keys=");
});

test("routes: longest prefix wins, exact beats prefix, duplicates are refused", async () => {
  const mk = (name: string) => async () => jsonResponse(name);
  const router = new Router([
    { pattern: "/v1/a/", methods: ["GET"], handler: mk("a") },
    { pattern: "/v1/a/b/", methods: ["GET"], handler: mk("ab") },
    { pattern: "/v1/a/b/c", methods: ["GET"], handler: mk("abc") },
  ]);
  assert.equal(bodyText(await router.handle(makeRequest("GET", "/v1/a/x"))), '"a"');
  assert.equal(bodyText(await router.handle(makeRequest("GET", "/v1/a/b/x"))), '"ab"');
  assert.equal(bodyText(await router.handle(makeRequest("GET", "/v1/a/b/c"))), '"abc"');
  assert.throws(() => router.add({ pattern: "/v1/a/", methods: ["GET"], handler: mk("z") }), /registered twice/);
  assert.deepEqual(router.patterns(), ["/v1/a/", "/v1/a/b/", "/v1/a/b/c"]);
});

test("routes: a handler that throws becomes a 500 with its message, not a crash", async () => {
  const router = new Router([{ pattern: "/x", methods: ["GET"], handler: async () => { throw new TypeError("boom"); } }]);
  const r = await router.handle(makeRequest("GET", "/x"));
  assert.equal(r.status, 500);
  assert.equal(bodyText(r), "boom");
});

test("errors: codes map to Consul's status codes in one place", () => {
  const table: [unknown, number][] = [
    [new BadRequestError("b"), 400],
    [new NotFoundError("n"), 404],
    [new TooLargeError("t", 1), 413],
    [new CasConflictError("c"), 409],
    [new RpcTimeoutError("r"), 500],
    [new HttpError(429, "slow down"), 429],
    [new Error("x"), 500],
    ["string", 500],
  ];
  for (const [err, status] of table) assert.equal(statusForError(err), status, String(err));
  const r = errorResponse(new HttpError(405, "no", { headers: { Allow: "GET" } }));
  assert.equal(r.headers["Allow"], "GET");
  assert.equal(r.headers["Content-Type"], "text/plain; charset=utf-8");
});

test("status: leader and peers", async () => {
  const env = testEnv();
  const leader = await env.req("GET", "/v1/status/leader");
  assert.equal(leader.status, 200);
  assert.equal(bodyText(leader), '"127.0.0.1:8300"');
  assert.equal(leader.headers["Content-Type"], "application/json");
  env.rpc.leader = "";
  assert.equal(bodyText(await env.req("GET", "/v1/status/leader?dc=dc2")), '""');
  assert.deepEqual(env.rpc.lastCall()!.args, { datacenter: "dc2" });
  env.rpc.peers = ["10.0.0.1:8300", "10.0.0.2:8300"];
  assert.deepEqual(bodyJson(await env.req("GET", "/v1/status/peers")), ["10.0.0.1:8300", "10.0.0.2:8300"]);
  assert.match(bodyText(await env.req("GET", "/v1/status/peers?pretty")), /\n {4}"10\.0\.0\.1:8300"/);
});

test("agent/self: Config, Member, Meta, DebugConfig and Stats from AgentInfo", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/agent/self");
  assert.equal(r.status, 200);
  const self = bodyJson(r) as Record<string, Record<string, unknown>>;
  assert.deepEqual(
    { ...self.Config },
    {
      Datacenter: "dc1", PrimaryDatacenter: "dc1", NodeName: "node-a", NodeID: "5f7a3c1e-0d2b-4c8e-9a61-3b7f0e2d9c44",
      Server: true, Revision: "abc123", Version: "0.1.0", VersionPrerelease: "", VersionMetadata: "", BuildDate: "",
    },
  );
  assert.equal(self.Member!.Name, "node-a");
  assert.equal(self.Member!.Addr, "127.0.0.1");
  assert.equal(self.Member!.Port, 8301);
  assert.equal(self.Member!.Status, 1);
  assert.deepEqual(self.Meta, {});
  assert.deepEqual(self.Stats, {});
  assert.equal(self.DebugConfig!.NodeName, "node-a");
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
  const router = new Router([{ pattern: "/v1/kv/", methods: ["GET"], handler: () => Promise.resolve(textResponse(200, "kv")) }]);
  const r = router.lookup("PUT", "/v1/kv//a b", "raw&dc=dc1");
  assert.equal(r.kind, "response");
  const res = (r as { response: { status: number; headers: Record<string, string> } }).response;
  assert.equal(res.status, 301);
  assert.equal(res.headers.Location, "/v1/kv/a%20b?raw&dc=dc1");
  assert.equal(router.lookup("GET", "/v1/kv/a").kind, "route");
});
