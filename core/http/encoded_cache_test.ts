import assert from "node:assert/strict";
import { test } from "node:test";
import { encodeRows, encodedCacheStats, setEncodedCacheBudget, sharedListResponse } from "./encoded_cache.ts";
import { makeRequest } from "./types.ts";

const toJson = (r: { n: number }): unknown => ({ N: r.n, Text: "ü \u2028" });

function text(b: Buffer | string): string {
  return typeof b === "string" ? b : b.toString("utf8");
}

test("encoded cache: a frozen answer is encoded once per style, to the bytes JSON.stringify gives", () => {
  const rows = Object.freeze([Object.freeze({ n: 1 }), Object.freeze({ n: 2 })]);
  const hits = encodedCacheStats.hits;
  const a = encodeRows(rows, toJson, false);
  const b = encodeRows(rows, toJson, false);
  assert.equal(a, b, "the same bytes object");
  assert.equal(encodedCacheStats.hits, hits + 1);
  assert.equal(text(a), JSON.stringify(rows.map(toJson)));
  const p = encodeRows(rows, toJson, true);
  assert.equal(text(p), `${JSON.stringify(rows.map(toJson), null, 4)}\n`);
  assert.notEqual(text(p), text(a));
});

test("encoded cache: an array that is not frozen (filtered, sorted, translated, ACL-filtered) is encoded each time", () => {
  const rows = [{ n: 1 }];
  const hits = encodedCacheStats.hits;
  assert.equal(text(encodeRows(rows, toJson, false)), JSON.stringify(rows.map(toJson)));
  rows.push({ n: 2 });
  assert.equal(text(encodeRows(rows, toJson, false)), JSON.stringify(rows.map(toJson)));
  assert.equal(encodedCacheStats.hits, hits);
});

test("encoded cache: held bytes stay within the budget, least recently used dropped first", () => {
  const prev = setEncodedCacheBudget(0);
  try {
    setEncodedCacheBudget(40);
    const a = Object.freeze([Object.freeze({ n: 1 })]);
    const b = Object.freeze([Object.freeze({ n: 2 })]);
    const size = (encodeRows(a, toJson, false) as Buffer).length;
    assert.ok(size * 2 > 40 && size <= 40, `an answer is ${size} bytes`);
    const a1 = encodeRows(a, toJson, false);
    encodeRows(b, toJson, false);
    assert.ok(encodedCacheStats.heldBytes <= 40);
    const misses = encodedCacheStats.misses;
    assert.notEqual(encodeRows(a, toJson, false), a1, "a was dropped for b");
    assert.equal(encodedCacheStats.misses, misses + 1);
  } finally {
    setEncodedCacheBudget(prev);
  }
});

test("encoded cache: a list of the request's own (filtered, sorted) is spliced from the rows' bytes when it can, pretty-printed from toJson", () => {
  const rows = [{ n: 2 }, { n: 1 }];
  const toBytes = (r: { n: number }): Buffer => Buffer.from(JSON.stringify(toJson(r)));
  const meta = { index: 7, knownLeader: true, lastContactMs: 0, consistencyLevel: "leader" as const };
  const plain = sharedListResponse(makeRequest("GET", "/v1/health/service/web"), meta, rows, toJson, toBytes);
  assert.equal(text(plain.body as Buffer), JSON.stringify(rows.map(toJson)));
  assert.equal(plain.headers["Content-Type"], "application/json");
  assert.equal(plain.headers["X-Consul-Index"], "7");
  assert.equal(plain.sharedBody, undefined, "not shared: its gzipped form is not kept");
  const pretty = sharedListResponse(makeRequest("GET", "/v1/health/service/web?pretty"), meta, rows, toJson, toBytes);
  assert.equal(text(pretty.body as string), `${JSON.stringify(rows.map(toJson), null, 4)}\n`);
  assert.equal(text(sharedListResponse(makeRequest("GET", "/v1/health/service/web"), meta, [], toJson, toBytes).body as Buffer), "[]");
});
