import { test } from "node:test";
import assert from "node:assert/strict";
import { NoLeaderError } from "../errors.ts";
import { bodyJson, bodyText, flush, testEnv } from "./_test_env.ts";

const readHeaders = ["X-Consul-Index", "X-Consul-KnownLeader", "X-Consul-LastContact", "X-Consul-Effective-Consistency", "Content-Type"];

function assertReadHeaders(h: Record<string, string>, what: string): void {
  for (const name of readHeaders) assert.ok(h[name] !== undefined, `${what}: header ${name} missing in ${JSON.stringify(h)}`);
  assert.notEqual(h["X-Consul-Index"], "0", what);
}

test("kv: put then get answers Consul's JSON with base64 value and read headers", async () => {
  const env = testEnv();
  const put = await env.req("PUT", "/v1/kv/app/config", { body: "hello" });
  assert.equal(put.status, 200);
  assert.equal(bodyText(put), "true");
  assert.equal(put.headers["Content-Type"], "application/json");
  const get = await env.req("GET", "/v1/kv/app/config");
  assert.equal(get.status, 200);
  assertReadHeaders(get.headers, "get");
  assert.equal(get.headers["Content-Type"], "application/json");
  assert.equal(get.headers["X-Consul-Effective-Consistency"], "leader");
  assert.equal(get.headers["X-Consul-KnownLeader"], "true");
  assert.equal(bodyText(get), '[{"LockIndex":0,"Key":"app/config","Flags":0,"Value":"aGVsbG8=","CreateIndex":2,"ModifyIndex":2}]');
  assert.equal(get.headers["X-Consul-Index"], "2");
});

test("kv: missing key is 404 with empty body and the read headers", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/kv/nope");
  assert.equal(r.status, 404);
  assert.equal(bodyText(r), "");
  assertReadHeaders(r.headers, "404");
  assert.equal(r.headers["X-Consul-Index"], "1");
});

test("kv: empty value is null, flags are kept, Session only when locked", async () => {
  const env = testEnv();
  await env.req("PUT", "/v1/kv/empty?flags=42");
  assert.deepEqual(bodyJson(await env.req("GET", "/v1/kv/empty")), [
    { LockIndex: 0, Key: "empty", Flags: 42, Value: null, CreateIndex: 2, ModifyIndex: 2 },
  ]);
  const acq = await env.req("PUT", "/v1/kv/lock?acquire=sess-1", { body: "me" });
  assert.equal(bodyText(acq), "true");
  assert.equal(env.rpc.lastCall("KVS.Apply")?.args && (env.rpc.lastCall("KVS.Apply")!.args as { op: string }).op, "lock");
  const text = bodyText(await env.req("GET", "/v1/kv/lock"));
  assert.equal(text, '[{"LockIndex":1,"Key":"lock","Flags":0,"Value":"bWU=","Session":"sess-1","CreateIndex":3,"ModifyIndex":3}]');
  assert.equal(bodyText(await env.req("PUT", "/v1/kv/lock?acquire=other")), "false");
  assert.equal(bodyText(await env.req("PUT", "/v1/kv/lock?release=sess-1")), "true");
  assert.equal((env.rpc.lastCall("KVS.Apply")!.args as { op: string; entry: { session: string } }).entry.session, "sess-1");
  assert.equal((bodyJson(await env.req("GET", "/v1/kv/lock")) as { Session?: string }[])[0]!.Session, undefined);
});

test("kv: ?raw answers the stored bytes as they are", async () => {
  const env = testEnv();
  const all = new Uint8Array(256).map((_, i) => i);
  await env.req("PUT", "/v1/kv/bin", { body: all });
  const r = await env.req("GET", "/v1/kv/bin?raw");
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, all);
  assertReadHeaders(r.headers, "raw");
  const j = bodyJson(await env.req("GET", "/v1/kv/bin")) as { Value: string }[];
  assert.equal(j[0]!.Value, Buffer.from(all).toString("base64"));
  // raw with recurse is a normal listing
  assert.ok(Array.isArray(bodyJson(await env.req("GET", "/v1/kv/bin?raw&recurse"))));
});

