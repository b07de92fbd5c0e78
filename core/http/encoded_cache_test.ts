import assert from "node:assert/strict";
import { test } from "node:test";
import { encodeRows, encodedCacheStats, setEncodedCacheBudget } from "./encoded_cache.ts";

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
