import { test } from "node:test";
import assert from "node:assert/strict";
import { bodyJson, bodyText, testEnv } from "./_test_env.ts";

const b64 = (s: string): string => Buffer.from(s).toString("base64");

test("txn: set and get in one transaction, Consul's JSON both ways", async () => {
  const env = testEnv();
  const body = JSON.stringify([
    { KV: { Verb: "set", Key: "a", Value: b64("one"), Flags: 7, Index: 0, Session: "" } },
    { KV: { Verb: "set", Key: "b", Value: b64("two") } },
  ]);
  const r = await env.req("PUT", "/v1/txn", { body });
  assert.equal(r.status, 200, bodyText(r));
  assert.equal(r.headers["Content-Type"], "application/json");
  assert.equal(r.headers["X-Consul-Index"], undefined, "writes carry no read headers");
  assert.deepEqual(bodyJson(r), {
    Results: [
      { KV: { LockIndex: 0, Key: "a", Flags: 7, Value: null, CreateIndex: 2, ModifyIndex: 2 } },
      { KV: { LockIndex: 0, Key: "b", Flags: 0, Value: null, CreateIndex: 3, ModifyIndex: 3 } },
    ],
    Errors: null,
  });
  assert.deepEqual(env.rpc.lastCall("Txn.Apply")!.args, {
    ops: [
      { kv: { verb: "set", key: "a", value: new TextEncoder().encode("one"), flags: 7, index: 0 } },
      { kv: { verb: "set", key: "b", value: new TextEncoder().encode("two") } },
    ],
  });
  const get = await env.req("PUT", "/v1/txn?stale", { body: JSON.stringify([{ KV: { Verb: "get", Key: "a" } }, { KV: { Verb: "get-tree", Key: "" } }]) });
  assert.equal(get.status, 200);
  const out = bodyJson(get) as { Results: { KV: { Key: string; Value: string } }[] };
  assert.deepEqual(out.Results.map((x) => [x.KV.Key, x.KV.Value]), [["a", b64("one")], ["a", b64("one")], ["b", b64("two")]]);
  assert.equal(get.headers["X-Consul-Effective-Consistency"], "stale", "read-only txns answer like reads");
  assert.equal(get.headers["X-Consul-KnownLeader"], "true");
  assert.ok(Number(get.headers["X-Consul-Index"]) > 0);
});

test("txn: field names match case-insensitively, as Go's encoding/json", async () => {
  const env = testEnv();
  const r = await env.req("PUT", "/v1/txn", { body: JSON.stringify([{ kv: { verb: "set", key: "x", value: b64("v") } }]) });
  assert.equal(r.status, 200, bodyText(r));
  assert.equal(env.rpc.kv.get("x")?.key, "x");
});

test("txn: a failed check rolls back with 409 and Errors", async () => {
  const env = testEnv();
  await env.req("PUT", "/v1/kv/exists", { body: "v" });
  const body = JSON.stringify([
    { KV: { Verb: "set", Key: "new", Value: b64("n") } },
    { KV: { Verb: "check-not-exists", Key: "exists" } },
  ]);
  const r = await env.req("PUT", "/v1/txn", { body });
  assert.equal(r.status, 409);
  assert.equal(r.headers["Content-Type"], "application/json");
  assert.deepEqual(bodyJson(r), { Results: null, Errors: [{ OpIndex: 1, What: 'key "exists" exists' }] });
  assert.equal(env.rpc.kv.has("new"), false);
});

test("txn: every KV verb is accepted and passed through", async () => {
  const env = testEnv();
  const verbs = ["set", "cas", "get", "get-tree", "check-index", "check-not-exists", "delete", "delete-tree", "delete-cas", "lock", "unlock", "check-session"];
  for (const verb of verbs) {
    await env.req("PUT", "/v1/txn", { body: JSON.stringify([{ KV: { Verb: verb, Key: "k", Index: 3, Session: "s" } }]) });
    const call = env.rpc.lastCall("Txn.Apply");
    assert.deepEqual((call!.args as { ops: unknown[] }).ops, [{ kv: { verb, key: "k", index: 3, session: "s" } }], verb);
  }
});

test("txn: deletes only answer Results null", async () => {
  const env = testEnv();
  const r = await env.req("PUT", "/v1/txn", { body: JSON.stringify([{ KV: { Verb: "delete", Key: "nothing" } }]) });
  assert.equal(r.status, 200);
  assert.equal(bodyText(r), '{"Results":null,"Errors":null}');
});