test("kv: recurse, keys and separator", async () => {
  const env = testEnv();
  for (const k of ["web/a", "web/b/1", "web/b/2", "db/x"]) await env.req("PUT", `/v1/kv/${k}`, { body: k });
  const rec = bodyJson(await env.req("GET", "/v1/kv/web/?recurse")) as { Key: string }[];
  assert.deepEqual(rec.map((e) => e.Key), ["web/a", "web/b/1", "web/b/2"]);
  const all = bodyJson(await env.req("GET", "/v1/kv/?recurse")) as { Key: string }[];
  assert.equal(all.length, 4);
  assert.deepEqual(bodyJson(await env.req("GET", "/v1/kv/web/?keys")), ["web/a", "web/b/1", "web/b/2"]);
  assert.deepEqual(bodyJson(await env.req("GET", "/v1/kv/web/?keys=True&separator=/")), ["web/a", "web/b/"]);
  assert.deepEqual(bodyJson(await env.req("GET", "/v1/kv/?keys&seperator=/")), ["db/", "web/"]);
  assert.deepEqual((env.rpc.lastCall("KVS.ListKeys")!.args as { separator: string }).separator, "/");
  const none = await env.req("GET", "/v1/kv/nothing/?keys");
  assert.equal(none.status, 404);
  assertReadHeaders(none.headers, "keys 404");
  const noneRec = await env.req("GET", "/v1/kv/nothing/?recurse");
  assert.equal(noneRec.status, 404);
  assert.equal(bodyText(noneRec), "");
});

test("kv: ?keys at the root of an empty store is [] with headers", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/kv/?keys");
  assert.equal(r.status, 200);
  assert.equal(bodyText(r), "[]");
  assertReadHeaders(r.headers, "root keys");
});

test("kv: cas put and cas delete", async () => {
  const env = testEnv();
  assert.equal(bodyText(await env.req("PUT", "/v1/kv/c?cas=0", { body: "1" })), "true");
  assert.equal(bodyText(await env.req("PUT", "/v1/kv/c?cas=0", { body: "2" })), "false");
  const idx = (bodyJson(await env.req("GET", "/v1/kv/c")) as { ModifyIndex: number }[])[0]!.ModifyIndex;
  assert.equal(bodyText(await env.req("PUT", `/v1/kv/c?cas=${idx + 5}`, { body: "3" })), "false");
  assert.equal(bodyText(await env.req("PUT", `/v1/kv/c?cas=${idx}`, { body: "4" })), "true");
  assert.deepEqual(env.rpc.lastCall("KVS.Apply")!.args, { op: "cas", entry: { key: "c", value: new TextEncoder().encode("4"), flags: 0, modifyIndex: idx } });
  assert.equal(bodyText(await env.req("DELETE", `/v1/kv/c?cas=${idx}`)), "false");
  const idx2 = (bodyJson(await env.req("GET", "/v1/kv/c")) as { ModifyIndex: number }[])[0]!.ModifyIndex;
  assert.equal(bodyText(await env.req("DELETE", `/v1/kv/c?cas=${idx2}`)), "true");
  assert.equal((await env.req("GET", "/v1/kv/c")).status, 404);
});

test("kv: delete and delete ?recurse", async () => {
  const env = testEnv();
  for (const k of ["t/a", "t/b", "u"]) await env.req("PUT", `/v1/kv/${k}`, { body: "x" });
  assert.equal(bodyText(await env.req("DELETE", "/v1/kv/u")), "true");
  assert.equal(bodyText(await env.req("DELETE", "/v1/kv/u")), "true");
  assert.equal(bodyText(await env.req("DELETE", "/v1/kv/t/?recurse")), "true");
  assert.deepEqual(env.rpc.lastCall("KVS.Apply")!.args, { op: "delete-tree", entry: { key: "t/" } });
  assert.equal(bodyText(await env.req("GET", "/v1/kv/?keys")), "[]");
  assert.equal(bodyText(await env.req("DELETE", "/v1/kv/?recurse")), "true");
});

