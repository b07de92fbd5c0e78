import { test } from "node:test";
import assert from "node:assert/strict";
import { expectedConfirmations, remainingSuspicionTimeMs, Suspicion, suspicionTimeoutMs } from "./suspicion.ts";

test("suspicionTimeoutMs: mult * max(1, log10(n)) * interval", () => {
  const cases: [mult: number, n: number, intervalMs: number, want: number][] = [
    [4, 0, 1000, 4000],
    [4, 1, 1000, 4000],
    [4, 10, 1000, 4000],
    [4, 50, 1000, 6792],
    [4, 100, 1000, 8000],
    [4, 1000, 1000, 12000],
    [3, 10, 1000, 3000],
    [6, 10, 5000, 30000],
  ];
  for (const [mult, n, interval, want] of cases) {
    assert.equal(suspicionTimeoutMs(n, { suspicionMult: mult, probeIntervalMs: interval }), want, `mult=${mult} n=${n}`);
  }
});

test("remainingSuspicionTimeMs: memberlist table", () => {

  const cases: [n: number, k: number, elapsedMs: number, want: number][] = [
    [0, 3, 0, 30000],
    [1, 3, 2000, 14000],
    [2, 3, 3000, 4810],
    [3, 3, 4000, -2000],
    [4, 3, 5000, -3000],
    [5, 3, 10000, -8000],
  ];
  for (const [n, k, elapsed, want] of cases) {
    assert.equal(remainingSuspicionTimeMs(n, k, { elapsedMs: elapsed, minMs: 2000, maxMs: 30000 }), want, `n=${n} k=${k}`);
  }
});

test("expectedConfirmations: mult - 2, or 0 in clusters too small to confirm", () => {
  const cases: [mult: number, n: number, want: number][] = [[4, 1, 0], [4, 3, 0], [4, 4, 2], [4, 100, 2], [6, 5, 0], [6, 6, 4], [3, 3, 1], [2, 50, 0]];
  for (const [mult, n, want] of cases) assert.equal(expectedConfirmations(mult, n), want, `mult=${mult} n=${n}`);
});

test("Suspicion: starts at max, each new accuser shortens it, the accuser and repeats don't count", () => {
  const s = new Suspicion({ from: "a", k: 3, minMs: 2000, maxMs: 30000, startMs: 1000 });
  assert.equal(s.deadlineMs, 31000);
  assert.equal(s.confirm("a"), false);
  assert.equal(s.confirm("b"), true);
  assert.equal(s.deadlineMs, 1000 + 16000);
  assert.equal(s.confirm("b"), false);
  assert.equal(s.confirm("c"), true);
  assert.equal(s.deadlineMs, 1000 + 7810);
  assert.equal(s.confirm("d"), true);
  assert.equal(s.deadlineMs, 1000 + 2000);
  assert.equal(s.confirm("e"), false, "no more than k confirmations");
  assert.equal(s.confirmations, 3);
  assert.equal(s.isExpired(2999), false);
  assert.equal(s.isExpired(3000), true);
});

test("Suspicion: with k = 0 the minimum applies and confirmations are ignored", () => {
  const s = new Suspicion({ from: "a", k: 0, minMs: 4000, maxMs: 24000, startMs: 0 });
  assert.equal(s.deadlineMs, 4000);
  assert.equal(s.confirm("b"), false);
  assert.equal(s.deadlineMs, 4000);
});
