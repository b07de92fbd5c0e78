import { test } from "node:test";
import assert from "node:assert/strict";
import { BadRequestError } from "../errors.ts";
import type { QueryMeta, QueryOptions, Rpc } from "../rpc/mod.ts";
import { defaultQueryTimeMs, maxQueryTimeMs, parseGoDuration, parseQueryOptions, parseToken, setMetaHeaders, withMaxStale } from "./blocking.ts";
import { makeRequest } from "./types.ts";

test("parseGoDuration: Go duration syntax", () => {
  const table: [string, number | undefined][] = [
    ["20s", 20_000],
    ["120000ms", 120_000],
    ["4.98s", 4_980],
    ["1m30s", 90_000],
    ["1h", 3_600_000],
    ["0", 0],
    ["1.5m", 90_000],
    [".5s", 500],
    ["5.s", 5_000],
    ["1500us", 1.5],
    ["1500µs", 1.5],
    ["2500\u03bcs", 2.5], // Greek mu as well as the micro sign
    ["2000000ns", 2],
    ["-1s", -1_000],
    ["+2s", 2_000],
    ["1h2m3s4ms", 3_723_004],
    ["", undefined],
    ["20", undefined],
    ["s", undefined],
    [".s", undefined],
    ["10 s", undefined],
    ["10x", undefined],
    ["1e3s", undefined],
    ["abc", undefined],
  ];
  for (const [text, want] of table) assert.equal(parseGoDuration(text), want, `parseGoDuration(${JSON.stringify(text)})`);
});

test("parseQueryOptions: defaults, clamping and flags present with any value", () => {
  assert.deepEqual(parseQueryOptions(makeRequest("GET", "/v1/kv/a")), {
    minQueryIndex: 0, maxQueryTimeMs: defaultQueryTimeMs, allowStale: false, requireConsistent: false,
  });
  const o = parseQueryOptions(makeRequest("GET", "/v1/kv/a?index=42&wait=20s&stale=false&dc=dc2"));
  assert.deepEqual(o, { minQueryIndex: 42, maxQueryTimeMs: 20_000, allowStale: true, requireConsistent: false, datacenter: "dc2" });
  assert.equal(parseQueryOptions(makeRequest("GET", "/v1/kv/a?wait=1h")).maxQueryTimeMs, maxQueryTimeMs);
  assert.equal(parseQueryOptions(makeRequest("GET", "/v1/kv/a?wait=0")).maxQueryTimeMs, defaultQueryTimeMs);
  assert.equal(parseQueryOptions(makeRequest("GET", "/v1/kv/a?wait=-5s")).maxQueryTimeMs, defaultQueryTimeMs);
  assert.equal(parseQueryOptions(makeRequest("GET", "/v1/kv/a?wait=4.98s")).maxQueryTimeMs, 4_980);
  assert.equal(parseQueryOptions(makeRequest("GET", "/v1/kv/a?consistent")).requireConsistent, true);
  assert.equal(parseQueryOptions(makeRequest("GET", "/v1/kv/a?index=")).minQueryIndex, 0);
});

test("parseQueryOptions: bad values are 400s that name the parameter", () => {
  const cases: [string, RegExp][] = [
    ["wait=20", /Invalid wait time "20"/],
    ["wait=soon", /Invalid wait time "soon"/],
    ["index=abc", /Invalid index "abc"/],
    ["index=-1", /Invalid index "-1"/],
    ["index=1.5", /Invalid index "1.5"/],
    ["index=99999999999999999999", /Invalid index/],
    ["stale&consistent", /Cannot specify \?stale with \?consistent/],
    ["max_stale=10s&consistent", /Cannot specify \?stale with \?consistent/],
    ["max_stale=soon", /Invalid max_stale value "soon"/],
  ];
  for (const [qs, re] of cases) {
    assert.throws(() => parseQueryOptions(makeRequest("GET", `/v1/kv/a?${qs}`)), (err: unknown) => {
      assert.ok(err instanceof BadRequestError, `${qs}: ${String(err)}`);
      assert.match(err.message, re, qs);
      return true;
    });
  }
});

test("parseQueryOptions: the whole request context (max_stale implies stale; filter and near ride along)", () => {
  const o = parseQueryOptions(makeRequest("GET", `/v1/health/service/web?max_stale=3s&filter=${encodeURIComponent('Service.Port > 80')}&near=_agent&token=t`));
  assert.deepEqual(o, {
    minQueryIndex: 0, maxQueryTimeMs: defaultQueryTimeMs, allowStale: true, requireConsistent: false,
    maxStaleMs: 3_000, filter: "Service.Port > 80", near: "_agent", token: "t",
  });
  assert.equal(parseQueryOptions(makeRequest("GET", "/v1/kv/a?filter=%20")).filter, undefined, "a blank filter is no filter");
});