test("kv: errors: missing key, bad flags, bad cas, conflicting flags, too large", async () => {
  const env = testEnv();
  const cases: [string, string, number, RegExp][] = [
    ["PUT", "/v1/kv/", 400, /^Missing key name$/],
    ["GET", "/v1/kv/", 400, /^Missing key name$/],
    ["DELETE", "/v1/kv/", 400, /^Missing key name$/],
    ["PUT", "/v1/kv/k?flags=abc", 400, /Invalid flags "abc"/],
    ["PUT", "/v1/kv/k?flags=-1", 400, /Invalid flags "-1"/],
    ["PUT", "/v1/kv/k?flags", 400, /Invalid flags ""/],
    ["PUT", "/v1/kv/k?cas=x", 400, /Invalid cas "x"/],
    ["DELETE", "/v1/kv/k?cas=x", 400, /Invalid cas "x"/],
    ["PUT", "/v1/kv/k?cas=1&acquire=s", 400, /Conflicting flags: "cas" cannot be combined with "acquire"/],
    ["PUT", "/v1/kv/k?cas=1&release=s", 400, /Conflicting flags: "cas" cannot be combined with "release"/],
    ["PUT", "/v1/kv/k?acquire=s&release=s", 400, /Conflicting flags/],
    ["PUT", "/v1/kv/k?acquire", 400, /Missing session ID/],
    ["GET", "/v1/kv/k?stale&consistent", 400, /Cannot specify \?stale with \?consistent/],
    ["GET", "/v1/kv/k?wait=forever&index=1", 400, /Invalid wait time "forever"/],
    ["GET", "/v1/kv/k?index=x", 400, /Invalid index "x"/],
    ["POST", "/v1/kv/k", 405, /^method POST not allowed$/],
  ];
  for (const [method, target, status, re] of cases) {
    const r = await env.req(method, target);
    assert.equal(r.status, status, `${method} ${target}: ${bodyText(r)}`);
    assert.match(bodyText(r), re, `${method} ${target}`);
    assert.match(r.headers["Content-Type"] ?? "", /^text\/plain/, `${method} ${target}`);
  }
  assert.equal(env.rpc.calls.length, 0, "no RPC for rejected requests");
  const big = await env.req("PUT", "/v1/kv/big", { body: new Uint8Array(512 * 1024 + 1) });
  assert.equal(big.status, 413);
  assert.match(bodyText(big), /524288 bytes/);
  const ok = await env.req("PUT", "/v1/kv/big", { body: new Uint8Array(512 * 1024) });
  assert.equal(ok.status, 200);
});

test("kv: stale and consistent reach the RPC and the header", async () => {
  const env = testEnv();
  await env.req("PUT", "/v1/kv/s", { body: "v" });
  const stale = await env.req("GET", "/v1/kv/s?stale");
  assert.equal(stale.headers["X-Consul-Effective-Consistency"], "stale");
  assert.equal((env.rpc.lastCall("KVS.Get")!.args as { query: { allowStale: boolean } }).query.allowStale, true);
  const cons = await env.req("GET", "/v1/kv/s?consistent=0");
  assert.equal(cons.headers["X-Consul-Effective-Consistency"], "consistent");
  assert.equal((env.rpc.lastCall("KVS.Get")!.args as { query: { requireConsistent: boolean } }).query.requireConsistent, true);
});

test("kv: dc and token are passed to reads and writes", async () => {
  const env = testEnv();
  await env.req("PUT", "/v1/kv/t?dc=dc2&token=secret", { body: "v" });
  assert.deepEqual(env.rpc.lastCall("KVS.Apply")!.args, { op: "set", entry: { key: "t", value: new TextEncoder().encode("v"), flags: 0 }, datacenter: "dc2", token: "secret" });
  await env.req("GET", "/v1/kv/t?dc=dc2", { headers: { Authorization: "Bearer tok" } });
  const q = (env.rpc.lastCall("KVS.Get")!.args as { query: { datacenter: string; token: string } }).query;
  assert.equal(q.datacenter, "dc2");
  assert.equal(q.token, "tok");
  await env.req("DELETE", "/v1/kv/t", { headers: { "X-Consul-Token": "x" } });
  assert.equal((env.rpc.lastCall("KVS.Apply")!.args as { token: string }).token, "x");
});