test("txn: malformed bodies are 400s naming the op and field", async () => {
  const env = testEnv();
  const cases: [string, RegExp][] = [
    ["not json", /^Failed to parse body: .*JSON/],
    ['{"KV":{}}', /expected a JSON array of operations, got object/],
    ["[1]", /operation 0 must be an object/],
    ['[{"KV":{"Verb":"set","Key":"a"}},{"Node":{"Verb":"set"}}]', /operation 1\.Node\.Node must be an object, got undefined/],
    ['[{"Session":{"Verb":"delete"}}]', /operation 0: "Session" operations are not supported \(KV, Node, Service and Check are\)/],
    ['[{"KV":{"Verb":"get","Key":"a"},"Node":{"Verb":"get","Node":{"Node":"n"}}}]', /operation 0 has more than one operation \(KV, Node\)/],
    ['[{"Node":{"Verb":"lock","Node":{"Node":"n"}}}]', /operation 0\.Node\.Verb "lock" is not a Node verb/],
    ['[{"Service":{"Verb":"set","Service":{"Service":"web"}}}]', /operation 0\.Service\.Node is missing/],
    ['[{"Check":{"Verb":"set","Check":{"CheckID":"c"}}}]', /operation 0\.Check\.Check\.Node is missing/],
    ["[{}]", /operation 0 has no "KV", "Node", "Service" or "Check" object/],
    ['[{"KV":[]}]', /operation 0.KV must be an object/],
    ['[{"KV":{"Key":"a"}}]', /operation 0.KV.Verb is missing/],
    ['[{"KV":{"Verb":"explode","Key":"a"}}]', /operation 0.KV.Verb "explode" is not a KV verb/],
    ['[{"KV":{"Verb":"set","Key":"a","Value":"!!"}}]', /operation 0.KV.Value is not valid base64/],
    ['[{"KV":{"Verb":"set","Key":"a","Flags":"7"}}]', /operation 0.KV.Flags must be a non-negative integer, got "7"/],
    ['[{"KV":{"Verb":"set","Key":"a","Index":-1}}]', /operation 0.KV.Index must be a non-negative integer/],
    ['[{"KV":{"Verb":"set","Key":5}}]', /operation 0.KV.Key must be a string, got number/],
  ];
  for (const [body, re] of cases) {
    const r = await env.req("PUT", "/v1/txn", { body });
    assert.equal(r.status, 400, `${body}: ${bodyText(r)}`);
    assert.match(bodyText(r), re, body);
  }
  assert.equal(env.rpc.calls.length, 0);
});

test("txn: more than 128 ops is 413, exactly 128 is fine", async () => {
  const env = testEnv();
  const op = { KV: { Verb: "set", Key: "k", Value: b64("v") } };
  const r = await env.req("PUT", "/v1/txn", { body: JSON.stringify(Array(129).fill(op)) });
  assert.equal(r.status, 413);
  assert.equal(bodyText(r), "Transaction contains too many operations (129 > 128)");
  const ok = await env.req("PUT", "/v1/txn", { body: JSON.stringify(Array(128).fill(op)) });
  assert.equal(ok.status, 200);
});

test("txn: a value over the KV limit is 413 naming the key", async () => {
  const env = testEnv();
  const big = Buffer.alloc(512 * 1024 + 1).toString("base64");
  // The body itself is over 512 KiB too; check the parser directly via a smaller limit.
  const r = await env.req("PUT", "/v1/txn", { body: JSON.stringify([{ KV: { Verb: "set", Key: "big", Value: big } }]) });
  assert.equal(r.status, 413);
  const { parseTxnOps } = await import("./txn.ts");
  assert.throws(() => parseTxnOps(new TextEncoder().encode(JSON.stringify([{ KV: { Verb: "set", Key: "big", Value: b64("12345") } }])), { maxValueBytes: 4 }),
    /Value for key "big" is too large \(5 > 4 bytes\)/);
});

test("txn: only PUT", async () => {
  const env = testEnv();
  const r = await env.req("GET", "/v1/txn");
  assert.equal(r.status, 405);
  assert.equal(r.headers["Allow"], "OPTIONS,PUT");
});

test("txn: limits.txn_max_req_len sets the body limit (413 over it), in the handler and on the route", async () => {
  const { createRoutes } = await import("./routes.ts");
  const { testBackends } = await import("./_test_env.ts");
  const { makeRequest } = await import("./types.ts");
  const router = createRoutes(testBackends({ txnMaxRequestBytes: 200 }));
  const ops = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ KV: { Verb: "get", Key: `k${i}` } })));
  assert.ok(ops(2).length <= 200 && ops(10).length > 200);
  const small = await router.handle(makeRequest("PUT", "/v1/txn", { body: ops(2) }));
  assert.notEqual(small.status, 413, bodyText(small));
  const big = await router.handle(makeRequest("PUT", "/v1/txn", { body: ops(10) }));
  assert.equal(big.status, 413);
  const found = router.lookup("PUT", "/v1/txn");
  assert.equal(found.kind === "route" ? found.maxBodyBytes : 0, 200, "serve_node stops reading past the limit");
  const { txnHandler } = await import("./txn.ts");
  const handler = txnHandler({ rpc: testBackends().rpc, maxRequestBytes: 50 });
  await assert.rejects(handler(makeRequest("PUT", "/v1/txn", { body: ops(2) })), /too large: max size is 50 bytes \(txn_max_req_len\)/);
});