test("discovery_max_stale: catalog and health reads naming no consistency become bounded stale reads", () => {
  const ctx = (path: string) => parseQueryOptions({ ...makeRequest("GET", path), discoveryMaxStaleMs: 4_000 });
  for (const path of ["/v1/catalog/nodes", "/v1/health/service/web"]) {
    const o = ctx(path);
    assert.equal(o.allowStale, true, path);
    assert.equal(o.maxStaleMs, 4_000, path);
  }
  assert.equal(ctx("/v1/kv/a").allowStale, false, "KV is not service discovery");
  assert.equal(ctx("/v1/catalog/nodes?consistent").allowStale, false);
  assert.equal(ctx("/v1/catalog/nodes?leader").allowStale, false, "?leader asks for the default mode explicitly");
  assert.equal(ctx("/v1/catalog/nodes?max_stale=1s").maxStaleMs, 1_000, "the request's own max_stale wins");
});

test("withMaxStale: a stale answer older than max_stale is asked again of the leader, once; others pass through", async () => {
  const calls: QueryOptions[] = [];
  let lastContactMs = 0;
  const inner = {
    async call(_method: string, args: { query: QueryOptions }) {
      calls.push(args.query);
      const meta: QueryMeta = { index: 7, knownLeader: true, lastContactMs: args.query.allowStale ? lastContactMs : 0, consistencyLevel: args.query.allowStale ? "stale" : "leader" };
      return { entries: [], meta };
    },
  } as unknown as Rpc;
  const rpc = withMaxStale(inner);
  const query = (extra: Partial<QueryOptions>): QueryOptions => ({ minQueryIndex: 0, maxQueryTimeMs: 1000, allowStale: true, requireConsistent: false, ...extra });

  lastContactMs = 50;
  let r = await rpc.call("KVS.Get", { key: "a", query: query({ maxStaleMs: 100 }) });
  assert.equal(r.meta.consistencyLevel, "stale", "fresh enough");
  assert.equal(calls.length, 1);

  lastContactMs = 5_000;
  r = await rpc.call("KVS.Get", { key: "a", query: query({ maxStaleMs: 100 }) });
  assert.equal(r.meta.consistencyLevel, "leader", "too stale: the leader answers");
  assert.equal(calls.length, 3);
  assert.equal(calls[2]!.allowStale, false);

  r = await rpc.call("KVS.Get", { key: "a", query: query({}) });
  assert.equal(r.meta.consistencyLevel, "stale", "?stale without max_stale takes any age");
  assert.equal(calls.length, 4);
});

test("parseToken: ?token, then X-Consul-Token, then Authorization: Bearer", () => {
  assert.equal(parseToken(makeRequest("GET", "/v1/kv/a")), "");
  assert.equal(parseToken(makeRequest("GET", "/v1/kv/a", { headers: { Authorization: "Bearer abc" } })), "abc");
  assert.equal(parseToken(makeRequest("GET", "/v1/kv/a", { headers: { Authorization: "Basic xyz" } })), "");
  assert.equal(parseToken(makeRequest("GET", "/v1/kv/a", { headers: { "X-Consul-Token": "x", Authorization: "Bearer abc" } })), "x");
  assert.equal(parseToken(makeRequest("GET", "/v1/kv/a?token=q", { headers: { "X-Consul-Token": "x" } })), "q");
  assert.equal(parseQueryOptions(makeRequest("GET", "/v1/kv/a", { headers: { "X-Consul-Token": "t" } })).token, "t");
});

test("setMetaHeaders: X-Consul-* headers, never index 0", () => {
  assert.deepEqual(setMetaHeaders({}, { index: 0, knownLeader: false, lastContactMs: 12.7, consistencyLevel: "stale" }), {
    "X-Consul-Index": "1",
    "X-Consul-KnownLeader": "false",
    "X-Consul-LastContact": "12",
    "X-Consul-Effective-Consistency": "stale",
  });
  assert.equal(setMetaHeaders({}, { index: 77, knownLeader: true, lastContactMs: -3, consistencyLevel: "leader" })["X-Consul-LastContact"], "0");
});

test("default_query_time and max_query_time: the Router hands the agent's to every handler's request", async () => {
  const { Router } = await import("./router.ts");
  const seen: number[] = [];
  const route = { pattern: "/v1/x", methods: ["GET"], authz: { resource: "none" as const }, handler: async (req: Parameters<typeof parseQueryOptions>[0]) => {
    seen.push(parseQueryOptions(req).maxQueryTimeMs);
    return { status: 200, headers: {}, body: "" };
  } };
  const router = new Router([route as never], { queryTimes: { defaultMs: 10_000, maxMs: 30_000 } });
  for (const target of ["/v1/x?index=1", "/v1/x?index=1&wait=1h", "/v1/x?index=1&wait=20s", "/v1/x?index=1&wait=0"]) {
    assert.equal((await router.handle(makeRequest("GET", target))).status, 200, target);
  }
  assert.deepEqual(seen, [10_000, 30_000, 20_000, 10_000]);
  const plain = new Router([route as never]);
  seen.length = 0;
  await plain.handle(makeRequest("GET", "/v1/x?index=1&wait=1h"));
  await plain.handle(makeRequest("GET", "/v1/x?index=1"));
  assert.deepEqual(seen, [maxQueryTimeMs, defaultQueryTimeMs], "without: Consul's 10 and 5 minutes");
});