test("kv: keys are percent-decoded and may hold spaces and unicode", async () => {
  const env = testEnv();
  await env.req("PUT", "/v1/kv/a%20b/%C3%A9t%C3%A9%3F", { body: "v" });
  assert.deepEqual(bodyJson(await env.req("GET", "/v1/kv/?keys")), ["a b/été?"]);
});

test("kv: blocking get waits for a change past ?index, a write elsewhere does not wake it", async () => {
  const env = testEnv();
  await env.req("PUT", "/v1/kv/watched", { body: "1" });
  const first = await env.req("GET", "/v1/kv/watched");
  const index = Number(first.headers["X-Consul-Index"]);
  let answered: Awaited<ReturnType<typeof env.req>> | undefined;
  const pending = env.req("GET", `/v1/kv/watched?index=${index}&wait=60s`).then((r) => { answered = r; });
  await flush();
  assert.equal(answered, undefined);
  assert.equal((env.rpc.lastCall("KVS.Get")!.args as { query: { minQueryIndex: number; maxQueryTimeMs: number } }).query.maxQueryTimeMs, 60_000);
  await env.req("PUT", "/v1/kv/other", { body: "x" });
  await flush();
  assert.equal(answered, undefined, "a write to another key woke the watcher");
  await env.req("PUT", "/v1/kv/watched", { body: "2" });
  await pending;
  assert.equal(answered!.status, 200);
  assert.ok(Number(answered!.headers["X-Consul-Index"]) > index);
  assert.equal((bodyJson(answered!) as { Value: string }[])[0]!.Value, "Mg==");
});

test("kv: blocking get times out after ?wait with the same index", async () => {
  const env = testEnv();
  await env.req("PUT", "/v1/kv/w", { body: "1" });
  let answered: Awaited<ReturnType<typeof env.req>> | undefined;
  const pending = env.req("GET", "/v1/kv/w?index=2&wait=4.98s").then((r) => { answered = r; });
  await flush();
  env.clock.advance(4_979);
  await flush();
  assert.equal(answered, undefined);
  env.clock.advance(1);
  await pending;
  assert.equal(answered!.status, 200);
  assert.equal(answered!.headers["X-Consul-Index"], "2");
});

test("kv: an aborted request cancels its blocking query", async () => {
  const env = testEnv();
  await env.req("PUT", "/v1/kv/w", { body: "1" });
  const ac = new AbortController();
  const pending = env.req("GET", "/v1/kv/w?index=2", { signal: ac.signal });
  await flush();
  assert.equal(env.rpc.waiting(), 1);
  ac.abort();
  const r = await pending;
  assert.equal(env.rpc.waiting(), 0);
  assert.equal(r.status, 503);
});

test("kv: RPC errors map to Consul's status codes", async () => {
  const env = testEnv();
  env.rpc.failNext = new NoLeaderError();
  const r = await env.req("GET", "/v1/kv/x");
  assert.equal(r.status, 500);
  assert.equal(bodyText(r), "No cluster leader");
  env.rpc.failNext = new Error("disk on fire");
  const r2 = await env.req("PUT", "/v1/kv/x", { body: "v" });
  assert.equal(r2.status, 500);
  assert.equal(bodyText(r2), "disk on fire");
});

test("kv: a key with a control character is a 400 naming it and its byte position; nothing is written", async () => {
  const env = testEnv();
  for (const [method, target, pos] of [["PUT", "/v1/kv/app/%01x", 4], ["GET", "/v1/kv/caf%C3%A9%0A", 5], ["DELETE", "/v1/kv/a%7F", 1]] as const) {
    const r = await env.req(method, target, { body: "v" });
    assert.equal(r.status, 400, target);
    assert.match(bodyText(r), new RegExp(`^key contains invalid character '\\\\x[0-9a-f]{2}' at position ${pos}: control characters are not allowed in keys$`), target);
  }
  assert.equal(env.rpc.calls.filter((c) => c.method === "KVS.Apply").length, 0);
  // Tabs count too; printable punctuation and non-ASCII letters do not.
  assert.equal((await env.req("PUT", "/v1/kv/a%09b", { body: "v" })).status, 400);
  assert.equal((await env.req("PUT", "/v1/kv/caf%C3%A9/a:b c", { body: "v" })).status, 200);
});
